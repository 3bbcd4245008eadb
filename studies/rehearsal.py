"""A rehearsal from the study page: scripted bots take cells by the study's policy and
play them through the console's own views (:mod:`studies.bots`), so a coordinator
can see the whole pipeline (assignment, play, grading, selection, figures, exports)
before a real participant arrives.  Bot attempts are flagged and left out of figures
and exports unless a filter asks for them.

The page only schedules :func:`run_rehearsal` (a Celery task taking ids, on commit);
each bot's assignment is audited with the reason "rehearsal".  Before scheduling it
checks that some bot can get a cell (:func:`plan`) and refuses with the reason when
none can.  Bots give no consent (a script cannot), so a study's consent text does not
stop them (:func:`studies.participants.needs_consent`).
"""
from __future__ import annotations

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import transaction

from . import bots
from .assignment import assign_next, quota_used
from .errors import StudyError
from .models import OPEN_STATUSES, Attempt, Participant, Study
from .permissions import Action, require

MAX_BOTS = 20


def check(actor, study: Study, count: int, skill: str) -> None:
    require(actor, study, Action.MANAGE)
    if not 1 <= count <= MAX_BOTS:
        raise StudyError(f"a rehearsal uses 1 to {MAX_BOTS} bots, not {count}")
    if skill not in bots.SKILLS:
        raise StudyError(f"unknown bot skill {skill!r}; choose one of {', '.join(bots.SKILLS)}")


def _room(study: Study) -> int:
    """Places left under the cells' quotas (each bot takes one)."""
    return sum(max(0, cell.quota - quota_used(cell)) for cell in study.cells.all())


def _free_bots(study: Study) -> list[Participant]:
    """The study's bots that can take a cell now: not withdrawn or returned, no open
    attempt, and some cell with room that they have not tried yet (oldest first)."""
    open_cells = {c.pk for c in study.cells.all() if quota_used(c) < c.quota}
    busy = set(Attempt.objects.filter(study=study, status__in=OPEN_STATUSES).values_list("participant_id", flat=True))
    out = []
    for bot in study.participants.filter(is_bot=True, withdrawn_at=None, returned_at=None).order_by("pk"):
        tried = set(Attempt.objects.filter(participant=bot, is_practice=False).values_list("cell_id", flat=True))
        if bot.pk not in busy and open_cells - tried:
            out.append(bot)
    return out


def plan(study: Study, count: int) -> int:
    """How many of ``count`` bots will play: one per place left under the quotas.  A
    rehearsal that could assign nothing is refused with the reason, so the page never
    says a rehearsal started when no bot would get a cell."""
    room = _room(study)
    if room == 0:
        quota = sum(c.quota for c in study.cells.all())
        raise StudyError(f"no bot can get a cell: every cell's quota is taken ({quota} of {quota} places). "
                         "Raise a cell's quota in the Cells panel (or invalidate a rehearsal attempt), "
                         "then run the rehearsal again.")
    return min(count, room)


def _new_bot(actor, study: Study) -> Participant:
    return bots.add_bot(actor, study, f"rehearsal-bot-{study.participants.filter(is_bot=True).count() + 1}")


def rehearse(actor, study: Study, count: int, skill: str) -> list[Attempt]:
    """Give up to ``count`` bots one cell each and play them; the attempts played.

    Bots that can take a cell now are reused (oldest first); new bots make up the rest.
    A reused bot that finds no cell left for it is replaced by a new one while places
    remain."""
    check(actor, study, count, skill)
    people = _free_bots(study)[:count]
    people += [_new_bot(actor, study) for _ in range(len(people), count)]
    played = []
    for bot in people:
        if _room(study) == 0:
            break
        attempt = assign_next(actor, study, participants=[bot], include_bots=True, reason="rehearsal")
        if attempt is None:
            attempt = assign_next(actor, study, participants=[_new_bot(actor, study)], include_bots=True,
                                  reason="rehearsal")
        if attempt is not None:
            played.append(bots.play(attempt, skill))
    return played


def schedule(actor, study: Study, count: int, skill: str) -> int:
    """Schedule the rehearsal (on commit); how many bots will play (see :func:`plan`)."""
    check(actor, study, count, skill)
    playing = plan(study, count)
    study_id, actor_id = study.pk, actor.pk
    transaction.on_commit(lambda: run_rehearsal.delay(study_id, actor_id, count, skill))
    return playing


@shared_task(acks_late=True)
def run_rehearsal(study_id: int, actor_id: int, count: int, skill: str) -> int:
    """Idempotent enough to rerun: bots with an open attempt are skipped, others take a new cell."""
    study = Study.objects.filter(pk=study_id).first()
    actor = get_user_model().objects.filter(pk=actor_id).first()
    if study is None or actor is None:
        return 0
    return len(rehearse(actor, study, count, skill))

"""A rehearsal from the study page: scripted bots take cells by the study's policy and
play them through the console's own views (:mod:`studies.bots`), so a coordinator
can see the whole pipeline (assignment, play, grading, selection, figures, exports)
before a real participant arrives.  Bot attempts are flagged and left out of figures
and exports unless a filter asks for them.

The page only schedules :func:`run_rehearsal` (a Celery task taking ids, on commit);
each bot's assignment is audited with the reason "rehearsal".
"""
from __future__ import annotations

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import transaction

from . import bots
from .assignment import assign_next
from .errors import StudyError
from .models import OPEN_STATUSES, Attempt, Study
from .permissions import Action, require

MAX_BOTS = 20


def check(actor, study: Study, count: int, skill: str) -> None:
    require(actor, study, Action.MANAGE)
    if not 1 <= count <= MAX_BOTS:
        raise StudyError(f"a rehearsal uses 1 to {MAX_BOTS} bots, not {count}")
    if skill not in bots.SKILLS:
        raise StudyError(f"unknown bot skill {skill!r}; choose one of {', '.join(bots.SKILLS)}")


def rehearse(actor, study: Study, count: int, skill: str) -> list[Attempt]:
    """Give up to ``count`` bots one cell each and play them; the attempts played."""
    check(actor, study, count, skill)
    people = list(study.participants.filter(is_bot=True, withdrawn_at=None).order_by("pk")[:count])
    for _ in range(len(people), count):
        people.append(bots.add_bot(actor, study, f"rehearsal-bot-{study.participants.filter(is_bot=True).count() + 1}"))
    played = []
    for bot in people:
        if Attempt.objects.filter(participant=bot, status__in=OPEN_STATUSES).exists():
            continue
        attempt = assign_next(actor, study, participants=[bot], include_bots=True, reason="rehearsal")
        if attempt is not None:
            played.append(bots.play(attempt, skill))
    return played


def schedule(actor, study: Study, count: int, skill: str) -> None:
    check(actor, study, count, skill)
    study_id, actor_id = study.pk, actor.pk
    transaction.on_commit(lambda: run_rehearsal.delay(study_id, actor_id, count, skill))


@shared_task(acks_late=True)
def run_rehearsal(study_id: int, actor_id: int, count: int, skill: str) -> int:
    """Idempotent enough to rerun: bots with an open attempt are skipped, others take a new cell."""
    study = Study.objects.filter(pk=study_id).first()
    actor = get_user_model().objects.filter(pk=actor_id).first()
    if study is None or actor is None:
        return 0
    return len(rehearse(actor, study, count, skill))

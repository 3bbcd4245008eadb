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

Two deliveries of one rehearsal can run at once (``acks_late`` with a broker that
redelivers after its visibility timeout); each attempt is played only under a claim on it
(:func:`studies.bots.claim`), so a delivery leaves an attempt another one is playing to
that one, and its audited outcome says how many it left.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerUnavailable

from shifts.models import Shift

from . import audit, bots
from .assignment import assign_next, quota_used
from .design import NO_NEW_ATTEMPT, check_calibration, refuse_closed
from .errors import StudyError
from .models import OPEN_STATUSES, Attempt, AuditAction, AuditEvent, Participant, Study
from .permissions import Action, require
from .wording import counted

logger = logging.getLogger(__name__)

MAX_BOTS = 20


def check(actor, study: Study, count: int, skill: str) -> None:
    require(actor, study, Action.MANAGE)
    if not 1 <= count <= MAX_BOTS:
        raise StudyError(f"a rehearsal uses 1 to {MAX_BOTS} bots, not {count}")
    if skill not in bots.SKILLS:
        raise StudyError(f"unknown bot skill {skill!r}; choose one of {', '.join(bots.SKILLS)}")
    refuse_closed(study, NO_NEW_ATTEMPT)  # refused on the page, and by a task queued before the study closed
    check_calibration(study)  # refused on the page, not later in the task


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


def _assigned_in(study: Study, rehearsal_id: str) -> list[Attempt]:
    """The attempts rehearsal ``rehearsal_id`` has assigned so far (its audited assignments)."""
    if not rehearsal_id:
        return []
    ids = AuditEvent.objects.filter(study=study, action=AuditAction.ASSIGNED,
                                    detail__rehearsal=rehearsal_id).values_list("attempt_id", flat=True)
    return list(Attempt.objects.filter(pk__in=list(ids)).select_related("shift", "participant").order_by("pk"))


@dataclass
class Run:
    """What one delivery of a rehearsal did: the attempts it played, and how many it left
    to another delivery that was playing them (it held their claim, or ended the shift)."""

    played: list[Attempt] = field(default_factory=list)
    skipped: int = 0

    def note(self, played: Attempt | None) -> None:
        if played is None:
            self.skipped += 1
        else:
            self.played.append(played)

    def skipped_text(self) -> str:
        if not self.skipped:
            return ""
        return f"; {self.skipped} skipped because another delivery of this rehearsal was playing them"


def _play_claimed(attempt: Attempt, held: bots.Claim, skill: str) -> Attempt | None:
    """Play ``attempt`` under claim ``held``, released however the play ends; None when
    another delivery ended its shift before this claim or took the claim over since."""
    try:
        attempt.shift.refresh_from_db()
        if attempt.shift.status == Shift.Status.ENDED:
            return None
        return bots.play(attempt, skill, held)
    except bots.ClaimLost:
        return None
    finally:
        bots.release(held)


def _play_unless_claimed(attempt: Attempt, skill: str) -> Attempt | None:
    held = bots.claim(attempt)
    return None if held is None else _play_claimed(attempt, held, skill)


def rehearse(actor, study: Study, count: int, skill: str, rehearsal_id: str = "", run: Run | None = None) -> Run:
    """Bring rehearsal ``rehearsal_id`` up to ``count`` bot attempts and play them; what
    this call did, recorded on ``run`` as it goes (so a caller sees it after a failure).

    Attempts the rehearsal already assigned count towards ``count`` (a rerun of the same
    rehearsal tops up, it never adds a second round); one of them whose shift has not
    ended (a run cut short, before or during play) is played to its end now.  Bots are
    taken one at a time, only while a place is left under the quotas: a bot that can take
    a cell now is reused (oldest first), otherwise one new bot is added, so no bot is made
    that gets no cell.  Each assignment recounts the rehearsal's attempts under a lock on
    the study's row, so two deliveries running at once assign ``count`` between them.
    Each attempt is played under a claim (a new one's is taken with its assignment), and
    one whose claim another delivery holds is left to it and counted as skipped."""
    run = Run() if run is None else run
    check(actor, study, count, skill)
    for unfinished in _assigned_in(study, rehearsal_id):
        if unfinished.shift.status != Shift.Status.ENDED:
            run.note(_play_unless_claimed(unfinished, skill))
    while True:
        with transaction.atomic():
            Study.objects.select_for_update().filter(pk=study.pk).first()
            if len(_assigned_in(study, rehearsal_id)) >= count or _room(study) == 0:
                break
            free = _free_bots(study)
            bot = free[0] if free else _new_bot(actor, study)
            attempt = assign_next(actor, study, participants=[bot], include_bots=True, reason="rehearsal",
                                  rehearsal=rehearsal_id or None)
            held = None if attempt is None else bots.claim(attempt)
        if attempt is None:  # cannot happen while a place is left (the bot has an untried open cell)
            break
        run.note(None if held is None else _play_claimed(attempt, held, skill))
    return run


def schedule(actor, study: Study, count: int, skill: str) -> int:
    """Schedule the rehearsal (on commit); how many bots will play (see :func:`plan`).

    The task gets the planned number and a rehearsal id, so a redelivered task tops the
    same rehearsal up to that number instead of playing it again."""
    check(actor, study, count, skill)
    playing = plan(study, count)
    study_id, actor_id, rehearsal_id = study.pk, actor.pk, uuid.uuid4().hex

    now = not transaction.get_connection().in_atomic_block  # the callback runs at once, within this call

    def send() -> None:
        try:
            run_rehearsal.delay(study_id, actor_id, playing, skill, rehearsal_id)
        except BrokerUnavailable as exc:  # the rehearsal panel says so, as a rehearsal that failed
            logger.error("rehearsal %s of study %s could not be sent to the task queue: %s", rehearsal_id, study_id,
                         exc)
            said = (f"the rehearsal could not be sent to the task queue ({type(exc).__name__}: {exc}), so no bot "
                    "played; rehearse again, and if it fails again, tell the site's operator (the broker may be down)")
            _record(study, actor, rehearsal_id, Run(), AuditAction.REHEARSAL_FAILED, said)
            if now:  # the caller (the page) says it, instead of "Rehearsal started"
                raise StudyError(said) from exc

    transaction.on_commit(send)
    return playing


def last_outcome(study: Study) -> AuditEvent | None:
    """How the study's latest rehearsal ended (its audit event), for the rehearsal panel."""
    return (AuditEvent.objects.filter(study=study, action__in=(AuditAction.REHEARSED, AuditAction.REHEARSAL_FAILED))
            .order_by("-created_at", "-id").first())


def _record(study: Study, actor, rehearsal_id: str, run: Run, action: AuditAction, reason: str,
            **detail: int) -> None:
    audit.record(study, actor, action, reason=f"{reason}{run.skipped_text()}", rehearsal=rehearsal_id or None,
                 skipped=run.skipped or None, **detail)


COME_BACK = 2  # times a delivery that skipped claimed attempts is run again after the lease


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def run_rehearsal(self, study_id: int, actor_id: int, count: int, skill: str, rehearsal_id: str = "") -> int:
    """Idempotent: a redelivered task (acks_late) counts what rehearsal ``rehearsal_id``
    already assigned and only tops it up to ``count`` (see :func:`rehearse`).  A pool
    process killed mid-rehearsal sends the message back (``reject_on_worker_lost``)
    rather than acknowledging it, which left the rehearsal with no recorded end.  The new
    delivery then finds the dead one's claim still running and skips its attempt, so on a
    worker a delivery that skipped some comes back (up to :data:`COME_BACK` times) once
    the claims it met can have lapsed, and plays whatever is still unfinished.

    Its end is audited either way (``rehearsed`` with the attempts played, or
    ``rehearsal_failed`` with the reason), so the study page can say what became of a
    rehearsal it only scheduled; a failure that is not the study's refusal is a bug, and
    is raised again after it is recorded."""
    study = Study.objects.filter(pk=study_id).first()
    actor = get_user_model().objects.filter(pk=actor_id).first()
    if study is None or actor is None:
        return 0
    run = Run()
    try:
        rehearse(actor, study, count, skill, rehearsal_id, run)
    except StudyError as refusal:
        _record(study, actor, rehearsal_id, run, AuditAction.REHEARSAL_FAILED, str(refusal))
        return 0
    except Exception as bug:
        _record(study, actor, rehearsal_id, run, AuditAction.REHEARSAL_FAILED,
                f"internal error ({type(bug).__name__}: {bug}); the server log has the traceback")
        raise
    request = self.request
    if request.retries and not run.played and not run.skipped:
        return 0  # came back to find the other delivery had finished: its outcome stands
    _record(study, actor, rehearsal_id, run, AuditAction.REHEARSED,
            f"{counted(len(run.played), 'rehearsal attempt')} played by {skill} bots", played=len(run.played))
    if run.skipped and not request.called_directly and not request.is_eager and request.retries < COME_BACK:
        raise self.retry(countdown=bots.LEASE.total_seconds() + 15)
    return len(run.played)

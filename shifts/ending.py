"""Ending a shift: settlement, grading, the timeline, and the deadline.

:func:`end_shift` stops the shift's live episode (settlement), grades it and stores the
score, the wall-clock accounting and the per-window timeline, all from that one
episode: the store is replayed at most once (only when this process has no live
episode of the shift), never twice.  Ending is idempotent.

The deadline is enforced by one action, :func:`end_if_due`: every action on a shift ("a
touched shift": a tool call, a pause or resume, the console's end, a study settling its
attempt) and the periodic sweep (:func:`enforce_deadlines`, run by Celery beat and
``manage.py enforce_deadlines``) all call it, under the shift's lock.  Page views only read:
they show a shift past its deadline as due (:func:`is_due`), and the console's page of such
a shift posts its end by itself.
"""
from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from environment.calibration import CalibrationError

from . import cache
from .clock import store_account
from .errors import ShiftNotActive, TaskUnavailable
from .events import announce
from .grading import grade_episode
from .models import RUNNING, Shift
from .timeline import series_of

logger = logging.getLogger(__name__)

DEADLINE_REASON = "deadline"
PARTICIPANT_REASON = "ended by the participant"
STORE_CLOSED = "store closed: "  # then the core's reason ("horizon reached")
TEAM_REASON = "ended by the study team"
# A study closes an unstarted shift with these when the participant leaves it: their own doing.
RETURNED_REASON = "the participant left the study (returned)"
WITHDREW_REASON = "the participant withdrew"


def shown_to_participant(reason: str) -> str:
    """Why a shift ended, as its participant is shown it: the shift's own reasons (the
    deadline, the participant's end, the store's close) and the participant's leaving the
    study as stored; any other (a study's: a platform fault, a forced end or an
    invalidation, each carrying the coordinator's note, which may name the task or seed) as
    :data:`TEAM_REASON` alone."""
    if (not reason or reason in (DEADLINE_REASON, PARTICIPANT_REASON, RETURNED_REASON, WITHDREW_REASON)
            or reason.startswith(STORE_CLOSED)):
        return reason
    return TEAM_REASON


def end_shift(shift: Shift, reason: str, now=None) -> Shift:
    """Settle, grade and close an open shift; an ended shift is returned as is."""
    with cache.lock(shift.pk):
        shift.refresh_from_db()
        if shift.status == Shift.Status.ENDED:
            return shift
        if not shift.is_open:
            raise ShiftNotActive("Only a started shift can be ended.")
        now = now or timezone.now()
        episode = cache.live_entry(shift).episode
        graded = grade_episode(episode, shift.task_id, shift.seed)  # stops the episode
        timeline = series_of(episode)  # already settled: the last point is the settled store
        with transaction.atomic():
            store_account(shift, now)
            pause_end = min(now, shift.deadline) if shift.deadline else now
            shift.pauses.filter(ended_at__isnull=True).update(ended_at=pause_end)
            shift.status = Shift.Status.ENDED
            shift.ended_at = now
            shift.timeline = timeline
            shift.end_reason = reason
            shift.score_composite = graded.composite
            shift.passed = graded.passed
            shift.score_components = graded.components
            shift.calibration_source = graded.source
            shift.calibration_hash = graded.digest
            shift.save()
            announce(shift.pk)
        cache.evict(shift.pk)
    return shift


def is_due(shift: Shift, now=None) -> bool:
    return shift.is_open and shift.past_deadline(now)


def end_if_due(shift: Shift, now=None) -> bool:
    """End an open (active or paused) shift past its deadline, settled as played; True if
    it ended now.  ``shift`` is brought up to date from the database either way."""
    now = now or timezone.now()
    with cache.lock(shift.pk):
        shift.refresh_from_db()
        if is_due(shift, now):
            end_shift(shift, DEADLINE_REASON, now=now)
            return True
    return False


def enforce_deadlines(now=None) -> list[int]:
    """End every open shift whose deadline has passed; the ids of those ended now.

    Needs no request and is idempotent: a shift already ended (by its participant, by
    another sweep, or by another process) is skipped.
    """
    now = now or timezone.now()
    due = Shift.objects.filter(status__in=RUNNING, deadline__lte=now)
    ended = []
    for shift in due.order_by("deadline", "pk"):
        try:
            if end_if_due(shift, now):
                ended.append(shift.pk)
        except TaskUnavailable as gone:  # this shift stays open; the sweep goes on to the next
            logger.error("deadline sweep: shift %s not ended: %s", shift.pk, gone.reason)
        except CalibrationError as exc:
            logger.error("deadline sweep: shift %s not ended: %s", shift.pk, exc)
    return ended

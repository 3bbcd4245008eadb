"""Recording a shift's outcome on its attempt: :func:`settle`, and the sweeps that use it.

An attempt's stored status is a record, written by these functions only (a write: jobs
and actions, never a page view; pages read the outcome through the shift).  The console
ends shifts without knowing about studies, so an attempt whose shift has ended stays
open in the record until it is settled here.  Assignment settles those first
(:func:`settle_ended`), so a person whose shift ended is never counted as busy.
"""
from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from shifts.ending import end_if_due
from shifts.errors import TaskUnavailable
from shifts.models import Shift

from . import audit
from .models import OPEN_STATUSES, SCORE_FIELDS, Attempt, AttemptStatus, AuditAction, Study, outcome_of

logger = logging.getLogger(__name__)


def settle(attempt: Attempt) -> Attempt:
    """Record the shift's outcome on the attempt (the deadline enforced first); returns the
    attempt as stored.  Idempotent; never changes an attempt that is no longer open."""
    try:
        end_if_due(attempt.shift)
    except TaskUnavailable as gone:  # it cannot be ended here: the record stays as it is, the sweep goes on
        logger.error("attempt %s: its shift %s is past its deadline but cannot be ended: %s", attempt.pk,
                     attempt.shift.pk, gone.reason)
    with transaction.atomic():
        locked = Attempt.objects.select_for_update().select_related("shift", "study").get(pk=attempt.pk)
        if locked.status not in OPEN_STATUSES:
            return locked
        outcome = outcome_of(locked)
        if outcome.status == locked.status and not outcome.is_completed and outcome.status != AttemptStatus.INVALID:
            return locked
        if outcome.status == AttemptStatus.ASSIGNED:
            return locked
        locked.status = outcome.status
        locked.release = outcome.release
        if outcome.composite is not None:
            locked.end_reason = outcome.end_reason
            locked.completed_at = outcome.completed_at
            locked.calibration_hash = outcome.calibration_hash
            locked.composite = outcome.composite
            locked.passed = outcome.passed
            for name in SCORE_FIELDS:
                setattr(locked, name, outcome.components[name])
        locked.save()
        if outcome.status == AttemptStatus.INVALID:
            audit.record(locked.study, None, AuditAction.CALIBRATION_MISMATCH, attempt=locked,
                         reason=locked.end_reason)
    return locked


def settle_study(study: Study) -> None:
    """:func:`settle` every open attempt of ``study`` (a write: jobs and actions only)."""
    for attempt in Attempt.objects.filter(study=study, status__in=OPEN_STATUSES).select_related("shift"):
        settle(attempt)


def settle_ended(attempts: QuerySet[Attempt]) -> None:
    """:func:`settle` those of ``attempts`` still open in the record whose shift has ended
    or is past its deadline (the others' record is current)."""
    ended = ~Q(shift__status__in=(Shift.Status.ASSIGNED, Shift.Status.ACTIVE, Shift.Status.PAUSED))
    due = Q(shift__deadline__lte=timezone.now())
    for attempt in attempts.filter(status__in=OPEN_STATUSES).filter(ended | due).select_related("shift"):
        settle(attempt)

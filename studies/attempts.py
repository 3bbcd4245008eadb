"""An attempt's life after assignment: synchronising with its shift, retries,
reassignments, deadline changes, forced ends, invalidation and selection.

The console owns a shift's play and grading; an attempt mirrors the outcome when it
is synchronised (:func:`sync`), which every study page and export does first (the
console has no hook into the studies app, and signals are not used).  An attempt
graded with a calibration whose hash differs from the study's is marked invalid.

Every coordinator action needs a reason and writes one audit event.
"""
from __future__ import annotations

from decimal import Decimal

from django.db import transaction
from django.utils import timezone

import environment
from console.models import Shift
from console.services import end_shift, enforce_deadline, move_deadline

from . import audit
from .assignment import abandon_unstarted, create_attempt
from .errors import StudyError
from .models import (COMPLETED_STATUSES, OPEN_STATUSES, Attempt, AttemptKind, AttemptStatus, AuditAction,
                     Participant, SelectionRule, Study)
from .permissions import Action, require

DEADLINE_REASON = "deadline"  # console.services.DEADLINE_REASON
RUNNING = (Shift.Status.ACTIVE, "paused")  # started and not ended: the deadline runs
MAX_DEADLINE_CHANGE_MINUTES = 12 * 60
SCORE_FIELDS = {"business": "business", "reliability": "reliability", "on_time_rate": "on_time_rate",
                "return_handled_rate": "return_handled_rate", "continuity": "continuity"}


def _dec(value) -> Decimal | None:
    return None if value in (None, "") else Decimal(str(value))


def _reason(reason: str, what: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise StudyError(f"a reason is required to {what}")
    return reason


def sync(attempt: Attempt) -> Attempt:
    """Bring an attempt up to date with its shift (deadline enforced first)."""
    shift = attempt.shift
    if shift.status in RUNNING:
        enforce_deadline(shift)
    shift.refresh_from_db()
    if attempt.status in (AttemptStatus.INVALID, AttemptStatus.ABANDONED):
        return attempt
    if shift.status == Shift.Status.ENDED and shift.score_composite is not None:
        if attempt.is_completed:
            return attempt
        attempt.status = AttemptStatus.TIMED_OUT if shift.end_reason == DEADLINE_REASON else AttemptStatus.SUBMITTED
        attempt.end_reason = shift.end_reason
        attempt.completed_at = shift.ended_at
        attempt.release = shift.release or environment.__version__
        attempt.calibration_hash = shift.calibration_hash
        attempt.composite = shift.score_composite
        components = shift.score_components or {}
        for source, target in SCORE_FIELDS.items():
            setattr(attempt, target, _dec(components.get(source)))
        threshold = _dec(components.get("threshold"))
        attempt.passed = shift.passed if threshold is None else attempt.composite >= threshold
        if attempt.calibration_hash != attempt.study.calibration_hash:
            attempt.status = AttemptStatus.INVALID
            attempt.end_reason = (f"graded with calibration {attempt.calibration_hash or '(none)'}, "
                                  f"not the study's {attempt.study.calibration_hash}")
            audit.record(attempt.study, None, AuditAction.CALIBRATION_MISMATCH, attempt=attempt,
                         reason=attempt.end_reason)
        attempt.save()
    elif shift.status == Shift.Status.ACTIVE and attempt.status != AttemptStatus.ACTIVE:
        attempt.status = AttemptStatus.ACTIVE
        attempt.release = shift.release or environment.__version__
        attempt.save(update_fields=["status", "release"])
    elif shift.status == "paused" and attempt.status != AttemptStatus.PAUSED:  # when the console pauses
        attempt.status = AttemptStatus.PAUSED
        attempt.save(update_fields=["status"])
    return attempt


def sync_study(study: Study) -> None:
    for attempt in (Attempt.objects.filter(study=study, status__in=OPEN_STATUSES)
                    .select_related("shift", "study", "participant", "cell")):
        sync(attempt)


def _managed(actor, attempt: Attempt) -> Attempt:
    require(actor, attempt.study, Action.MANAGE)
    return sync(attempt)


def grant_coached_retry(actor, attempt: Attempt, note: str) -> Attempt:
    """A new attempt on the same cell for the same person, coached by ``actor``."""
    attempt = _managed(actor, attempt)
    note = _reason(note, "grant a coached retry")
    if not attempt.is_completed:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is "
                         f"{attempt.get_status_display().lower()}; only a completed attempt can be retried")
    with transaction.atomic():
        retry = create_attempt(actor, attempt.participant, attempt.cell, kind=AttemptKind.COACHED_RETRY,
                               replaces=attempt, coach=actor, note=note)
        audit.record(attempt.study, actor, AuditAction.RETRY, reason=note, attempt=retry, replaces=attempt.pk)
    return retry


def reassign(actor, attempt: Attempt, to: Participant, reason: str) -> Attempt:
    """After a platform fault: flag the attempt as infrastructure's fault and give the cell to someone else."""
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "reassign an attempt")
    if to.pk == attempt.participant_id:
        raise StudyError("a reassignment goes to another participant; use a coached retry for the same person")
    if attempt.status == AttemptStatus.INVALID:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is invalid; it cannot be reassigned")
    with transaction.atomic():
        if attempt.shift.status in RUNNING:
            end_shift(attempt.shift, f"platform fault: {reason}")
            attempt = sync(attempt)
            attempt.status = AttemptStatus.ABANDONED
            attempt.is_selected = False
        elif attempt.shift.status == Shift.Status.ASSIGNED:
            abandon_unstarted(attempt, f"platform fault: {reason}")
        attempt.platform_fault = True
        attempt.save()
        new = create_attempt(actor, to, attempt.cell, kind=AttemptKind.REASSIGNMENT, replaces=attempt)
        audit.record(attempt.study, actor, AuditAction.REASSIGNED, reason=reason, attempt=new,
                     replaces=attempt.pk, from_participant=attempt.participant.label)
    return new


def extend_deadline(actor, attempt: Attempt, minutes: int, reason: str) -> Attempt:
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "change a deadline")
    if minutes == 0 or abs(minutes) > MAX_DEADLINE_CHANGE_MINUTES:
        raise StudyError(f"a deadline change is between 1 and {MAX_DEADLINE_CHANGE_MINUTES} minutes "
                         f"either way, not {minutes}")
    shift = attempt.shift
    if shift.status not in RUNNING or shift.deadline is None:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is not running; "
                         "only a running shift has a deadline to change")
    old = shift.deadline
    with transaction.atomic():
        move_deadline(shift, minutes)
        audit.record(attempt.study, actor, AuditAction.DEADLINE_CHANGED, reason=reason, attempt=attempt,
                     old=old.isoformat(), new=shift.deadline.isoformat(), minutes=minutes)
    return attempt


def force_end(actor, attempt: Attempt, reason: str) -> Attempt:
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "end a shift")
    if not attempt.is_open:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is already "
                         f"{attempt.get_status_display().lower()}")
    if attempt.shift.status in RUNNING:
        end_shift(attempt.shift, f"ended by the coordinator: {reason}")
        attempt = sync(attempt)
    else:
        abandon_unstarted(attempt, f"ended by the coordinator before it started: {reason}")
    audit.record(attempt.study, actor, AuditAction.FORCE_ENDED, reason=reason, attempt=attempt)
    return attempt


def invalidate(actor, attempt: Attempt, reason: str) -> Attempt:
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "invalidate an attempt")
    if attempt.status == AttemptStatus.INVALID:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is already invalid")
    with transaction.atomic():
        if attempt.shift.status in RUNNING:
            end_shift(attempt.shift, f"invalidated: {reason}")
            attempt = sync(attempt)
        elif attempt.shift.status == Shift.Status.ASSIGNED:
            abandon_unstarted(attempt, f"invalidated: {reason}")
        attempt.status = AttemptStatus.INVALID
        attempt.end_reason = f"invalidated: {reason}"
        attempt.is_selected = False
        attempt.save()
        audit.record(attempt.study, actor, AuditAction.INVALIDATED, reason=reason, attempt=attempt)
    return attempt


def select(actor, attempt: Attempt, reason: str = "", rule: str = SelectionRule.MANUAL, *,
           include_bots: bool = False) -> Attempt:
    """Make ``attempt`` its cell's selected attempt (the previous selection, if any, is dropped)."""
    require(actor, attempt.study, Action.SELECT)
    attempt = sync(attempt)
    if rule == SelectionRule.MANUAL:
        reason = _reason(reason, "select an attempt by hand")
    if not attempt.is_completed:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is "
                         f"{attempt.get_status_display().lower()}; only a completed attempt can be selected")
    if attempt.is_practice or (attempt.is_bot and not include_bots):
        raise StudyError(f"a {'practice' if attempt.is_practice else 'bot'} attempt cannot be selected: "
                         "selected attempts are the human reference")
    with transaction.atomic():
        previous = Attempt.objects.filter(cell=attempt.cell, is_selected=True).exclude(pk=attempt.pk).first()
        if previous is not None:
            previous.is_selected = False
            previous.save(update_fields=["is_selected"])
        attempt.is_selected = True
        attempt.selection_rule = rule
        attempt.selected_by = actor
        attempt.selected_at = timezone.now()
        attempt.save(update_fields=["is_selected", "selection_rule", "selected_by", "selected_at"])
        audit.record(attempt.study, actor, AuditAction.SELECTED, reason=reason, attempt=attempt, rule=rule,
                     previous=previous.pk if previous else None)
    return attempt


def candidates(cell, include_bots: bool = False) -> list[Attempt]:
    """A cell's attempts that may be selected, earliest completion first (bots only in a rehearsal)."""
    bots = {} if include_bots else {"is_bot": False}
    return list(cell.attempts.filter(status__in=COMPLETED_STATUSES, is_practice=False, **bots)
                .order_by("completed_at", "number"))


def select_by_rule(actor, study: Study, rule: str, reason: str = "", *, include_bots: bool = False) -> list[Attempt]:
    """Select one attempt in every cell that has none yet, by ``rule`` (latest or earliest completed).

    The latest rule skips attempts flagged as a platform fault when the cell has another.
    """
    require(actor, study, Action.SELECT)
    if rule not in (SelectionRule.LATEST, SelectionRule.EARLIEST):
        raise StudyError(f"unknown selection rule {rule!r}; choose latest or earliest")
    sync_study(study)
    chosen = []
    for cell in study.cells.all():
        if cell.attempts.filter(is_selected=True).exists():
            continue
        pool = candidates(cell, include_bots)
        clean = [a for a in pool if not a.platform_fault] or pool
        if clean:
            pick = clean[-1] if rule == SelectionRule.LATEST else clean[0]
            chosen.append(select(actor, pick, reason or f"rule: {rule}", rule=rule, include_bots=include_bots))
    return chosen


def completion_code_for(user, attempt: Attempt) -> str | None:
    """The participant's completion code, once the shift's score is committed (else None)."""
    if attempt.participant.user_id != user.pk:
        raise StudyError("only the participant can see their completion code")
    attempt = sync(attempt)
    committed = Shift.objects.filter(pk=attempt.shift_id, status=Shift.Status.ENDED,
                                     score_composite__isnull=False).exists()
    return attempt.completion_code if committed and attempt.is_completed else None

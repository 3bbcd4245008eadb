"""A shift's lifecycle: assign, begin, pause, resume, move its deadline, close it unstarted.

Ending (settlement, grading, the deadline) is :mod:`shifts.ending`; tool calls are
:mod:`shifts.calls`.  Every action takes the shift's process lock, checks the deadline
first (a touched shift past its deadline ends there and then), and tells the shift's
open pages once its change is committed (:mod:`shifts.events`).

:func:`begin_shift` refuses to start a shift before the briefing is acknowledged and,
for a scored shift, before a practice shift has ended, and when a gate an app added
refuses it (a study's consent; :mod:`shifts.briefing`).
"""
from __future__ import annotations

from datetime import timedelta
from importlib.metadata import PackageNotFoundError, version

from django.db import transaction
from django.utils import timezone

from environment.tasks import get_task

from . import cache
from .briefing import refusal_to_start
from .calls import call_tool
from .clock import store_account
from .ending import end_if_due
from .errors import PauseRefused, ShiftNotActive
from .events import announce
from .installed import task_of
from .models import SHIFT_LENGTH, Shift, ShiftPause

OPENING_CALL_ID = "opening-store-status"
PAUSE_REASON_MAX = 200


def release() -> str:
    """This installation's storebench version, as a shift records the release it ran on."""
    try:
        return version("storebench")
    except PackageNotFoundError:
        return ""


def assign_shift(user, task_id: str, seed: int, practice: bool = False) -> Shift:
    get_task(task_id)  # an unknown task fails here, not at the participant's first click
    return Shift.objects.create(participant=user, task_id=task_id, seed=int(seed), is_practice=practice)


def begin_shift(shift: Shift) -> Shift:
    """Start an assigned shift: the 12-hour clock starts and the store opens with a
    (free) ``store_status`` read, so the header is known before the first action.

    Raises :class:`~shifts.errors.StartRefused` before the briefing is acknowledged,
    for a scored shift before a practice shift has ended, or when a start gate refuses;
    :class:`~shifts.errors.TaskUnavailable` when its task is no longer installed.
    A shift already started is returned as is.
    """
    with cache.lock(shift.pk):
        with transaction.atomic():
            shift = Shift.objects.select_for_update().get(pk=shift.pk)
            if shift.status != Shift.Status.ASSIGNED:
                return shift
            refused = refusal_to_start(shift.participant, shift)
            if refused is not None:
                raise refused
            task_of(shift.task_id)  # a store that cannot open is refused before its clock starts
            now = timezone.now()
            shift.status = Shift.Status.ACTIVE
            shift.started_at = now
            shift.deadline = now + SHIFT_LENGTH
            shift.release = release()
            shift.save(update_fields=["status", "started_at", "deadline", "release"])
        call_tool(shift, "store_status", {}, OPENING_CALL_ID)
        return shift


def start_shift(user, task_id: str, seed: int, practice: bool = False) -> Shift:
    """Assign a cell to ``user`` and start it at once."""
    return begin_shift(assign_shift(user, task_id, seed, practice))


def pause_shift(shift: Shift, reason: str) -> Shift:
    """Pause an active shift for ``reason``: tool calls are refused until it resumes.
    The deadline keeps running (it is wall-clock, breaks included)."""
    reason = (reason or "").strip()
    if not reason:
        raise PauseRefused("A reason for the pause is required.")
    if len(reason) > PAUSE_REASON_MAX:
        raise PauseRefused(f"The reason is {len(reason)} characters long; at most {PAUSE_REASON_MAX} are allowed.")
    if "\x00" in reason:  # PostgreSQL stores no NUL in a text column: the INSERT would fail (a 500)
        raise PauseRefused("The reason holds a NUL character; write it again without it.")
    with cache.lock(shift.pk):
        end_if_due(shift)
        if shift.status == Shift.Status.PAUSED:
            raise ShiftNotActive("The shift is already paused.")
        if shift.status != Shift.Status.ACTIVE:
            raise ShiftNotActive(f"Only an active shift can be paused; this one is {shift.get_status_display().lower()}.")
        now = timezone.now()
        with transaction.atomic():
            ShiftPause.objects.create(shift=shift, reason=reason, started_at=now)
            shift.status = Shift.Status.PAUSED
            store_account(shift, now)
            shift.save(update_fields=["status", "wall_seconds", "active_seconds", "paused_seconds"])
            announce(shift.pk)
    return shift


def resume_shift(shift: Shift) -> Shift:
    """End the shift's current pause."""
    with cache.lock(shift.pk):
        end_if_due(shift)
        if shift.status != Shift.Status.PAUSED:
            raise ShiftNotActive(f"The shift is not paused; it is {shift.get_status_display().lower()}.")
        now = timezone.now()
        with transaction.atomic():
            shift.pauses.filter(ended_at__isnull=True).update(ended_at=now)
            shift.status = Shift.Status.ACTIVE
            store_account(shift, now)
            shift.save(update_fields=["status", "wall_seconds", "active_seconds", "paused_seconds"])
            announce(shift.pk)
    return shift


def move_deadline(shift: Shift, minutes: int) -> Shift:
    """Move a shift's wall-clock deadline by ``minutes`` (a coordinator's decision)."""
    with transaction.atomic():
        shift = Shift.objects.select_for_update().get(pk=shift.pk)
        if shift.deadline is None:
            raise ShiftNotActive("The shift has not started: it has no deadline to move.")
        shift.deadline = shift.deadline + timedelta(minutes=minutes)
        shift.save(update_fields=["deadline"])
        announce(shift.pk)
    return shift


def close_unstarted(shift_id: int, reason: str) -> bool:
    """End a shift that was never started, unplayed and ungraded; False if it had started."""
    return bool(Shift.objects.filter(pk=shift_id, status=Shift.Status.ASSIGNED).update(
        status=Shift.Status.ENDED, ended_at=timezone.now(), end_reason=reason))

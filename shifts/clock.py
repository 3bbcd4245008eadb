"""Wall-clock accounting of a shift: wall, active and paused seconds, and time left.

A shift's 12-hour deadline is absolute (breaks included); a pause only splits the wall
time into active and paused time.  The simulated clock never moves with wall time.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from .models import Shift


@dataclass(frozen=True)
class TimeAccount:
    """A shift's wall-clock figures at one instant, in whole seconds."""

    wall: int
    active: int
    paused: int
    left: int  # until the deadline (0 once passed, or before the start)


def hms(seconds: int) -> str:
    """Whole seconds as the shift bar writes them, H:MM:SS ("0:02:23", "12:00:00"); below 0 is 0."""
    seconds = max(0, seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def time_account(shift: Shift, now=None) -> TimeAccount:
    """Wall, active and paused seconds from the start to ``now`` (never past the
    deadline or the end), and the seconds left before the deadline."""
    if shift.started_at is None:
        return TimeAccount(0, 0, 0, 0)
    now = now or timezone.now()
    until = _until(shift, now)
    paused = 0
    for pause in shift.pauses.all():
        end = min(pause.ended_at or until, until)
        paused += max(0, int((end - pause.started_at).total_seconds()))
    return account(shift, paused, now)


def _until(shift: Shift, now):
    return min(t for t in (now, shift.deadline, shift.ended_at) if t is not None)


def account(shift: Shift, paused: int, now) -> TimeAccount:
    """:func:`time_account` of a started shift whose pauses came to ``paused`` seconds."""
    wall = max(0, int((_until(shift, now) - shift.started_at).total_seconds()))
    paused = min(paused, wall)
    left = 0 if shift.deadline is None or shift.status == Shift.Status.ENDED else \
        max(0, int((shift.deadline - now).total_seconds()))
    return TimeAccount(wall=wall, active=wall - paused, paused=paused, left=left)


def store_account(shift: Shift, now) -> None:
    account = time_account(shift, now)
    shift.wall_seconds, shift.active_seconds, shift.paused_seconds = account.wall, account.active, account.paused

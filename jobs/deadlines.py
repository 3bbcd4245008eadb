"""The shift-deadline sweep run by Celery beat.

A shift past its 12-hour deadline is ended by the one deadline action of the shift
domain (:func:`shifts.ending.end_if_due`, settled as played and graded); pages call
the same action when they touch a shift, and this sweep ends the shifts nobody is
looking at.  Ending a shift is idempotent, so overlapping sweeps are harmless.
"""
from __future__ import annotations

from shifts.ending import enforce_deadlines


def sweep(now=None) -> int:
    """End every open shift past its deadline; the number ended by this sweep."""
    return len(enforce_deadlines(now))

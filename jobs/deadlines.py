"""The shift-deadline sweep run by Celery beat.

A shift past its 12-hour deadline is ended by the console's own deadline service
(settled as played and graded).  Pages enforce deadlines when they are read; this
sweep ends the shifts nobody is looking at.  It uses the console's
``enforce_deadlines()`` sweep when the console provides one, otherwise it calls
``enforce_deadline(shift)`` on every active shift whose deadline has passed.
Ending a shift is idempotent, so overlapping sweeps are harmless.
"""
from __future__ import annotations

from django.utils import timezone

from console import services
from console.models import Shift


def sweep(now=None) -> int:
    """End every active shift past its deadline; the number ended by this sweep."""
    console_sweep = getattr(services, "enforce_deadlines", None)
    if console_sweep is not None:
        ended = console_sweep() if now is None else console_sweep(now=now)
        return ended if isinstance(ended, int) else len(ended)
    now = now or timezone.now()
    ended = 0
    for shift in Shift.objects.filter(status=Shift.Status.ACTIVE, deadline__lte=now).order_by("pk"):
        ended += bool(services.enforce_deadline(shift, now=now))
    return ended

"""What a person calls a shift: never its database id (that stays in URLs).

A participant's shifts are numbered in the order they were assigned, practice and
scored shifts apart: "Practice shift" (then "Practice shift 2", ...) and "Shift 1",
"Shift 2", ... for the scored ones.  The console and the studies app both name shifts
this way, so a participant's study page and their shifts page agree.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from .models import Shift


def _name(is_practice: bool, ordinal: int) -> str:
    if is_practice:
        return "Practice shift" if ordinal == 1 else f"Practice shift {ordinal}"
    return f"Shift {ordinal}"


def names_of(shifts: Iterable[Shift]) -> dict[int, str]:
    """Shift id -> name, for *all* of one participant's shifts (their ordinals are
    counted within the shifts given; nothing is read from the database)."""
    counts = {True: 0, False: 0}
    names = {}
    for shift in sorted(shifts, key=lambda s: (s.created_at, s.pk)):
        counts[shift.is_practice] += 1
        names[shift.pk] = _name(shift.is_practice, counts[shift.is_practice])
    return names


def name_of(shift: Shift) -> str:
    """The name of one shift (one count query)."""
    earlier = Shift.objects.filter(participant_id=shift.participant_id, is_practice=shift.is_practice).filter(
        Q(created_at__lt=shift.created_at) | Q(created_at=shift.created_at, pk__lte=shift.pk))
    return _name(shift.is_practice, earlier.count())

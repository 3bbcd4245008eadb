"""What a shift belongs to beyond its participant: the study that assigned it, if any.

The shift domain knows nothing of studies.  An app above it that assigns shifts (the
studies app, from its ``ready()``) registers a lookup with :func:`add_lookup`; the
console's end page asks :func:`affiliation_of`, which is None for a shift no lookup
knows (the practice shift, a shift given by hand, or a site without the studies app).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .models import Shift


@dataclass(frozen=True)
class Affiliation:
    page_url: str  # the participant's page there: completion code, other assignments
    show_threshold: bool  # whether the end page may show the cell's pass threshold


Lookup = Callable[[Shift], Affiliation | None]
_lookups: list[Lookup] = []


def add_lookup(lookup: Lookup) -> None:
    """Ask ``lookup(shift)`` too (adding it twice adds it once)."""
    if lookup not in _lookups:
        _lookups.append(lookup)


def affiliation_of(shift: Shift) -> Affiliation | None:
    for lookup in _lookups:
        found = lookup(shift)
        if found is not None:
            return found
    return None

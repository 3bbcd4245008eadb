"""What a shift, or a person, belongs to beyond the console: the study that assigned it, if any.

The shift domain knows nothing of studies.  An app above it that assigns shifts (the
studies app, from its ``ready()``) registers a lookup with :func:`add_lookup`; the
console's end page asks :func:`affiliation_of`, which is None for a shift no lookup
knows (the practice shift, a shift given by hand, or a site without the studies app).
Likewise :func:`add_person_page` registers where a person's own page is (their study page,
with completion codes); the console's home page asks :func:`person_page_of`, which is None
for someone no app knows.
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


PersonPage = Callable[[int], str | None]  # a user's id -> the URL of their page there, or None
_person_pages: list[PersonPage] = []


def add_person_page(lookup: PersonPage) -> None:
    """Ask ``lookup(user_id)`` too (adding it twice adds it once)."""
    if lookup not in _person_pages:
        _person_pages.append(lookup)


def person_page_of(user_id: int) -> str | None:
    for lookup in _person_pages:
        found = lookup(user_id)
        if found is not None:
            return found
    return None

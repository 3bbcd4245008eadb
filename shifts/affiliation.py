"""What a shift, or a person, belongs to beyond the console: the study that assigned it, if any.

The shift domain knows nothing of studies.  An app above it that assigns shifts (the
studies app, from its ``ready()``) registers a lookup with :func:`add_lookup`; the
console's end page asks :func:`affiliation_of`, which is None for a shift no lookup
knows (the practice shift, a shift given by hand, or a site without the studies app).
Likewise :func:`add_person_page` registers where a person's own page is (their study page,
with completion codes) and whether they are still given shifts there; the console's home page
asks :func:`person_page_of`, which is None for someone no app knows.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .models import Shift

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class Affiliation:
    page_url: str  # the participant's page there: completion code, other assignments
    show_threshold: bool  # whether the end page may show the cell's pass threshold
    coach_note: str = ""  # what the coordinator wrote for this shift (a coached retry's note), to be shown on it


@dataclass(frozen=True)
class PersonPage:
    url: str  # the person's page there: completion codes, the next shift on request
    study: str = ""  # the study's name, as its pages show it to the person
    no_more_shifts: str = ""  # why no shift will be given there any more, said to the person ("" while one may be)


@dataclass
class Lookups(Generic[K, V]):
    """Lookups that apps above add; the first answer that is not None wins."""

    lookups: list[Callable[[K], V | None]] = field(default_factory=list)

    def add(self, lookup: Callable[[K], V | None]) -> None:
        """Ask ``lookup`` too (adding it twice adds it once)."""
        if lookup not in self.lookups:
            self.lookups.append(lookup)

    def first(self, key: K) -> V | None:
        for lookup in self.lookups:
            found = lookup(key)
            if found is not None:
                return found
        return None


_affiliations: Lookups[Shift, Affiliation] = Lookups()
_person_pages: Lookups[int, PersonPage] = Lookups()  # a user's id -> their page there


def add_lookup(lookup: Callable[[Shift], Affiliation | None]) -> None:
    _affiliations.add(lookup)


def affiliation_of(shift: Shift) -> Affiliation | None:
    return _affiliations.first(shift)


def add_person_page(lookup: Callable[[int], PersonPage | None]) -> None:
    _person_pages.add(lookup)


def person_page_of(user_id: int) -> PersonPage | None:
    return _person_pages.first(user_id)

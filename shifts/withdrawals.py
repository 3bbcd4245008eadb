"""A person's withdrawal from a study, told to every app that keeps a copy of their data.

The studies app records withdrawals, but another app beside it may hold a copy of a
participant's data that the studies app cannot reach: the explorer's imported human
trials, which name the study and the participant's label.  Neither app may import the
other, so they meet here, below both:

- the studies app registers :func:`add_check`, which answers whether the person a study
  names by a label has withdrawn, and calls :func:`withdrawn` inside the transaction that
  records a withdrawal;
- an app that keeps copies registers :func:`add_holder`: a function that removes its
  copies of that person's data and says how many it removed, and asks :func:`is_withdrawn`
  before it takes in a new copy.

A person is named by the study's name and their label in it, as a trial folder's
``summary.json`` names them (never by account or invitation code).  These are plain calls
registered from each app's ``ready()``, not signals: the withdrawal's own transaction runs
them, so a withdrawal that rolls back removes nothing.
"""
from __future__ import annotations

from collections.abc import Callable

Check = Callable[[str, str, bool], bool]  # (study name, participant label, lock) -> withdrawn?
Holder = Callable[[str, str], int]  # (study name, participant label) -> copies removed

_checks: list[Check] = []
_holders: list[Holder] = []


def add_check(check: Check) -> None:
    """Ask ``check`` too (adding it twice adds it once)."""
    if check not in _checks:
        _checks.append(check)


def add_holder(holder: Holder) -> None:
    """Tell ``holder`` of every withdrawal (adding it twice adds it once)."""
    if holder not in _holders:
        _holders.append(holder)


def is_withdrawn(study: str, label: str, *, lock: bool = False) -> bool:
    """Whether the person ``label`` of study ``study`` has withdrawn, as far as any app knows.

    With ``lock`` (inside a transaction), the person's record stays locked until that
    transaction ends: a withdrawal made meanwhile waits for it, then removes what it stored."""
    return any(check(study, label, lock) for check in _checks)


def withdrawn(study: str, label: str) -> int:
    """Have every holder remove its copies of the person's data; how many were removed."""
    return sum(holder(study, label) for holder in _holders)

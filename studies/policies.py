"""Assignment policies: which participant gets which cell next.  Pure Python, no Django.

A policy sees the available people (attempts so far, mean composite so far), the
cells with room left under their quota (attempts so far) and the (person, cell)
pairs already tried, and proposes one pair, or None when no pair is possible:

* ``balanced``: the cell with the fewest attempts first (ties by cell key), given to
  the eligible person with the fewest attempts (ties by key);
* ``random``: a uniform choice among the eligible pairs, from ``random.Random(seed)``;
* ``adaptive``: as the paper's study did, favour people who performed well: people
  are ranked by mean composite (someone with no score yet gets the mean of the
  known scores, so newcomers are tried), then by fewest attempts; the top-ranked
  person who can take a cell gets their least-attempted eligible cell.

A person never gets a cell they have already attempted.
"""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Person:
    key: str
    attempts: int
    mean_score: float | None = None


@dataclass(frozen=True)
class CellLoad:
    key: str
    attempts: int
    quota: int


POLICIES = ("balanced", "random", "adaptive")


def _eligible(people: list[Person], cells: list[CellLoad], tried: set[tuple[str, str]]) -> list[tuple[Person, CellLoad]]:
    open_cells = [c for c in cells if c.attempts < c.quota]
    return [(p, c) for p in people for c in open_cells if (p.key, c.key) not in tried]


def choose(policy: str, people: list[Person], cells: list[CellLoad], tried: set[tuple[str, str]],
           seed: int | str = 0) -> tuple[str, str] | None:
    if policy not in POLICIES:
        raise ValueError(f"unknown assignment policy {policy!r}; choose one of {', '.join(POLICIES)}")
    pairs = _eligible(people, cells, tried)
    if not pairs:
        return None
    if policy == "balanced":
        person, cell = min(pairs, key=lambda pc: (pc[1].attempts, pc[1].key, pc[0].attempts, pc[0].key))
    elif policy == "random":
        pairs.sort(key=lambda pc: (pc[0].key, pc[1].key))
        person, cell = random.Random(seed).choice(pairs)
    else:
        known = [p.mean_score for p in people if p.mean_score is not None]
        prior = sum(known) / len(known) if known else 0.0

        def rank(p: Person):
            return (-(p.mean_score if p.mean_score is not None else prior), p.attempts, p.key)

        person, cell = min(pairs, key=lambda pc: (rank(pc[0]), pc[1].attempts, pc[1].key))
    return person.key, cell.key

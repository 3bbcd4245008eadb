"""Human reference scores, with bootstrap intervals over cells.  Pure Python: no Django.

Inputs are plain :class:`AttemptRow` records (one per completed attempt), so the
same code computes figures from the database, from an exported CSV/JSON file, or
from anything else that can produce the rows.

Definitions (the paper's, Appendix I):

* **equal-cell mean**: the mean over cells of the selected attempt's composite;
* **equal-person mean**: the mean over persons of each person's mean composite over
  the cells where their attempt is the selected one;
* **earliest-attempt mean**: the mean over cells of the composite of each cell's
  earliest completed attempt (smallest ``order``), selected or not;
* **pass rate**: the share of cells whose selected composite is >= the cell's threshold;
* **per-task means**: the equal-cell mean over each task's cells;
* **component means**: the mean over cells of each part of the selected attempt's
  composite (the caller names the parts: the study passes ``studies.models.SCORE_FIELDS``,
  the names of the attempts export; by default the names the rows carry); cells where
  a rate is undefined, e.g. no order fell due, are left out of that rate's mean.

Intervals are 95% percentile bootstrap intervals over **cells**: 10,000 resamples of
the cells with replacement, drawn once from ``random.Random(seed)`` as
``rng.choices(range(n), k=n)`` and shared by every study-level statistic (per-task
intervals resample that task's cells from ``random.Random(f"{seed}/task/{task}")``).
A statistic is recomputed on each resample (a cell drawn twice counts twice, also in
the equal-person mean), and the interval is the nearest-rank 2.5th and 97.5th
percentile of the resampled values (sorted values at ``ceil(q * B) - 1``).  Resamples
where a statistic is undefined (no cell has the value) are dropped.

Point estimates are exact Decimal arithmetic; resampled statistics are floats summed
with ``math.fsum`` (deterministic), and everything returned is a Decimal rounded
half-even to six places.
"""
from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

RESAMPLES = 10_000
CONFIDENCE = Fraction(95, 100)
DEFAULT_SEED = 20260801
PLACES = Decimal("0.000001")


@dataclass(frozen=True)
class AttemptRow:
    """One completed attempt: what the figures need, nothing else."""

    cell: str  # "task/seed"
    task: str
    person: str
    composite: Decimal
    threshold: Decimal
    selected: bool
    order: tuple = ()  # sorts a cell's attempts by completion, earliest first
    components: Mapping[str, Decimal | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Estimate:
    value: Decimal | None
    low: Decimal | None
    high: Decimal | None
    n: int  # cells that contributed to the point estimate

    def as_dict(self) -> dict:
        return {"value": _s(self.value), "low": _s(self.low), "high": _s(self.high), "n": self.n}


@dataclass(frozen=True)
class Figures:
    equal_cell: Estimate
    equal_person: Estimate
    earliest: Estimate
    pass_rate: Estimate
    per_task: dict[str, Estimate]
    components: dict[str, Estimate]
    cells: int
    persons: int
    attempts: int
    resamples: int
    seed: int


def q6(x: Decimal) -> Decimal:
    return x.quantize(PLACES, rounding=ROUND_HALF_EVEN)


def _s(x: Decimal | None) -> str | None:
    return None if x is None else str(x)


def _dmean(values: Iterable[Decimal]) -> Decimal | None:
    values = list(values)
    return _dmean_of(values) if values else None


def _dmean_of(values: Sequence[Decimal]) -> Decimal:
    """The mean of a non-empty list (the caller knows it holds at least one value)."""
    return q6(sum(values, Decimal(0)) / len(values))


def _fmean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


# --- per-cell digest -------------------------------------------------------------------


@dataclass(frozen=True)
class _Cell:
    key: str
    task: str
    selected: AttemptRow | None
    earliest: AttemptRow  # every cell holds at least one attempt


def _cells(rows: Iterable[AttemptRow]) -> list[_Cell]:
    by_cell: dict[str, list[AttemptRow]] = defaultdict(list)
    for row in rows:
        by_cell[row.cell].append(row)
    out = []
    for key in sorted(by_cell):
        attempts = by_cell[key]
        selected = [r for r in attempts if r.selected]
        if len(selected) > 1:
            raise ValueError(f"cell {key} has {len(selected)} selected attempts; exactly one is allowed")
        earliest = min(attempts, key=lambda r: r.order)
        out.append(_Cell(key, attempts[0].task, selected[0] if selected else None, earliest))
    return out


# --- statistics over resampled cell indices (repetition allowed) ----------------------

Stat = Callable[[Sequence[int]], float | None]


def _mean_of(values: Sequence[float | None]) -> Stat:
    """The mean of a per-cell value over the drawn cells (cells without the value left out)."""
    full = [v for v in values if v is not None]
    if len(full) == len(values):
        get = full.__getitem__
        return lambda idx: math.fsum(map(get, idx)) / len(idx) if idx else None

    def stat(idx: Sequence[int]) -> float | None:
        present = [v for i in idx if (v := values[i]) is not None]
        return math.fsum(present) / len(present) if present else None
    return stat


def _person_mean_of(values: list[float | None], persons: list[str | None]) -> Stat:
    """The mean over persons of each person's mean over the drawn cells they hold."""
    def stat(idx: Sequence[int]) -> float | None:
        per: dict[str | None, list[float]] = defaultdict(list)
        for i in idx:
            value = values[i]
            if value is not None:
                per[persons[i]].append(value)
        return _fmean([math.fsum(v) / len(v) for v in per.values()])
    return stat


def _selected(cells: Sequence[_Cell], get: Callable[[AttemptRow], Decimal | None]) -> list[float | None]:
    out = []
    for c in cells:
        value = get(c.selected) if c.selected else None
        out.append(None if value is None else float(value))
    return out


def _component_getter(name: str) -> Callable[[AttemptRow], Decimal | None]:
    """Reads one score component of an attempt (absent when the task does not score it)."""
    def get(row: AttemptRow) -> Decimal | None:
        return row.components.get(name)
    return get


def _percentile(sorted_values: list[float], q: Fraction) -> float:
    index = max(0, math.ceil(q * len(sorted_values)) - 1)  # exact: no float error in q * n
    return sorted_values[index]


def _interval(stat: Stat, draws: list[list[int]]) -> tuple[Decimal | None, Decimal | None]:
    values = sorted(v for v in map(stat, draws) if v is not None)
    if not values:
        return None, None
    alpha = (1 - CONFIDENCE) / 2
    return (q6(Decimal(repr(_percentile(values, alpha)))), q6(Decimal(repr(_percentile(values, 1 - alpha)))))


def draws_for(n: int, rng: random.Random, resamples: int = RESAMPLES) -> list[list[int]]:
    """The resampled cell indices: ``resamples`` lists of ``n`` indices drawn with replacement."""
    population = range(n)
    return [rng.choices(population, k=n) for _ in range(resamples)]


def _estimate(stat: Stat, point: Decimal | None, n: int, draws: list[list[int]]) -> Estimate:
    low, high = _interval(stat, draws) if point is not None and draws and draws[0] else (None, None)
    return Estimate(point, low, high, n)


def compute(rows: Iterable[AttemptRow], *, components: Sequence[str] | None = None, seed: int = DEFAULT_SEED,
            resamples: int = RESAMPLES) -> Figures:
    """Every reference figure with its interval, from completed attempt rows; the means of
    the parts named in ``components`` (by default those the rows carry, first seen first)."""
    rows = list(rows)
    if components is None:
        components = list(dict.fromkeys(name for r in rows for name in r.components))
    cells = _cells(rows)
    selected = [c.selected for c in cells if c.selected]
    draws = draws_for(len(cells), random.Random(seed), resamples)

    equal_cell = _dmean(r.composite for r in selected)
    per_person: dict[str, list[Decimal]] = defaultdict(list)
    for r in selected:
        per_person[r.person].append(r.composite)
    equal_person = _dmean(_dmean_of(v) for v in per_person.values())
    earliest = _dmean(c.earliest.composite for c in cells)
    passed = _dmean(Decimal(1 if r.composite >= r.threshold else 0) for r in selected)

    composites = _selected(cells, lambda r: r.composite)
    persons = [c.selected.person if c.selected else None for c in cells]
    passes = _selected(cells, lambda r: Decimal(1 if r.composite >= r.threshold else 0))
    firsts = [float(c.earliest.composite) for c in cells]

    parts = {}
    for name in components:
        values = [v for r in selected if (v := r.components.get(name)) is not None]
        per_cell = _selected(cells, _component_getter(name))
        parts[name] = _estimate(_mean_of(per_cell), _dmean(values), len(values), draws)

    per_task = {}
    for task in sorted({c.task for c in cells}):
        task_cells = [c for c in cells if c.task == task]
        task_selected = [c.selected.composite for c in task_cells if c.selected]
        task_draws = draws_for(len(task_cells), random.Random(f"{seed}/task/{task}"), resamples)
        per_task[task] = _estimate(_mean_of(_selected(task_cells, lambda r: r.composite)),
                                   _dmean(task_selected), len(task_selected), task_draws)

    return Figures(
        equal_cell=_estimate(_mean_of(composites), equal_cell, len(selected), draws),
        equal_person=_estimate(_person_mean_of(composites, persons), equal_person, len(selected), draws),
        earliest=_estimate(_mean_of(firsts), earliest, len(cells), draws),
        pass_rate=_estimate(_mean_of(passes), passed, len(selected), draws),
        per_task=per_task, components=parts,
        cells=len(cells), persons=len(per_person), attempts=len(rows), resamples=resamples, seed=seed,
    )


# --- other rows on the same scale: scripted anchors and imported model trials ---------


def anchor_cells(rows: Iterable[AttemptRow], cells: Iterable[str]) -> set[str]:
    """The cells the anchors are averaged over: those with a selected attempt among
    ``rows`` (the cells of the equal-cell mean), or every cell of ``cells`` while none
    has one, so anchors can be read before any attempt is selected."""
    return {r.cell for r in rows if r.selected} or set(cells)


def anchor_figures(anchors: Mapping[str, Mapping[str, Decimal]], tasks: Mapping[str, str], *,
                   seed: int = DEFAULT_SEED, resamples: int = RESAMPLES) -> dict[str, Estimate]:
    """Equal-cell mean and interval of each scripted anchor over the given cells.

    ``anchors`` maps cell -> anchor name -> composite, ``tasks`` maps cell -> task.
    Each anchor is averaged exactly like the humans' equal-cell mean.
    """
    names = sorted({name for per in anchors.values() for name in per})
    return {name: equal_cell_of([(cell, per[name]) for cell, per in anchors.items() if name in per], tasks,
                                seed=seed, resamples=resamples)
            for name in names}


def trial_figures(trials: Iterable[tuple[str, Decimal, str]], tasks: Mapping[str, str], *,
                  seed: int = DEFAULT_SEED, resamples: int = RESAMPLES) -> dict[str, Estimate]:
    """The hook for imported model trials: rows of (cell, composite, label).

    A label's trials on one cell are averaged first, then cells are averaged equally.
    """
    by_label: dict[str, dict[str, list[Decimal]]] = defaultdict(lambda: defaultdict(list))
    for cell, composite, label in trials:
        by_label[label][cell].append(Decimal(str(composite)))
    return {label: equal_cell_of([(cell, _dmean_of(v)) for cell, v in per.items()], tasks,
                                 seed=seed, resamples=resamples)
            for label, per in sorted(by_label.items())}


def equal_cell_of(pairs: Sequence[tuple[str, Decimal]], tasks: Mapping[str, str], *,
                  seed: int = DEFAULT_SEED, resamples: int = RESAMPLES) -> Estimate:
    """Equal-cell mean of one value per cell, with the same bootstrap as :func:`compute`."""
    rows = [AttemptRow(cell=cell, task=tasks.get(cell, cell.split("/")[0]), person="-",
                       composite=Decimal(str(value)), threshold=Decimal(0), selected=True)
            for cell, value in pairs]
    cells = _cells(rows)
    draws = draws_for(len(cells), random.Random(seed), resamples)
    return _estimate(_mean_of(_selected(cells, lambda r: r.composite)), _dmean(r.composite for r in rows),
                     len(rows), draws)

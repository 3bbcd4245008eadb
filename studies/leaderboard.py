"""The leaderboard: humans beside the scripted anchors and imported model trials.

Every entry is an equal-cell mean with a 95% bootstrap interval over cells, computed
by :mod:`studies.reference` the same way.  Anchors come from the composites each cell
copied out of the calibration file, averaged over the cells that have a selected human
attempt (all cells before any is selected), so humans and anchors share their cells.  Model trials enter
through a plain hook: rows of ``(cell, composite, label)`` where ``cell`` is
``"task/seed"``, either passed in or produced by a function registered with
:func:`register_trial_source` (the explorer app can register one later).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from . import reference
from .figures import Filters, reference_rows, study_figures
from .models import Study

TrialRows = Iterable[tuple[str, Decimal, str]]
_sources: list[Callable[[Study], TrialRows]] = []


def register_trial_source(source: Callable[[Study], TrialRows]) -> None:
    if source not in _sources:
        _sources.append(source)


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # "human", "anchor" or "model"
    estimate: reference.Estimate


def leaderboard(actor, study: Study, trials: TrialRows = (), filters: Filters = Filters()) -> tuple[list[Entry], reference.Figures]:
    figures = study_figures(actor, study, filters)
    cells = list(study.cells.all())
    keys = {c.key for c in cells}
    tasks = {c.key: c.task_id for c in cells}
    entries = [Entry("Humans (equal-cell mean)", "human", figures.equal_cell),
               Entry("Humans (equal-person mean)", "human", figures.equal_person),
               Entry("Humans (earliest attempt)", "human", figures.earliest)]
    # Anchors on the same cells as the humans' selected attempts (all cells before any is selected).
    covered = {r.cell for r in reference_rows(study, filters) if r.selected} or keys
    anchors = reference.anchor_figures({c.key: {k: Decimal(v) for k, v in c.anchors.items()}
                                        for c in cells if c.key in covered}, tasks)
    entries += [Entry(name, "anchor", est) for name, est in anchors.items()]
    rows = [r for r in list(trials) + [r for source in _sources for r in source(study)] if r[0] in keys]
    entries += [Entry(label, "model", est) for label, est in reference.trial_figures(rows, tasks).items()]
    entries.sort(key=lambda e: (e.estimate.value is None, -(e.estimate.value or Decimal(0))))
    return entries, figures

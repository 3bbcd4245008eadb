"""The leaderboard: humans beside the scripted anchors and imported model trials.

Every entry is an equal-cell mean with a 95% bootstrap interval over cells, computed
by :mod:`studies.reference` the same way.  Anchors come from the composites each cell
copied out of the calibration file, averaged over the cells that have a selected human
attempt (all cells before any is selected), so humans and anchors share their cells.  Model trials enter
through a plain hook: rows of ``(cell, composite, label)`` where ``cell`` is
``"task/seed"``, either passed in or produced by a function registered with
:func:`register_trial_source` (the explorer app can register one later).

The bootstrap (10,000 resamples per figure) is the expensive part, so the result is
cached per *study state*: the key is a SHA-256 of everything the figures depend on --
the study's calibration hash, the filters, the seed and resample count, every
reference row (cell, person, composite, selection flag, completion order, components),
the anchors of the covered cells and the model rows.  Selecting another attempt,
a new completed attempt, a withdrawal or a new trial changes the key, so a stale
figure is never served; an unchanged study is computed once and then read from the
cache (``settings.CACHES``: Redis when ``REDIS_URL`` is set, else per process).
Reading the rows costs one query; the resampling is what is saved.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.core.cache import cache

from . import reference
from .figures import Filters, reference_rows
from .models import Study
from .permissions import Action, require

CACHE_PREFIX = "studies:leaderboard:v1:"
CACHE_SECONDS = 7 * 24 * 3600

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


def _state_key(study: Study, filters: Filters, rows: list[reference.AttemptRow], anchors: dict,
               trials: list, seed: int, resamples: int) -> str:
    state = {
        "study": study.pk, "calibration": study.calibration_hash, "filters": filters.as_dict(),
        "seed": seed, "resamples": resamples,
        "rows": [[r.cell, r.person, str(r.composite), str(r.threshold), r.selected, [str(o) for o in r.order],
                  {k: None if v is None else str(v) for k, v in sorted(r.components.items())}] for r in rows],
        "anchors": {cell: {k: str(v) for k, v in sorted(a.items())} for cell, a in sorted(anchors.items())},
        "trials": sorted([r[0], str(r[1]), r[2]] for r in trials),
    }
    digest = hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()
    return CACHE_PREFIX + digest


def leaderboard(actor, study: Study, trials: TrialRows = (), filters: Filters = Filters(), *,
                seed: int = reference.DEFAULT_SEED, resamples: int = reference.RESAMPLES,
                use_cache: bool = True) -> tuple[list[Entry], reference.Figures]:
    require(actor, study, Action.VIEW)
    rows = reference_rows(study, filters)
    cells = list(study.cells.all())
    keys = {c.key for c in cells}
    tasks = {c.key: c.task_id for c in cells}
    # Anchors on the same cells as the humans' selected attempts (all cells before any is selected).
    covered = {r.cell for r in rows if r.selected} or keys
    anchors = {c.key: {k: Decimal(v) for k, v in c.anchors.items()} for c in cells if c.key in covered}
    trial_rows = [r for r in list(trials) + [r for source in _sources for r in source(study)] if r[0] in keys]
    key = _state_key(study, filters, rows, anchors, trial_rows, seed, resamples)
    if use_cache:
        hit = cache.get(key)
        if hit is not None:
            return hit
    figures = reference.compute(rows, seed=seed, resamples=resamples)
    entries = [Entry("Humans (equal-cell mean)", "human", figures.equal_cell),
               Entry("Humans (equal-person mean)", "human", figures.equal_person),
               Entry("Humans (earliest attempt)", "human", figures.earliest)]
    entries += [Entry(name, "anchor", est) for name, est in reference.anchor_figures(anchors, tasks, seed=seed, resamples=resamples).items()]
    entries += [Entry(label, "model", est) for label, est in reference.trial_figures(trial_rows, tasks, seed=seed,
                                                                                   resamples=resamples).items()]
    entries.sort(key=lambda e: (e.estimate.value is None, -(e.estimate.value or Decimal(0))))
    result = (entries, figures)
    if use_cache:
        cache.set(key, result, CACHE_SECONDS)
    return result

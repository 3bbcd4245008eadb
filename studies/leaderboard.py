"""The leaderboard: humans beside the scripted anchors and imported model trials.

Every entry is an equal-cell mean with a 95% bootstrap interval over cells, computed
by :mod:`studies.reference` the same way.  Anchors come from the composites each cell
copied out of the calibration file, averaged over the cells that have a selected human
attempt (all cells before any is selected), so humans and anchors share their cells.  Model trials enter
through a plain hook: rows of ``(cell, composite, label)`` where ``cell`` is
``"task/seed"``, either passed in or produced by a function registered with
:func:`register_trial_source`.  Nothing in this project registers a source: model
trials are compared with the anchors in the trial explorer, and the page shows model
rows (and the plot's legend for them) only when some are given.

The bootstrap (10,000 resamples per figure) is the expensive part, so the result is
cached per *study state*: the key is a SHA-256 of everything the figures are read
from -- the study's calibration hash, the filters, the seed and resample count, every
attempt's decision fields (status, selection, kind, flags, the participant's code and
withdrawal) with its shift's grading fields (status, composite, components, end,
calibration hash), every cell's threshold and anchors, and the model rows.  Selecting
another attempt, a shift being graded, a withdrawal or a new trial changes the key, so
a stale figure is never served; an unchanged study is computed once and then read
from the cache (``settings.CACHES``: Redis when ``REDIS_URL`` is set, else per
process).  The key costs two value queries (no model instances); the rows, anchors
and resampling are what a hit saves.
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
from .models import SCORE_FIELDS, Attempt, Study
from .permissions import Action, require

CACHE_PREFIX = "studies:leaderboard:v4:"  # v4: include_invalid counts attempts graded before their invalidation
CACHE_SECONDS = 7 * 24 * 3600

TrialRows = Iterable[tuple[str, Decimal, str]]
_sources: list[Callable[[Study], TrialRows]] = []


def register_trial_source(source: Callable[[Study], TrialRows]) -> None:
    if source not in _sources:
        _sources.append(source)


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # "human", "participants" (bots included), "anchor" or "model"
    estimate: reference.Estimate


# Everything an attempt's reference row is read from (see studies.figures.row_of and
# studies.models.outcome_of), fetched as plain values: no model is built on a cache hit.
STATE_FIELDS = ("pk", "status", "is_selected", "number", "kind", "is_practice", "is_bot", "participant__code",
                "participant__withdrawn_at", "cell_id", "composite", "completed_at", "end_reason",
                "calibration_hash", *SCORE_FIELDS, "shift__status", "shift__score_composite",
                "shift__score_components", "shift__ended_at", "shift__end_reason", "shift__calibration_hash",
                "shift__passed")


def state_key(study: Study, filters: Filters, trials: list, seed: int, resamples: int) -> str:
    """The cache key of the study's current state (two small value queries)."""
    state = {
        "study": study.pk, "calibration": study.calibration_hash, "filters": filters.as_dict(),
        "seed": seed, "resamples": resamples,
        "attempts": list(Attempt.objects.filter(study=study).order_by("pk").values_list(*STATE_FIELDS)),
        "cells": list(study.cells.order_by("pk").values_list("pk", "task_id", "seed", "threshold", "anchors")),
        "trials": sorted([r[0], str(r[1]), r[2]] for r in trials),
    }
    digest = hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()
    return CACHE_PREFIX + digest


def leaderboard(actor, study: Study, trials: TrialRows = (), filters: Filters = Filters(), *,
                seed: int = reference.DEFAULT_SEED, resamples: int = reference.RESAMPLES,
                use_cache: bool = True) -> tuple[list[Entry], reference.Figures]:
    require(actor, study, Action.VIEW)
    cells = list(study.cells.all())
    keys = {c.key for c in cells}
    trial_rows = [r for r in list(trials) + [r for source in _sources for r in source(study)] if r[0] in keys]
    key = state_key(study, filters, trial_rows, seed, resamples)
    if use_cache:
        hit = cache.get(key)
        if hit is not None:
            return hit
    rows = reference_rows(study, filters)
    tasks = {c.key: c.task_id for c in cells}
    covered = reference.anchor_cells(rows, keys)
    anchors = {c.key: {k: Decimal(v) for k, v in c.anchors.items()} for c in cells if c.key in covered}
    figures = reference.compute(rows, components=SCORE_FIELDS, seed=seed, resamples=resamples)
    who, kind = ("Participants, bots included", "participants") if filters.include_bots else ("Humans", "human")
    entries = [Entry(f"{who} (equal-cell mean)", kind, figures.equal_cell),
               Entry(f"{who} (equal-person mean over {figures.persons} "
                     f"{'person' if figures.persons == 1 else 'people'})", kind, figures.equal_person),
               Entry(f"{who} (earliest attempt)", kind, figures.earliest)]
    entries += [Entry(name, "anchor", est) for name, est in reference.anchor_figures(
        anchors, tasks, seed=seed, resamples=resamples).items()]
    entries += [Entry(label, "model", est) for label, est in reference.trial_figures(
        trial_rows, tasks, seed=seed, resamples=resamples).items()]
    entries.sort(key=lambda e: (e.estimate.value is None, -(e.estimate.value or Decimal(0))))
    result = (entries, figures)
    if use_cache:
        cache.set(key, result, CACHE_SECONDS)
    return result

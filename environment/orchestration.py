"""Batch and calibration orchestration, written once for the command line and the jobs.

``storebench batch`` and ``storebench calibrate`` run their cells in a process pool;
the jobs app (``jobs/``) runs the same cells as Celery items, one item per cell, and
gathers them when the last one is done.  Only the scheduling differs.  What a run is
made of lives here, so both read alike and stay alike:

- which cells (``"all"`` expands to every registered task; unknown tasks are refused
  before any work starts, by :func:`environment.calibration.cells_for`);
- where each batch trial is written (``<out>/<task>-<seed>-<label>``, the label being
  the policy's name or the action log's file stem) and what a batch summary says;
- one calibration cell (the anchors played on the bundled world);
- the end of a calibration: the document in task order, the file, its report and the
  gate failures.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .calibration import GateFailure, calibrate_cell, cells_for, check_gates, document, write_calibration
from .report import write_report
from .tasks import all_tasks, get_task
from .world import load_world, world_hash


def expand_tasks(tasks: Sequence[str]) -> list[str]:
    """The task ids a run names: ``["all"]`` is every registered task, in registry order."""
    return [t.id for t in all_tasks()] if list(tasks) == ["all"] else list(tasks)


# --- batch -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchCell:
    task: str
    seed: int
    out: Path  # the trial's folder


def batch_label(policy: str | None, actions: str | Path | None) -> str:
    """What names a batch's trial folders: the policy, else the action log's file stem."""
    return policy or Path(str(actions)).stem


def batch_cells(task_ids: Iterable[str], seeds: Iterable[int], root: Path, label: str) -> list[BatchCell]:
    """One trial per cell, each in its own folder under ``root``."""
    return [BatchCell(tid, seed, root / f"{tid}-{seed}-{label}") for tid, seed in cells_for(task_ids, seeds)]


def batch_summary(results: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Trials, passes and the mean composite of a batch's trial results."""
    rows = list(results)
    return {"trials": len(rows), "passed": sum(bool(r["pass"]) for r in rows),
            "mean_composite": round(sum(r["reward_composite"] for r in rows) / max(1, len(rows)), 4)}


# --- calibration -------------------------------------------------------------------------


def calibration_cell(task_id: str, seed: int) -> dict[str, Any]:
    """One cell's calibration (deterministic for the cell)."""
    return calibrate_cell(get_task(task_id), seed, load_world())


@dataclass(frozen=True)
class Calibrated:
    """A calibration written: the document, the file's hash, the report and the gate failures."""

    doc: dict[str, Any]
    digest: str
    report: Path
    failures: list[GateFailure]


def finish_calibration(results: Mapping[str, Mapping[int, dict[str, Any]]], task_ids: Iterable[str],
                       out: str | Path) -> Calibrated:
    """Write the calibration of the finished cells (``results[task][seed]``), tasks in the
    run's order, to ``out`` with its report beside it; check every cell's gates."""
    ordered = {tid: dict(results[tid]) for tid in task_ids if tid in results}
    doc = document(ordered, world_hash())
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    digest = write_calibration(doc, out)
    report = write_report(doc, out)
    failures = [f for tid, seeds in ordered.items() for seed in sorted(seeds) for f in check_gates(tid, seeds[seed])]
    return Calibrated(doc, digest, report, failures)

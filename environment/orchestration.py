"""Batch and calibration orchestration, written once for the command line and the jobs.

``storebench batch`` and ``storebench calibrate`` run their cells in a process pool;
the jobs app (``jobs/``) runs the same cells as Celery items, one item per cell, and
gathers them when the last one is done.  Only the scheduling differs.  What a run is
made of lives here, so both read alike and stay alike:

- which cells (``all``, ``eval`` and ``train`` expand to their tasks; unknown tasks, and a task or
  seed named twice, are refused before any work starts, by :func:`run_cells`);
- where each batch trial is written (``<out>/<task>-<seed>-<label>``, the label being
  the policy's name or the action log's file stem) and what a batch summary says;
- one calibration cell (the anchors played on the bundled world);
- the end of a calibration: the document in task order, the file, its report and the
  gate failures (a failed calibration can be kept beside its target instead of over it).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .anchors import get_anchor
from .artifacts import ArtifactError, read_action_log
from .calibration import (
    CalibrationError,
    GateFailure,
    calibrate_cell,
    cells_for,
    check_gates,
    document,
    file_hash,
    write_calibration,
)
from .errors import StoreBenchError
from .report import write_report
from .tasks import TASK_GROUPS, all_tasks, get_task
from .world import load_world, world_hash


def expand_tasks(tasks: Sequence[str]) -> list[str]:
    """The task ids a run names, each group name (:data:`~environment.tasks.TASK_GROUPS`) replaced
    by its tasks in registry order: ``all`` is every eval and train task, ``eval`` and ``train`` one
    split.  A task a group names again (``eval steady``) is refused saying which group holds it; one
    named twice by id is left to :func:`run_cells`."""
    ids: list[str] = []
    named_by: dict[str, str] = {}
    for name in tasks:
        for tid in [t.id for t in all_tasks(TASK_GROUPS[name])] if name in TASK_GROUPS else [name]:
            if tid in named_by and (name in TASK_GROUPS or named_by[tid] in TASK_GROUPS):
                groups = list(dict.fromkeys(g for g in (named_by[tid], name) if g in TASK_GROUPS))
                raise StoreBenchError(f"--tasks names {tid} more than once ({' and '.join(groups)} "
                                      f"{'includes' if len(groups) == 1 else 'include'} it): give each task once "
                                      "(every task-seed cell runs once)")
            named_by.setdefault(tid, name)
            ids.append(tid)
    return ids


def run_cells(task_ids: Iterable[str], seeds: Iterable[int]) -> list[tuple[str, int]]:
    """The task-seed cells of a run, each once.  A task or seed named twice is refused (the
    cell would run twice, and a batch would write its trial folder twice), as is an unknown task."""
    named: tuple[tuple[str, list[Any]], ...] = (("--tasks", list(task_ids)), ("--seeds", [int(s) for s in seeds]))
    for flag, values in named:
        repeated = list(dict.fromkeys(v for i, v in enumerate(values) if v in values[:i]))
        if repeated:
            raise StoreBenchError(f"{flag} names {', '.join(map(str, repeated))} more than once: give each once "
                                  "(every task-seed cell runs once)")
    return cells_for(named[0][1], named[1][1])


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
    """One trial per cell, each in its own folder under ``root``; see :func:`run_cells` for what is refused."""
    return [BatchCell(tid, seed, root / f"{tid}-{seed}-{label}") for tid, seed in run_cells(task_ids, seeds)]


def plan_batch(tasks: Iterable[str], seeds: Iterable[int], out: str | Path, *, policy: str | None,
               actions: str | None, skip_played: bool = False, other_way: str = "") -> list[BatchCell]:
    """A batch's cells, after every check that can refuse it (the CLI and the batch jobs both
    call this, before creating anything): one of a policy and a recorded action log, a known
    policy, a log holding at least one call, known tasks, each task and seed once, and no trial
    folder already there (with ``skip_played``, a cell's folder may be there: the caller reads each with
    :func:`played_trial`, which refuses one that is not the cell's finished trial).
    ``other_way`` ends the refusal of a folder already there, when the caller has another way out."""
    if (policy is None) == (actions is None):
        raise StoreBenchError(("--policy and --actions both given" if policy else "neither --policy nor "
                               "--actions given") + ": give one, a scripted policy or a recorded actions.jsonl")
    if policy is not None:
        get_anchor(policy)
    elif not read_action_log(Path(cast(str, actions))):  # a missing or malformed log is refused too
        raise ArtifactError(f"--actions {actions} holds no recorded calls: give the actions.jsonl of a "
                            "trial that made at least one call")
    cells = batch_cells(expand_tasks(list(tasks)), seeds, Path(out), batch_label(policy, actions))
    if skip_played:
        return cells
    taken = [c.out for c in cells if c.out.exists() and (not c.out.is_dir() or any(c.out.iterdir()))]
    if taken:
        raise ArtifactError((f"the trial folder {taken[0]} already exists" if len(taken) == 1 else
                             f"{len(taken)} trial folders already exist (e.g. {taken[0]})")
                            + f"; use a new --out{other_way}")
    return cells


def played_trial(cell: BatchCell) -> dict[str, Any] | None:
    """The score of ``cell``'s trial already in its folder (``score.json``), or None when there is
    none.  A trial folder is written whole or not at all (:func:`environment.artifacts.write_trial`),
    so one with its score is finished; anything else there (a file, another cell's trial, a folder
    without a readable score) is refused: it is not the batch's to replace."""
    if not cell.out.exists() or (cell.out.is_dir() and not any(cell.out.iterdir())):
        return None
    try:
        score = json.loads((cell.out / "score.json").read_text())
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{cell.out} is there but holds no finished trial ({exc.__class__.__name__}: {exc}); "
                            "move it away, then run the batch again") from exc
    if not isinstance(score, dict) or (score.get("task"), score.get("seed")) != (cell.task, cell.seed) \
            or not isinstance(score.get("reward_composite"), (int, float)):
        raise ArtifactError(f"{cell.out} holds a trial of another cell, or a score without a composite; move it "
                            f"away, then run the batch again")
    return score


def batch_summary(results: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Trials, passes and the mean composite of a batch's trial results."""
    rows = list(results)
    mean = round(sum(r["reward_composite"] for r in rows) / len(rows), 4) if rows else None
    return {"trials": len(rows), "passed": sum(bool(r["pass"]) for r in rows), "mean_composite": mean}


# --- calibration -------------------------------------------------------------------------


def calibration_cell(task_id: str, seed: int) -> dict[str, Any]:
    """One cell's calibration (deterministic for the cell)."""
    return calibrate_cell(get_task(task_id), seed, load_world())


@dataclass(frozen=True)
class Calibrated:
    """A calibration written: the document, the file's hash, the report and the gate failures;
    where the file went and, when it replaced one, the hash of the file it replaced."""

    doc: dict[str, Any]
    digest: str
    report: Path
    failures: list[GateFailure]
    path: Path
    replaced: str | None = None


def check_replacing(out: str | Path, cells: Sequence[tuple[str, int]], *, replace: bool = False) -> None:
    """Refuse, before any cell runs, to write a calibration over a file this run would lose
    something of: a calibration holding cells the run does not calibrate (a run of one task
    over the 51-cell public file would drop 50 of them), or a file that is no calibration at
    all.  ``replace`` (``--replace``) says the loss is meant.  A file holding only cells the
    run calibrates again is replaced as before."""
    path = Path(out)
    if replace or not path.is_file():
        return
    how = ("write this run to a file of its own (a new --out), or pass --replace to replace "
           f"{path} with this run's cells only")
    try:
        held = json.loads(path.read_bytes())["tasks"]
        kept = [(str(task), int(seed)) for task, seeds in held.items() for seed in sorted(seeds, key=int)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise CalibrationError(f"--out {path} exists and is not a calibration file this run would only update",
                               how, path=str(path)) from None
    calibrated = set(cells)
    dropped = [cell for cell in kept if cell not in calibrated]
    if dropped:
        named = some_of([f"{task} seed {seed}" for task, seed in dropped], 3)
        raise CalibrationError(f"--out {path} holds {len(kept)} cells and this run calibrates {len(cells)}: writing it "
                               f"would drop {len(dropped)} ({named})", how, path=str(path))


def some_of(names: list[str], shown: int) -> str:
    """``names`` joined, or the first ``shown`` and how many more (never "and 1 more": that
    one is named instead)."""
    if len(names) <= shown + 1:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f" and {len(names) - shown} more"


def failed_path(out: str | Path) -> Path:
    """Where a calibration that fails its gates is kept instead of ``out``: ``<stem>.failed.json`` beside it."""
    out = Path(out)
    stem = out.name[:-5] if out.name.endswith(".json") else out.name
    return out.with_name(stem + ".failed.json")


def finish_calibration(results: Mapping[str, Mapping[int, dict[str, Any]]], task_ids: Iterable[str],
                       out: str | Path) -> Calibrated:
    """Write the calibration of the finished cells (``results[task][seed]``), tasks in the
    run's order, to ``out`` with its report beside it; check every cell's gates.

    A calibration that fails a gate is written to :func:`failed_path` (with its own report)
    and ``out`` is left as it was: a failed run, from the CLI or a background job, never
    replaces a good file.
    """
    ordered = {tid: dict(results[tid]) for tid in task_ids if tid in results}
    doc = document(ordered, world_hash())
    failures = [f for tid, seeds in ordered.items() for seed in sorted(seeds) for f in check_gates(tid, seeds[seed])]
    path = failed_path(out) if failures else Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    replaced = file_hash(path.read_bytes()) if path.is_file() else None
    digest = write_calibration(doc, path)
    report = write_report(doc, path)
    return Calibrated(doc, digest, report, failures, path, replaced)

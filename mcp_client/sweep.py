"""Sweeps: the baseline LLM runner (:func:`mcp_client.agent.play`) over many cells.

:func:`play_many` plays each ``(task, seed)`` cell once, ``concurrency`` of them at a time in
one process: a model turn is mostly waiting on the endpoint, and each cell has its own MCP
server, session and connection, so cells share nothing but the endpoint.  Each turn's line on
the log names its cell (:class:`_CellLog`).  With ``skip_played`` a cell that already has a
finished trial by the same model, this harness, turn cap, compaction and temperature under
``trials`` (:func:`played_before`; not one the endpoint cut short) is not played again; its
folder's score counts in the summary, so an interrupted sweep is finished by running the same
command again.  Cancelling a sweep (Ctrl-C) starts no further cell and cancels the cells
playing, which write no folder (a trial folder is complete or absent); the rows of the cells
that finished are in ``finished``.  A cell whose endpoint never answered is reported as
unplayed and the sweep goes on.  :func:`sweep_summary` is the account the command prints.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environment.api import cell_constants
from environment.errors import StoreBenchError
from environment.orchestration import batch_summary
from environment.suite import public_calibration
from environment.tasks import get_task

from .agent import COUNTS, ENDED_BY_ENDPOINT, HARNESS, KEEP_TURNS, MAX_TURNS, Log, context_policy, play
from .sessions import session_folder_name

__all__ = ["play_many", "played_before", "sweep_summary"]


class _CellLog:
    """A log that puts ``prefix`` before each whole line written to ``target`` (cells played at
    once write their lines in turn; a line is passed on only once it is complete)."""

    def __init__(self, target: Log, prefix: str) -> None:
        self.target, self.prefix, self.pending = target, prefix, ""

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.target.write(f"{self.prefix}{line}\n")
        return len(text)

    def flush(self) -> None:
        self.target.flush()


def played_before(trials: str | Path, task: str, seed: int, model: str, calibration: dict[str, Any] | None = None,
                  *, max_turns: int = MAX_TURNS, keep_turns: int = KEEP_TURNS,
                  temperature: float | None = None) -> dict[str, Any] | None:
    """The newest finished trial of ``task`` at ``seed`` by ``model`` under ``trials`` played by this
    runner (``summary.json``'s ``harness``) with the same turn cap, compaction and sampling temperature
    (``metrics.temperature``; a trial without one was played at the endpoint's own, and matches only
    ``temperature`` None), as a sweep's row; None if there is none.  A trial the endpoint cut short
    (``ended_by`` "endpoint error") is not finished: the cell is played again.

    A trial folder is written whole or not at all (:func:`environment.artifacts.write_trial`), so a
    folder with its ``summary.json`` and ``score.json`` is a finished trial; one whose files cannot be
    read is passed over (it is not a finished trial).  ``pass`` is its composite against the cell's
    threshold in ``calibration`` (or calibrated on the spot, as when it was played)."""
    found: list[tuple[Path, dict, dict]] = []
    for path in Path(trials).glob(f"{session_folder_name(task, seed, '*')}/summary.json"):
        try:
            summary = json.loads(path.read_text())
            score = json.loads((path.parent / "score.json").read_text())
        except (OSError, ValueError):
            continue
        if (isinstance(summary, dict) and isinstance(score, dict) and summary.get("model") == model
                and summary.get("harness") == HARNESS and summary.get("task") == task and summary.get("seed") == seed
                and summary.get("max_turns") == max_turns and summary.get("context_policy") == context_policy(keep_turns)
                and summary.get("ended_by") != ENDED_BY_ENDPOINT
                and _temperature_of(summary) == (None if temperature is None else float(temperature))):
            found.append((path.parent, summary, score))
    if not found:
        return None
    folder, summary, score = max(found, key=lambda f: (f[0].stat().st_mtime, f[0].name))
    composite = score.get("reward_composite")
    threshold = cell_constants(get_task(task), seed, calibration)[0]["threshold"]
    return {"task": task, "seed": seed, "out": str(folder), "reward_composite": composite,
            "pass": isinstance(composite, (int, float)) and composite >= threshold, "turns": summary.get("turns"),
            "operations_spent": summary.get("operations_spent"), "turns_taken": summary.get("turns_taken"),
            "ended_by": summary.get("ended_by"), "metrics": summary.get("metrics") or {}, "skipped": True}


def _temperature_of(summary: dict) -> float | None:
    metrics = summary.get("metrics")
    value = metrics.get("temperature") if isinstance(metrics, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


async def play_many(cells: Sequence[tuple[str, int]], *, model: str, base_url: str, concurrency: int = 1,
                    skip_played: bool = False, trials: str | Path = "trials", log: Log | None = None,
                    finished: dict[int, dict[str, Any]] | None = None, **options: Any) -> list[dict[str, Any]]:
    """Play every ``(task, seed)`` cell with ``model``, ``concurrency`` at a time; one row per cell, in
    the order given: the cell and :meth:`AgentRun.summary` (``out`` None when the endpoint never
    answered), or with ``skip_played`` the row of a trial already there (:func:`played_before`,
    marked ``skipped``).  ``options`` go to :func:`play` for every cell.

    Each row is also put in ``finished`` (the cell's index in ``cells``: its row) as soon as its cell
    ends, so a caller still has the finished cells when the sweep is cancelled (Ctrl-C): cancelling
    it starts no further cell and cancels the cells playing, which write no trial folder (a cell's
    folder is written whole, without an await, once its play has ended); the cancellation is then
    raised, once every cell has stopped."""
    if concurrency < 1:
        raise StoreBenchError(f"concurrency must be 1 or more, not {concurrency}")
    log = log or sys.stderr
    calibration = public_calibration()[0] if skip_played else None
    gate = asyncio.Semaphore(concurrency)
    total = len(cells)
    done = finished if finished is not None else {}

    async def one(index: int, task: str, seed: int) -> dict[str, Any]:
        name = f"{task}/{seed}"
        if skip_played:
            before = played_before(trials, task, seed, model, calibration, max_turns=options.get("max_turns", MAX_TURNS),
                                   keep_turns=options.get("keep_turns", KEEP_TURNS),
                                   temperature=options.get("temperature"))
            if before is not None:
                print(f"{name}: already played by {model} ({before['out']}); skipped", file=log, flush=True)
                done[index] = before
                return before
        async with gate:
            print(f"{name}: playing (cell {index + 1} of {total})", file=log, flush=True)
            run = await play(task, seed, model=model, base_url=base_url, trials=trials,
                             log=_CellLog(log, f"{name} "), **options)
        row = {"task": task, "seed": seed, **run.summary()}
        if run.result is None:
            print(f"{name}: the endpoint never answered; nothing was played", file=log, flush=True)
        else:
            print(f"{name}: composite {row['reward_composite']}, {'pass' if row['pass'] else 'below threshold'}, "
                  f"{row['turns_taken']} model turns, ended by {row['ended_by']} -> {row['out']}", file=log, flush=True)
        done[index] = row
        return row

    return list(await asyncio.gather(*(one(i, task, seed) for i, (task, seed) in enumerate(cells))))


def sweep_summary(model: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A sweep's account: its cells, the graded trials' passes and mean composite
    (:func:`environment.orchestration.batch_summary`, as ``storebench batch``), the cells left
    unplayed because the endpoint never answered, and every row; ``metrics`` sums the counts (tokens,
    requests, retries, tool calls) of the cells played now, all 0 when every cell was skipped: a
    skipped cell's counts are in its own trial's ``summary.json``, not here."""
    graded = [r for r in rows if r.get("out") is not None]
    tokens = dict.fromkeys((*COUNTS, "tool_calls"), 0)
    for row in rows:
        if not row.get("skipped"):
            for key, value in (row.get("metrics") or {}).items():
                if isinstance(value, int):
                    tokens[key] = tokens.get(key, 0) + value
    return {"model": model, "harness": HARNESS, "cells": len(rows), **batch_summary(graded),
            "skipped": sum(bool(r.get("skipped")) for r in rows),
            "unplayed": [f"{r['task']}/{r['seed']}" for r in rows if r.get("out") is None],
            "metrics": tokens, "rows": list(rows)}

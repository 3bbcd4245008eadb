"""Playing one trial end to end: arm, play, grade, write its folder.

Shared by ``storebench run`` and the batch runner, so a trial folder means the
same thing whichever way it was made.  A trial is played by a scripted policy
(an anchor) or by a recorded action log.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .anchors import get_anchor
from .api import arm, cell_constants, grade
from .artifacts import read_action_log, write_trial
from .calibration import FROM_FILE, unchecked_gates
from .engine import Episode
from .suite import suite_id
from .world import world_hash


def play_actions(ep: Episode, actions: list[dict[str, Any]], *, stop: bool = True) -> Episode:
    """Replay recorded calls in order; ``stop`` freezes the store after them if still open."""
    for entry in actions:
        arguments = entry.get("arguments", {})
        if isinstance(arguments, dict) and set(arguments) == {"__not_an_object__"}:
            arguments = arguments["__not_an_object__"]
        ep.call(entry["tool"], arguments)
    if stop and not ep.over:
        ep.stop()
    return ep


def read_actions(path: str | Path) -> list[dict[str, Any]]:
    """A recorded action log, checked by :func:`~environment.artifacts.read_action_log`: a missing,
    malformed or non-call line is an :class:`~environment.artifacts.ArtifactError` naming the file
    and the line, as replay, analyze and regrade report it."""
    return read_action_log(Path(path))


def run_trial(task: str, seed: int, out: str | Path, *, policy: str | None = None,
              actions: list[dict[str, Any]] | None = None, calibration: dict[str, Any] | None = None,
              calibration_hash: str | None = None) -> dict[str, Any]:
    """Play one cell and write its folder; returns the score with pass and threshold."""
    started = time.perf_counter()
    ep = arm(task, seed, record=True)
    if actions is not None:
        play_actions(ep, actions)
        label = "recorded actions"
    else:
        get_anchor(policy).run(ep)
        assert policy is not None  # get_anchor refuses None
        label = policy
    return settle(ep, out, policy=label, calibration=calibration, calibration_hash=calibration_hash,
                  wall_seconds=time.perf_counter() - started)


def settle(ep: Episode, out: str | Path, *, policy: str, calibration: dict[str, Any] | None = None,
           calibration_hash: str | None = None, wall_seconds: float | None = None,
           labels: dict[str, Any] | None = None) -> dict[str, Any]:
    """Freeze ``ep`` if still open, grade it and write its folder; the score with pass and threshold.

    The one writer of trial folders: ``storebench run`` and ``batch``, MCP sessions (stdio
    and HTTP) and the baseline agent all end here.  ``policy`` names who played (an anchor,
    ``recorded actions``, ``mcp session``, ``llm agent``); ``labels`` go to ``summary.json``.
    """
    if not ep.over:
        ep.stop()
    cell, source = cell_constants(ep.task, ep.seed, calibration)
    result = grade(ep, cell)
    folder = write_trial(ep, result, out, policy=policy, world_hash=world_hash(),
                         calibration_hash=calibration_hash if source == FROM_FILE else None,
                         calibration_source=source, wall_seconds=wall_seconds, labels=labels)
    data = result.as_json()
    data["pass"] = float(result.reward_composite) >= cell["threshold"]
    data["threshold"] = cell["threshold"]
    data["out"] = str(folder)
    data["calibration"] = source
    data["gates_failed"] = unchecked_gates(ep.task.id, cell, source)
    data["suite"] = suite_id()
    return data

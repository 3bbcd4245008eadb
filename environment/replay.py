"""``storebench replay DIR``: re-execute a trial's action log and demand an exact match.

A fresh episode of the same task and seed plays the recorded calls in order; the
resulting ledger must equal ``ledger.jsonl`` byte for byte, the re-computed score
must equal ``score.json``, and when the observation stream was kept every tool
result must equal the recorded one.  The world and the task file must still hash
to the values in the manifest: replaying against a changed world proves nothing.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from .api import arm
from .artifacts import OBSERVATIONS, ArtifactError, read_action_log, read_json_object, whole_number
from .engine.settlement import score
from .tasks import get_task
from .trial import play_actions
from .world import world_hash


@dataclass
class ReplayResult:
    path: str
    matches: bool = False
    problems: list[str] = field(default_factory=list)
    calls: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "matches": self.matches, "calls": self.calls, "problems": self.problems}


def replay(folder: str | Path) -> ReplayResult:
    folder = Path(folder)
    out = ReplayResult(str(folder))
    try:
        if not folder.is_dir():
            raise ArtifactError(f"{folder} is not a folder")
        manifest = read_json_object(folder / "manifest.json")
        summary = read_json_object(folder / "summary.json")
        stored_score = read_json_object(folder / "score.json")
        stored_ledger = (folder / "ledger.jsonl").read_text()
        actions = read_action_log(folder / "actions.jsonl")
    except ArtifactError as exc:
        out.problems.append(f"cannot read the trial: {exc.message}")
        return out
    except OSError as exc:
        out.problems.append(f"cannot read the trial: {folder / 'ledger.jsonl'}: {exc.strerror}")
        return out
    if not isinstance(manifest.get("task"), str) or "seed" not in manifest:
        out.problems.append(f"cannot read the trial: {folder / 'manifest.json'} names no task and seed")
        return out
    if manifest.get("world_hash") != world_hash():
        out.problems.append(f"the trial ran on world {manifest.get('world_hash')}, this engine has {world_hash()}")
        return out
    task = get_task(manifest["task"])
    if manifest.get("task_file_hash") != task.file_hash:
        out.problems.append(f"the task file changed since the trial ({manifest.get('task_file_hash')} -> "
                            f"{task.file_hash})")
        return out
    ep = arm(task, whole_number(manifest["seed"], "manifest.json seed"), record=True)
    play_actions(ep, actions, stop=summary.get("termination") == "stopped")
    if not ep.over:
        out.problems.append(f"the action log ends in window {ep.window + 1} with the store still open, but the "
                            f"trial says it ended by {summary.get('termination')!r}")
        ep.stop()
    out.calls = len(actions)
    if ep.ledger.to_jsonl() != stored_ledger:
        mine = ep.ledger.to_jsonl().splitlines()
        theirs = stored_ledger.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), min(len(mine), len(theirs)))
        out.problems.append(f"ledger differs from entry {first + 1} ({len(theirs)} recorded, {len(mine)} replayed)")
    zero, scale = stored_score.get("business_zero_raw"), stored_score.get("business_scale")
    replayed = score(ep, None if zero is None else Decimal(str(zero)), None if scale is None else Decimal(str(scale)))
    for key, value in replayed.as_json().items():
        if key in stored_score and stored_score[key] != value:
            out.problems.append(f"score.json {key}: recorded {stored_score[key]}, replayed {value}")
    observations = folder / OBSERVATIONS
    if observations.exists():
        recorded = [json.loads(line)["result"] for line in gzip.decompress(observations.read_bytes()).splitlines()]
        replayed_obs = ep.observations
        assert replayed_obs is not None, "armed with record=True, so the episode keeps its observations"
        if recorded != replayed_obs:
            first = next((i for i, (a, b) in enumerate(zip(recorded, replayed_obs, strict=False)) if a != b),
                         min(len(recorded), len(replayed_obs)))
            out.problems.append(f"observation {first + 1} differs from the recorded tool result")
    out.matches = not out.problems
    return out

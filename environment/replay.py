"""``storebench replay DIR``: re-execute a trial's action log and demand an exact match.

Every file the manifest lists must match its checksum there (the check
:func:`environment.grading.regrade` makes, :func:`~environment.artifacts.read_checked_manifest`),
so an edited ``summary.json`` or a deleted ``observations.jsonl.gz`` is named.  Then a
fresh episode of the same task and seed plays the recorded calls in order; the
resulting ledger, per-window balances and events must equal ``ledger.jsonl``,
``windows.jsonl`` and ``events.jsonl`` byte for byte, the re-computed score must equal
``score.json``, and every tool result must equal the recorded one.  The world and the
task file must still hash to the values in the manifest: replaying against a changed
world proves nothing.  A manifest written before per-file checksums were kept gets a
note saying what could not be checked.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from .api import arm
from .artifacts import (
    OBSERVATIONS,
    ArtifactError,
    cell_from_folder_name,
    cells_claimed,
    events_jsonl,
    read_action_log,
    read_checked_manifest,
    read_json_object,
    whole_number,
    windows_jsonl,
)
from .engine.settlement import score
from .errors import StoreBenchError, check_seed
from .tasks import get_task
from .trial import play_actions
from .world import world_hash

NEEDED = ("summary.json", "score.json", "ledger.jsonl", "actions.jsonl")  # what a replay cannot do without


@dataclass
class ReplayResult:
    path: str
    matches: bool = False
    problems: list[str] = field(default_factory=list)
    calls: int = 0
    notes: list[str] = field(default_factory=list)  # what could not be checked, without failing the replay

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "matches": self.matches, "calls": self.calls, "problems": self.problems,
                "notes": self.notes}


def played_elsewhere(manifest: dict[str, Any]) -> str:
    """How a trial's manifest says it ran on another world or task file than this engine's, or
    ''.  Replaying such a trial proves nothing: ``replay`` refuses it, ``analyze`` warns and the
    explorer leaves its failure modes out.  An unknown task raises (:func:`get_task`)."""
    theirs = manifest.get("world_hash")
    if theirs != world_hash():
        return f"the trial ran on world {theirs}, this engine has {world_hash()}"
    ours = get_task(manifest["task"]).file_hash
    if manifest.get("task_file_hash") != ours:
        return f"the trial ran on task file {manifest.get('task_file_hash')}, this engine's is {ours}"
    return ""


def _first_difference(mine: list[str], theirs: list[str]) -> int:
    """The 0-based index of the first line where two files differ (the shorter one's length when one
    is a prefix of the other)."""
    return next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), min(len(mine), len(theirs)))


def replay(folder: str | Path) -> ReplayResult:
    folder = Path(folder)
    out = ReplayResult(str(folder))
    if folder.is_dir() and not (folder / "manifest.json").exists() and cell_from_folder_name(folder) \
            and (folder / "score.json").is_file():
        out.problems.append("manifest.json is missing: a folder in the release's layout has none, so there is no "
                            "world or task file hash to replay it against; storebench regrade checks its score "
                            "against its ledger")
        return out
    try:
        if not folder.is_dir():
            raise ArtifactError(f"{folder} is not a folder")
        checked = read_checked_manifest(folder)
    except ArtifactError as exc:
        out.problems.append(f"cannot read the trial: {exc.message}")
        return out
    manifest = checked.manifest
    out.problems += checked.problems
    if not checked.has_checksums:
        out.notes.append("manifest.json records no file checksums (written before they were kept), so "
                         "summary.json was not checked")
    if any(p.startswith(f"{name} is missing") for name in NEEDED for p in out.problems):
        return out  # named above; nothing to replay without it
    try:
        summary = read_json_object(folder / "summary.json")
        stored_score = read_json_object(folder / "score.json")
        actions = read_action_log(folder / "actions.jsonl")
    except ArtifactError as exc:
        out.problems.append(f"cannot read the trial: {exc.message}")
        return out
    try:
        stored_ledger = (folder / "ledger.jsonl").read_text(encoding="utf-8")
    except OSError as exc:
        out.problems.append(f"cannot read the trial: {folder / 'ledger.jsonl'}: {exc.strerror}")
        return out
    except UnicodeDecodeError:
        out.problems.append(f"cannot read the trial: {folder / 'ledger.jsonl'} is not UTF-8 text")
        return out
    if not isinstance(manifest.get("task"), str) or "seed" not in manifest:
        out.problems.append(f"cannot read the trial: {folder / 'manifest.json'} names no task and seed")
        return out
    try:
        elsewhere = played_elsewhere(manifest)
        if not elsewhere:
            task = get_task(manifest["task"])
            seed = check_seed(whole_number(manifest["seed"], "its seed"))
    except StoreBenchError as exc:  # named for this folder; the other folders are still replayed
        out.problems.append(f"cannot read the trial: {folder / 'manifest.json'}: {exc.message}")
        return out
    if elsewhere:
        out.problems.append(elsewhere)
        return out
    try:
        claimed = cells_claimed({"manifest.json": manifest, "summary.json": summary, "score.json": stored_score})
    except ArtifactError as exc:
        out.problems.append(f"cannot read the trial: {exc.message}")
        return out
    if len({(named_task, named_seed) for _name, named_task, named_seed in claimed}) > 1:
        said = "; ".join(f"{name} says {t} seed {n}" for name, t, n in claimed)
        out.problems.append(f"the trial's files disagree on its cell ({said}); not replayed against any of them")
        return out
    ep = arm(task, seed, record=True)
    play_actions(ep, actions, stop=summary.get("termination") == "stopped")
    if not ep.over:
        out.problems.append(f"the action log ends in window {ep.window + 1} with the store still open, but the "
                            f"trial says it ended by {summary.get('termination')!r}")
        ep.stop()
    out.calls = len(actions)
    if ep.ledger.to_jsonl() != stored_ledger:
        mine, theirs = ep.ledger.to_jsonl().splitlines(), stored_ledger.splitlines()
        out.problems.append(f"ledger differs from entry {_first_difference(mine, theirs) + 1} ({len(theirs)} "
                            f"recorded, {len(mine)} replayed)")
    for name, replayed_text in (("windows.jsonl", windows_jsonl(ep)), ("events.jsonl", events_jsonl(ep))):
        path = folder / name
        if not path.is_file():
            if "files" not in manifest:  # with checksums its absence is named above
                out.notes.append(f"{name} is absent, so it was not compared")
            continue
        try:
            stored_text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            out.problems.append(f"{name} cannot be read: {exc}")
            continue
        if stored_text != replayed_text:
            mine, theirs = replayed_text.splitlines(), stored_text.splitlines()
            out.problems.append(f"{name} differs from the replay from line {_first_difference(mine, theirs) + 1} "
                                f"({len(theirs)} lines recorded, {len(mine)} replayed)")
    zero, scale = stored_score.get("business_zero_raw"), stored_score.get("business_scale")
    replayed = score(ep, None if zero is None else Decimal(str(zero)), None if scale is None else Decimal(str(scale)))
    for key, value in replayed.as_json().items():
        if key in stored_score and stored_score[key] != value:
            out.problems.append(f"score.json {key}: recorded {stored_score[key]}, replayed {value}")
    observations = folder / OBSERVATIONS
    if observations.is_file():
        recorded: list[Any] | None = None
        try:
            rows = [json.loads(line) for line in gzip.decompress(observations.read_bytes()).splitlines()]
        except (OSError, EOFError, zlib.error, ValueError) as exc:
            out.problems.append(f"{OBSERVATIONS} cannot be read: {exc}")
        else:
            bad = next((n for n, row in enumerate(rows, start=1) if not isinstance(row, dict) or "result" not in row),
                       None)
            if bad is None:
                recorded = [row["result"] for row in rows]
            else:
                out.problems.append(f"{OBSERVATIONS} cannot be read: line {bad} is not an object with a 'result'")
        replayed_obs = ep.observations
        assert replayed_obs is not None, "armed with record=True, so the episode keeps its observations"
        if recorded is not None and recorded != replayed_obs:
            first = _first_difference(recorded, replayed_obs)
            out.problems.append(f"observation {first + 1} differs from the recorded tool result")
    elif "files" not in manifest:
        out.notes.append(f"{OBSERVATIONS} is absent, so the tool results were not compared")
    out.matches = not out.problems
    return out

"""Reading a trial folder and deciding whether to trust it.

A folder is refused, with a reason that names the file, when a file it must have
is missing or unreadable, when a file does not match the SHA-256 the manifest
records for it (``environment/artifacts.py`` writes them under ``files``), when
the manifest, summary and score disagree about the cell, when the score's net
assets are not what the ledger adds up to, when its composite is not what its own
components give with the composite's weights (within the re-grader's tolerance), or when a field has the wrong shape (a
count that is not a whole number from 0, a time that is not a date, a tool name that is not
text, a figure too large for the column that stores it): every field the importer stores is checked here against :data:`SHAPES`, and
the reason names the file, the row and the field.  A manifest written before per-file
checksums existed is accepted as *unchecked*; the ledger check still applies.

The content hash names the folder's bytes, not its path: a copy of a folder
imported from elsewhere is the same trial.  Floats in the JSON files are read as
Decimal, so no score figure ever passes through binary floating point.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.db import models

from environment import simtime
from environment.artifacts import OBSERVATIONS, file_digest
from environment.engine.episode import ORDER_FLOW
from environment.engine.settlement import compose
from environment.grading import TOLERANCE

from .models import Trial, TrialWindow

REQUIRED = ("manifest.json", "score.json", "summary.json", "actions.jsonl", "ledger.jsonl", "windows.jsonl",
            "events.jsonl")
OPTIONAL = (OBSERVATIONS,)
SCORE_FIELDS = ("reward_composite", "business", "reliability", "continuity", "business_raw", "net_assets")
SUMMARY_FIELDS = ("task", "seed", "termination", "windows_played", "windows_total")
TERMINATIONS = ("horizon", "stopped", "suspended")
ROW_FIELDS = {
    "windows.jsonl": ("at", "cash_cents", "receivable_cents", "in_transit_cents", "net_assets_cents",
                      "inventory_units", "inventory_cost_cents", "dense_value_cents", "rating"),
    "actions.jsonl": ("tool",),
    "events.jsonl": ("at", "kind", "channel"),
}
CHANNELS = ("announced", "rumoured", "silent")
CENT = Decimal("0.01")
# The most one of a folder's files may take, and its observations once unpacked.  A full-year
# smart-triage trial takes 4.3 MiB (its ledger) and 14 MiB of observations: these leave room
# for an agent that calls many times more, and refuse a file (or a small gzip file that
# unpacks without end) that would fill the importer's memory.
MAX_FILE_BYTES = 256 * 2**20
MAX_OBSERVATIONS_BYTES = 512 * 2**20


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB"


# Field shapes, per file: "int" (a whole number a 64-bit database column holds), "int32" (one
# a 32-bit column holds), "count" (a whole number from 0 that a 32-bit column holds: seeds,
# windows, turns, positions), "number" (whole or decimal), "text", "time" (a date and time
# simtime can read), "object".  A trailing "?" allows the field to be absent or null.
SHAPES = {
    "manifest.json": {"task": "text", "seed": "count", "calibration_hash": "text?", "world_hash": "text?",
                      "task_file_hash": "text?", "source_version": "text?"},
    "summary.json": {"task": "text", "seed": "count", "termination": "text", "windows_played": "count",
                     "windows_total": "count", "turns": "count?", "operations_spent": "count?",
                     "wall_seconds": "number?", "policy": "text?", "model": "text?", "participant": "text?"},
    "score.json": {**{key: "number" for key in SCORE_FIELDS}, "on_time_rate": "number?",
                   "return_handled_rate": "number?"},
    "windows.jsonl": {"at": "time", **{key: "int" for key in ROW_FIELDS["windows.jsonl"][1:-1]},
                      "inventory_units": "int32", "rating": "number", "dense_reward_cents": "int?",
                      **{key: "int32?" for key in ORDER_FLOW}},
    "actions.jsonl": {"tool": "text", "window": "count?", "arguments": "object?"},
    "events.jsonl": {"at": "time", "kind": "text", "channel": "text", "index": "count?"},
}
MAX_INT = 2 ** 63 - 1
MAX_INT32 = 2 ** 31 - 1
RANGES = {"int": (-MAX_INT, MAX_INT), "int32": (-MAX_INT32 - 1, MAX_INT32), "count": (0, MAX_INT32)}


def _shape_problem(value, shape: str) -> str | None:
    """What is wrong with ``value`` for ``shape``, or None."""
    if shape.endswith("?"):
        if value is None:
            return None
        shape = shape[:-1]
    if shape in RANGES:
        low, high = RANGES[shape]
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        return None if ok else (f"is not a whole number from 0 to {high:,}" if low == 0 else
                                "is not a whole number in range")
    if shape == "number":
        ok = isinstance(value, int | Decimal) and not isinstance(value, bool) and Decimal(value).is_finite()
        return None if ok else "is not a number"
    if shape == "text":
        return None if isinstance(value, str) else "is not text"
    if shape == "object":
        return None if isinstance(value, dict) else "is not a JSON object"
    if shape == "time":
        if not isinstance(value, str):
            return "is not a date and time"
        try:
            simtime.parse(value)
        except ValueError:
            return "is not a date and time"
        return None
    raise AssertionError(f"unknown shape {shape!r}")


# The decimal columns a number is stored in (file -> field -> (model, column)): a number the
# column cannot hold is refused here, naming it, rather than by the database (or, on SQLite,
# stored and then unreadable on the trial's page).
STORED_DECIMALS: dict[str, dict[str, tuple[type[models.Model], str]]] = {
    "score.json": {key: (Trial, key) for key in (*SCORE_FIELDS, "on_time_rate", "return_handled_rate")},
    "summary.json": {"wall_seconds": (Trial, "wall_seconds")},
    "windows.jsonl": {"rating": (TrialWindow, "rating")},
}


def _range_problem(value, model, column: str) -> str | None:
    field = model._meta.get_field(column)
    bound = Decimal(10) ** (field.max_digits - field.decimal_places)
    if abs(Decimal(value)).quantize(Decimal(10) ** -field.decimal_places) < bound:
        return None
    return f"is too large to store (it must be below {bound:,} in absolute value)"


def _check_shapes(name: str, record: dict, where: str = "") -> None:
    for key, shape in SHAPES[name].items():
        if key not in record and shape.endswith("?"):
            continue
        problem = _shape_problem(record.get(key), shape)
        if problem is None and record.get(key) is not None and key in STORED_DECIMALS.get(name, {}):
            problem = _range_problem(record[key], *STORED_DECIMALS[name][key])
        if problem:
            raise FolderRefused(f"{name}{where}: {key!r} {problem} ({str(record.get(key))[:40]!r})")


class FolderRefused(Exception):
    """The folder cannot be imported; ``reason`` says why and names the file."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class TrialFolder:
    path: Path
    content_hash: str
    checksums_verified: bool
    manifest: dict
    summary: dict
    score: dict
    windows: list[dict]
    actions: list[dict]
    events: list[dict]
    observations: list[str] | None


def _json(name: str, data: bytes):
    try:
        return json.loads(data, parse_float=Decimal)
    except ValueError as exc:
        raise FolderRefused(f"{name} is not valid JSON ({exc})") from exc


def _jsonl(name: str, data: bytes) -> list:
    """The file's rows; figures with a fraction read exactly (as ``Decimal``), except in the
    action log, whose arguments are kept as the agent sent them (JSON numbers)."""
    rows = []
    parse_float = float if name == "actions.jsonl" else Decimal
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line, parse_float=parse_float))
        except ValueError as exc:
            raise FolderRefused(f"{name} line {number} is not valid JSON ({exc})") from exc
    return rows


def _contents(folder: Path) -> dict[str, bytes]:
    if not folder.is_dir():
        raise FolderRefused(f"{folder} is not a folder")
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    if missing:
        raise FolderRefused(f"the folder has no {', '.join(missing)}")
    linked = [name for name in (*REQUIRED, *OPTIONAL) if (folder / name).is_symlink()]
    if linked:  # its content would come from wherever the link leads, not from the trial
        raise FolderRefused(f"{', '.join(linked)} {'is a symbolic link' if len(linked) == 1 else 'are symbolic links'}"
                            "; a trial folder holds its own files (copy them in)")
    present = [name for name in (*REQUIRED, *OPTIONAL) if (folder / name).is_file()]
    for name in present:
        size = (folder / name).stat().st_size
        if size > MAX_FILE_BYTES:
            raise FolderRefused(f"{name} takes {_mib(size)}, more than the {_mib(MAX_FILE_BYTES)} a trial's file may "
                                "take; it is not imported")
    return {name: (folder / name).read_bytes() for name in present}


def _unpacked(data: bytes) -> bytes:
    """The observations' text, unpacked no further than :data:`MAX_OBSERVATIONS_BYTES`."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as packed:
            stream = packed.read(MAX_OBSERVATIONS_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise FolderRefused(f"{OBSERVATIONS} is not a readable gzip file ({exc})") from exc
    if len(stream) > MAX_OBSERVATIONS_BYTES:
        raise FolderRefused(f"{OBSERVATIONS} unpacks to more than the {_mib(MAX_OBSERVATIONS_BYTES)} a trial's "
                            "observations may take; it is not imported")
    return stream


def _check_files(manifest: dict, contents: dict[str, bytes]) -> bool:
    """True when the manifest carries checksums and every file matches them."""
    recorded = manifest.get("files")
    if recorded is None:
        return False
    if not isinstance(recorded, dict):
        raise FolderRefused("manifest.json: 'files' must map file names to checksums")
    for name, data in contents.items():
        if name == "manifest.json":
            continue
        if name not in recorded:
            raise FolderRefused(f"{name} is not covered by the checksums in manifest.json")
        if file_digest(data) != recorded[name]:
            raise FolderRefused(f"{name} does not match its checksum in manifest.json (the file was changed "
                                "after the trial was written)")
    absent = sorted(set(recorded) - set(contents))
    if absent:
        raise FolderRefused(f"manifest.json lists {', '.join(absent)}, which the folder does not have")
    return True


def _check_cell(manifest: dict, summary: dict, score: dict) -> None:
    for key in ("task", "seed"):
        if key not in manifest:
            raise FolderRefused(f"manifest.json has no {key!r}")
    for key in SUMMARY_FIELDS:
        if key not in summary:
            raise FolderRefused(f"summary.json has no {key!r}")
    for key in SCORE_FIELDS:
        if not isinstance(score.get(key), int | Decimal):
            raise FolderRefused(f"score.json: {key!r} is missing or not a number")
    _check_shapes("manifest.json", manifest)
    _check_shapes("summary.json", summary)
    _check_shapes("score.json", score)
    if (summary["task"], summary["seed"]) != (manifest["task"], manifest["seed"]):
        raise FolderRefused(f"summary.json is for {summary['task']} seed {summary['seed']}, manifest.json for "
                            f"{manifest['task']} seed {manifest['seed']}")
    if score.get("seed", manifest["seed"]) != manifest["seed"] or score.get("task", manifest["task"]) != manifest["task"]:
        raise FolderRefused(f"score.json is for {score.get('task')} seed {score.get('seed')}, manifest.json for "
                            f"{manifest['task']} seed {manifest['seed']}")
    if summary["termination"] not in TERMINATIONS:
        raise FolderRefused(f"summary.json: termination {summary['termination']!r} is not one of "
                            f"{', '.join(TERMINATIONS)}")


def _check_ledger(ledger: list[dict], score: dict) -> None:
    try:
        cents = sum(int(entry["amount_cents"]) for entry in ledger)
    except (KeyError, TypeError, ValueError) as exc:
        raise FolderRefused(f"ledger.jsonl has an entry without a whole amount_cents ({exc})") from exc
    recorded = Decimal(score["net_assets"]).quantize(CENT)
    if Decimal(cents) / 100 != recorded:
        raise FolderRefused(f"score.json net_assets {recorded} is not what ledger.jsonl adds up to "
                            f"({Decimal(cents) / 100})")


def _check_composite(score: dict) -> None:
    """The stored composite is what the stored components give with the engine's weights: a
    score.json whose composite alone was edited and re-signed (checksums catch only an edit that
    left the manifest alone) is refused.  This is a consistency check, not a re-grade: components
    edited together with it pass here; the import then checks business against business_raw
    when the calibration the trial was graded with is known (``explorer.importing``);
    ``storebench regrade`` recomputes the whole score, and ``storebench replay`` replays the actions."""
    stored = Decimal(score["reward_composite"])
    recomputed = compose(Decimal(score["business"]), Decimal(score["reliability"]), Decimal(score["continuity"]))
    if abs(stored - recomputed) > TOLERANCE:
        raise FolderRefused(f"score.json: reward_composite {stored} is not what its components give ({recomputed} "
                            f"from business {score['business']}, reliability {score['reliability']} and continuity "
                            f"{score['continuity']}); the score was edited, or graded with other weights, so the trial is not "
                            "imported")


def _rows(name: str, data: bytes) -> list[dict]:
    rows = _jsonl(name, data)
    for number, row in enumerate(rows, start=1):
        missing = [key for key in ROW_FIELDS[name] if not isinstance(row, dict) or key not in row]
        if missing:
            raise FolderRefused(f"{name} row {number} has no {', '.join(missing)}")
        _check_shapes(name, row, f" row {number}")
        if name == "events.jsonl" and row["channel"] not in CHANNELS:
            raise FolderRefused(f"{name} row {number}: channel {row['channel']!r} is not one of {', '.join(CHANNELS)}")
    return rows


def read_folder(path: str | Path) -> TrialFolder:
    folder = Path(path)
    contents = _contents(folder)
    manifest = _json("manifest.json", contents["manifest.json"])
    if not isinstance(manifest, dict):
        raise FolderRefused("manifest.json is not a JSON object")
    verified = _check_files(manifest, contents)
    summary = _json("summary.json", contents["summary.json"])
    score = _json("score.json", contents["score.json"])
    if not isinstance(summary, dict) or not isinstance(score, dict):
        raise FolderRefused("summary.json and score.json must be JSON objects")
    _check_cell(manifest, summary, score)
    _check_composite(score)
    _check_ledger(_jsonl("ledger.jsonl", contents["ledger.jsonl"]), score)
    observations = None
    if OBSERVATIONS in contents:
        observations = []
        for number, row in enumerate(_jsonl(OBSERVATIONS, _unpacked(contents[OBSERVATIONS])), start=1):
            if not isinstance(row, dict) or not isinstance(row.get("result"), str):
                raise FolderRefused(f"{OBSERVATIONS} row {number}: 'result' is missing or not text "
                                    f"({str(row)[:40]!r})")
            observations.append(row["result"])
    digest = hashlib.sha256()
    for name in sorted(contents):
        digest.update(f"{name}\0{file_digest(contents[name])}\n".encode())
    return TrialFolder(
        path=folder, content_hash="sha256:" + digest.hexdigest(), checksums_verified=verified,
        manifest=manifest, summary=summary, score=score,
        windows=_rows("windows.jsonl", contents["windows.jsonl"]),
        actions=_rows("actions.jsonl", contents["actions.jsonl"]),
        events=_rows("events.jsonl", contents["events.jsonl"]),
        observations=observations,
    )


# How far below a named folder the scan looks for trial folders (a folder of batches of trials is two).
MAX_DEPTH = 3
TRIAL_FILES = frozenset(REQUIRED) | frozenset(OPTIONAL)
# The release's published layout: these four, no manifest.json or windows.jsonl.  A folder with only
# some of them is a partial trial folder (refused naming what it lacks), not the release's layout.
RELEASE_FILES = frozenset(("score.json", "summary.json", "actions.jsonl", "ledger.jsonl"))


@dataclass(frozen=True)
class Passed:
    """A folder the scan found but will not import, and why.  ``refused``: a trial folder that
    cannot be imported (the run fails); otherwise a folder holding no trial (skipped)."""
    path: Path
    reason: str
    refused: bool


def release_layout_reason(path: Path) -> str:
    return (f"a trial folder in the release's published layout (score.json, summary.json, actions.jsonl, "
            f"ledger.jsonl; no manifest.json, windows.jsonl or events.jsonl), which the explorer cannot import: it "
            f"imports folders written by this engine (storebench run or batch, MCP sessions, human shifts). "
            f"Re-grade it instead: storebench regrade {path} --calibration calibration/public.json")


def _kind(folder: Path) -> str:
    """"trial" (has a manifest), "release" (the release's layout: :data:`RELEASE_FILES`, no
    windows.jsonl), "partial" (some trial files, no manifest) or "other"."""
    names = {child.name for child in folder.iterdir() if child.is_file()}
    if "manifest.json" in names:
        return "trial"
    if RELEASE_FILES <= names and "windows.jsonl" not in names:
        return "release"
    return "partial" if names & TRIAL_FILES else "other"


TRIAL, PASSED, EMPTY = "trial", "passed", "empty"  # what a search below a folder found


def _scan(folder: Path, depth: int, out: list[Path | Passed]) -> str:
    """Add the trial folders under ``folder`` (and the subfolders passed over, with why) to ``out``;
    :data:`TRIAL` when it held any trial folder, else :data:`PASSED` when it passed over a folder
    that may hold one (hidden, or too deep), else :data:`EMPTY`."""
    found = EMPTY
    for child in sorted(p for p in folder.iterdir() if p.is_dir()):
        if child.name.startswith("."):
            out.append(Passed(child, "a hidden folder (a trial still being written is hidden until it is "
                                     "complete); name it directly to import it", refused=False))
            found = found if found == TRIAL else PASSED
            continue
        if child.is_symlink():  # it may lead anywhere, outside the folder named or back up to it
            out.append(Passed(child, "a symbolic link, not followed; name the folder it points to, to import "
                                     "the trials in it", refused=False))
            found = found if found == TRIAL else PASSED
            continue
        kind = _kind(child)
        if kind in ("trial", "partial"):  # a partial folder is refused by read_folder, naming what it lacks
            out.append(child)
            found = TRIAL
        elif kind == "release":
            out.append(Passed(child, release_layout_reason(child), refused=True))
            found = TRIAL
        elif depth >= MAX_DEPTH:
            if not any(p.is_dir() for p in child.iterdir()):  # nothing below it to search: it holds no trial
                out.append(Passed(child, "holds no trial folder (none has a manifest.json)", refused=False))
                continue
            out.append(Passed(child, f"its subfolders were not searched: they are more than {MAX_DEPTH} levels "
                                     "below the folder named; name this folder to import the trials in it",
                              refused=False))
            found = found if found == TRIAL else PASSED
        else:
            mark = len(out)
            below = _scan(child, depth + 1, out)
            if below == EMPTY:  # one line for the whole subtree
                del out[mark:]
                out.append(Passed(child, "holds no trial folder (none has a manifest.json)", refused=False))
            elif below == TRIAL or found == EMPTY:
                found = below  # what was passed over below stays listed, with its reason
    return found


def trial_folders(paths: list[str | Path]) -> list[Path | Passed]:
    """The trial folders named: each path is a trial folder, or a folder holding them, directly or in
    subfolders (a batch, or a folder of batches) up to :data:`MAX_DEPTH` levels down.  Every subfolder
    passed over is listed with the reason, and a trial in the release's layout is refused saying so."""
    found: list[Path | Passed] = []
    for path in map(Path, paths):
        if not path.is_dir() or _kind(path) in ("trial", "partial"):
            found.append(path)  # read_folder names what is wrong with it, if anything
        elif _kind(path) == "release":
            found.append(Passed(path, release_layout_reason(path), refused=True))
        else:
            below = _scan(path, 1, found)
            if below == EMPTY:
                found.append(Passed(path, "holds no trial folder: a trial folder has a manifest.json (written by "
                                          "storebench run or batch, MCP sessions and human shifts)", refused=True))
            elif below == PASSED:
                found.append(Passed(path, "no trial folder found where it was searched; see the folders passed "
                                          "over above and name them directly", refused=True))
    return found

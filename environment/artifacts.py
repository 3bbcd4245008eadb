"""Trial artifacts: one folder per trial, written atomically.

Files: ``score.json`` (the release's field names, plus the counts the rates come
from), ``summary.json`` (who played, how it ended), ``actions.jsonl`` (every call
with its arguments, enough to replay), ``ledger.jsonl`` (every money movement),
``windows.jsonl`` (balances and dense-reward deltas per window), ``events.jsonl``,
``observations.jsonl.gz`` (every tool result exactly as returned) and
``manifest.json`` (source version, world, task file and calibration hashes, and
under ``files`` the SHA-256 of every other file, so a reader can tell an edited
folder from the one the engine wrote; manifests written before it have no
``files``).  Everything is first written to a sibling temporary folder that is renamed into
place, so a crash never leaves a folder that looks complete, and a write that fails
removes the temporary folder (no ``.<name>.partial-*`` is left behind; a process killed while
it writes, by a second Ctrl-C on a batch say, leaves one behind).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, overload

from . import __version__
from .engine import Episode
from .engine.settlement import Score
from .errors import ErrorCode, StoreBenchError


class ArtifactError(StoreBenchError):
    code = ErrorCode.ARTIFACT_ERROR


def read_json_object(path: Path) -> dict[str, Any]:
    """A trial file holding one JSON object; :class:`ArtifactError` naming the file otherwise."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ArtifactError(not_a_trial_folder(path)) from None
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path} cannot be read as JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ArtifactError(f"{path} is not a JSON object")
    return data


def read_action_log(path: Path) -> list[dict[str, Any]]:
    """An ``actions.jsonl`` (one recorded call per line); :class:`ArtifactError` naming the file
    and the line otherwise."""
    rows = []
    try:
        with path.open() as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise ArtifactError(f"{path} line {number} is not JSON: {exc}") from None
                if not isinstance(row, dict) or not isinstance(row.get("tool"), str):
                    raise ArtifactError(f"{path} line {number} is not a recorded call (an object with a 'tool')")
                rows.append(row)
    except FileNotFoundError:
        raise ArtifactError(f"{path} is missing: give the actions.jsonl of a trial folder") from None
    except IsADirectoryError:
        raise ArtifactError(f"{path} is a folder: give the actions.jsonl file inside a trial folder") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{path} cannot be read: {exc}") from None
    return rows


def trial_folders_in(folder: Path) -> list[Path]:
    """The trial folders directly inside ``folder`` (each holds a ``score.json`` or a
    ``manifest.json``), sorted; empty when ``folder`` is not a folder."""
    try:
        return sorted(p for p in folder.iterdir()
                      if p.is_dir() and ((p / "score.json").is_file() or (p / "manifest.json").is_file()))
    except OSError:
        return []


def refuse_folders_given_wrongly(folders: list[Path]) -> None:
    """A path given that is no folder at all (a typo: the caller's mistake, not a trial that
    fails to reproduce), or one folder given that holds trial folders and no trial's own files
    (a batch's ``--out``: the caller meant the trials in it).  :class:`ArtifactError` saying so,
    before any verdict on it."""
    missing = [str(f) for f in folders if not Path(f).is_dir()]
    if missing:
        which = missing[0] if len(missing) == 1 else f"{len(missing)} of the paths ({', '.join(missing[:3])}" + \
            (", ..." if len(missing) > 3 else "") + ")"
        raise ArtifactError(f"{which} {'is not a folder' if len(missing) == 1 else 'are not folders'}: give trial "
                            "folders (for a batch's output, DIR/*); nothing was checked")
    if len(folders) != 1:
        return
    folder = Path(folders[0])
    if not any((folder / name).is_file() for name in ("score.json", "manifest.json")) and trial_folders_in(folder):
        raise ArtifactError(not_a_trial_folder(folder / "score.json"))


def not_a_trial_folder(path: Path) -> str:
    """Why the trial file ``path`` cannot be read when it does not exist: its folder holds trial
    folders (a batch's output, say), or is perhaps no trial folder at all."""
    inside = trial_folders_in(path.parent)
    if inside:
        count = f"{len(inside)} trial folder" + ("s" if len(inside) > 1 else "")
        return f"{path.parent} holds {count}, not one trial's files: pass them (e.g. {path.parent}/*)"
    return f"{path} is missing: is {path.parent} a trial folder written by storebench?"


def _jsonl(rows: Iterable[Any]) -> str:
    return "".join(json.dumps(r, separators=(",", ":"), sort_keys=True, default=repr) + "\n" for r in rows)


OBSERVATIONS = "observations.jsonl.gz"


def file_digest(data: bytes) -> str:
    """How the manifest names a file's content: ``sha256:<hex>``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def windows_jsonl(ep: Episode) -> str:
    """``windows.jsonl``: the episode's balances per window, each with its dense-reward delta."""
    dense = ep.dense_rewards()
    return _jsonl({**row, "dense_reward_cents": dense[i] if i < len(dense) else None}
                  for i, row in enumerate(ep.window_log))


def events_jsonl(ep: Episode) -> str:
    """``events.jsonl``: the task's events as the episode applied them."""
    return _jsonl(ep.event_log)


SUMMARY_LABELS = ("model", "harness", "context_policy", "max_turns", "turns_taken", "metrics", "ended_by", "env",
                  "participant", "study")  # the last two: a study's human shift written as a trial


def write_trial(ep: Episode, result: Score, out: str | Path, *, policy: str, world_hash: str,
                calibration_hash: str | None, calibration_source: str, wall_seconds: float | None = None,
                labels: dict[str, Any] | None = None) -> Path:
    """Write the trial folder of ``ep`` (played and graded) to ``out``, atomically.

    ``labels`` are what the player's side says about itself and the engine cannot know:
    ``model``, ``harness``, ``context_policy``, ``max_turns``, ``turns_taken`` (an LLM
    harness's turns), ``metrics`` (token usage) and ``ended_by``; they go into
    ``summary.json`` beside the engine's own fields and are never graded.
    """
    from .suite import suite_id

    labels = dict(labels or {})
    unknown = sorted(set(labels) - set(SUMMARY_LABELS))
    if unknown:
        raise ArtifactError(f"unknown trial label(s) {', '.join(unknown)}; known: {', '.join(SUMMARY_LABELS)}")
    suite = suite_id()
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ArtifactError(f"{out} already holds files; choose an empty or new folder")
    files = {
        "score.json": json.dumps({**result.as_json(), "suite": suite}, indent=2) + "\n",
        "summary.json": json.dumps({
            "task": ep.task.id, "seed": ep.seed, "policy": policy, "model": labels.pop("model", None),
            "turns": len(ep.action_log), "operations_spent": ep.calls,
            "termination": ("suspended" if ep.bankrupt else "horizon" if ep.window >= ep.n_windows else "stopped"),
            "end_reason": ep.end_reason, "windows_played": ep.window, "windows_total": ep.n_windows,
            "wall_seconds": None if wall_seconds is None else round(wall_seconds, 3),
            "calibration": calibration_source, "suite": suite, **labels,
        }, indent=2) + "\n",
        "actions.jsonl": _jsonl(ep.action_log),
        "ledger.jsonl": ep.ledger.to_jsonl(),
        "windows.jsonl": windows_jsonl(ep),
        "events.jsonl": events_jsonl(ep),
    }
    payloads = {name: text.encode() for name, text in files.items()}
    if ep.observations is not None:
        stream = "".join(json.dumps({"call": i + 1, "result": text}) + "\n" for i, text in enumerate(ep.observations))
        payloads[OBSERVATIONS] = gzip.compress(stream.encode(), mtime=0)
    payloads["manifest.json"] = (json.dumps({
        "source_version": __version__, "world_hash": world_hash, "task": ep.task.id,
        "task_file_hash": ep.task.file_hash, "calibration_hash": calibration_hash, "seed": ep.seed,
        "suite": suite,
        "files": {name: file_digest(data) for name, data in sorted(payloads.items())},
    }, indent=2) + "\n").encode()
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    try:
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for name, data in payloads.items():
            (tmp / name).write_bytes(data)
        try:
            tmp.replace(out)  # POSIX renames a folder over an empty one (and refuses a non-empty one)
        except OSError as exc:
            if out.is_dir() and any(out.iterdir()):
                raise ArtifactError(f"{out} already holds files (written while this trial was played); "
                                    "choose an empty or new folder") from None
            raise ArtifactError(f"cannot move the trial into {out} ({exc.strerror}); name a folder you can "
                                "write to") from None
    except OSError as exc:
        raise ArtifactError(f"cannot write the trial folder {out} ({exc.strerror}); name a folder you can "
                            "write to") from None
    finally:
        # After a rename the temporary folder is gone; after any failure it goes too, so a failed
        # write never leaves a .partial-* folder behind.
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# --- reading trial folders back (the re-grader, the replayer) --------------------------------------------

RELEASE_FOLDER = re.compile(r"(?P<task>[a-z0-9][a-z0-9-]*)__s(?P<seed>\d+)__(?P<id>[A-Za-z0-9._-]+)")


def cell_from_folder_name(folder: str | Path) -> tuple[str, int] | None:
    """``(task, seed)`` from a folder named as the release names them, ``<task>__s<seed>__<id>``."""
    match = RELEASE_FOLDER.fullmatch(Path(folder).name)
    return None if match is None else (match["task"], int(match["seed"]))


def checksum_problems(folder: str | Path, manifest: dict[str, Any]) -> list[str]:
    """Files that differ from, or are missing against, the manifest's ``files`` checksums.

    Empty when they all match, or when the manifest predates per-file checksums.
    """
    folder = Path(folder)
    recorded = manifest.get("files")
    if recorded is None:
        return []
    if not isinstance(recorded, dict):
        return ["manifest.json: 'files' must map file names to sha256 checksums"]
    problems = []
    for name, digest in sorted(recorded.items()):
        path = folder / name
        if "/" in name or name.startswith("."):
            problems.append(f"manifest.json lists {name!r}, which is not a trial file name")
        elif not path.is_file():
            problems.append(f"{name} is missing: manifest.json lists it with its checksum")
        elif file_digest(path.read_bytes()) != digest:
            problems.append(f"{name} does not match its checksum in manifest.json: the file was changed after "
                            "the trial was written")
    return problems


@dataclass(frozen=True)
class CheckedManifest:
    """A trial folder's ``manifest.json`` and what its checksums say about the folder's files."""

    manifest: dict[str, Any]  # {} when the folder has none and none was required
    problems: list[str]  # :func:`checksum_problems`: files changed or missing against the manifest

    @property
    def has_checksums(self) -> bool:
        """False for a manifest written before per-file checksums were kept (or no manifest)."""
        return "files" in self.manifest


def read_checked_manifest(folder: str | Path, *, required: bool = True) -> CheckedManifest:
    """Read ``folder``'s ``manifest.json`` and check every file it lists against its checksum:
    the one reading and check behind ``replay``, ``regrade`` and ``analyze``, so their wording is
    the same.  A manifest that cannot be read raises :class:`ArtifactError` naming the file; a
    missing one too when ``required``, else it reads as ``{}`` with no problems (the release's
    layout has none)."""
    folder = Path(folder)
    path = folder / "manifest.json"
    if not required and not path.exists():
        return CheckedManifest({}, [])
    manifest = read_json_object(path)
    return CheckedManifest(manifest, checksum_problems(folder, manifest))


def folder_checksum_problems(folder: str | Path) -> list[str]:
    """:func:`checksum_problems` of ``folder`` against its own ``manifest.json``; a manifest that
    is missing or unreadable is named as the one problem."""
    try:
        return read_checked_manifest(folder).problems
    except ArtifactError as exc:
        return [exc.message]


def whole_number(value: object, where: str) -> int:
    """An integer field as the release writes it (``13`` or ``13.0``); anything else is refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArtifactError(f"{where} must be a whole number, got {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise ArtifactError(f"{where} must be a whole number, got {value!r}")
    return int(value)


def cells_claimed(files: dict[str, dict[str, Any]]) -> list[tuple[str, str | None, int | None]]:
    """The cell each of a trial's files names, as (file, task, seed); a file naming neither
    (the release's ``"task": null``) is left out."""
    claimed = []
    for name, data in files.items():
        task, seed = data.get("task"), data.get("seed")
        if task is None and seed is None:
            continue
        claimed.append((name, None if task is None else task if isinstance(task, str) else repr(task),
                        None if seed is None else whole_number(seed, f"{name} seed")))
    return claimed


@overload
def finite_number(value: object, where: str) -> Decimal: ...
@overload
def finite_number(value: object, where: str, *, optional: bool) -> Decimal | None: ...
def finite_number(value: object, where: str, *, optional: bool = False) -> Decimal | None:
    """A numeric field as a :class:`~decimal.Decimal`; NaN, infinities, strings and booleans are refused."""
    from decimal import Decimal

    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArtifactError(f"{where} must be a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ArtifactError(f"{where} must be a finite number, got {value!r}")
    return Decimal(str(value))


RELEASE_SCORE_FIELDS = ("seed", "windows_played", "net_assets", "business_raw", "business", "reliability",
                        "on_time_rate", "return_handled_rate", "continuity", "bankrupt", "reward_composite")


def to_release_layout(folder: str | Path, root: str | Path, trial_id: str) -> Path:
    """Copy a trial folder of ours into the release's layout, under ``root``.

    The folder is named ``<task>__s<seed>__<id>``; ``score.json`` keeps the release's fields
    only, with ``seed`` and ``windows_played`` as floats and no task; ``summary.json`` is the
    release's harness metadata with ``task`` and ``seed`` null.  The ledger and the action
    log are kept (what the re-grader checks the score against); there is no manifest, as in
    the release.  Used to build ``fixtures/release-trajectories``.
    """
    folder, root = Path(folder), Path(root)
    score = json.loads((folder / "score.json").read_text())
    summary = json.loads((folder / "summary.json").read_text())
    task, seed = summary["task"], int(summary["seed"])
    dest = root / f"{task}__s{seed}__{trial_id}"
    dest.mkdir(parents=True)
    release = {name: score[name] for name in RELEASE_SCORE_FIELDS}
    release["seed"], release["windows_played"] = float(seed), float(score["windows_played"])
    (dest / "score.json").write_text(json.dumps(release, indent=2) + "\n")
    (dest / "summary.json").write_text(json.dumps({
        "env": "storebench", "model": summary.get("model") or summary["policy"], "context_policy": None,
        "max_turns": None, "turns": summary["turns"], "metrics": summary.get("metrics") or {},
        "ended_by": summary["termination"], "wall_seconds": summary.get("wall_seconds"), "task": None,
        "seed": None}, indent=2) + "\n")
    for name in ("ledger.jsonl", "actions.jsonl"):
        shutil.copyfile(folder / name, dest / name)
    return dest

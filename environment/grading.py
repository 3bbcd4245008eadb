"""Re-grading trials from their files, trusting nothing but the ledger.

For each trial folder: read ``score.json`` (the release's fields), recompute net
assets and business_raw from ``ledger.jsonl``, then business, reliability,
composite and pass from the calibration cell (only ``business_zero_raw``,
``business_scale`` and ``threshold`` are read), and compare with what the score
file claims.  A trial reproduces only if every figure matches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from .artifacts import (
    ArtifactError,
    cell_from_folder_name,
    cells_claimed,
    finite_number,
    read_action_log,
    read_checked_manifest,
    read_json_object,
    whole_number,
)
from .calibration import cell_of
from .engine.settlement import business_normalized, compose

TOLERANCE = Decimal("0.000002")
MONEY_TOLERANCE = Decimal("0.005")


@dataclass
class Regrade:
    path: str
    task: str | None = None
    seed: int | None = None
    business: Decimal | None = None
    reliability: Decimal | None = None
    composite: Decimal | None = None
    passed: bool | None = None
    problems: list[str] = field(default_factory=list)
    refused: bool = False  # its files could not be trusted: graded to zero (see _zero), not re-graded

    @property
    def reproduces(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        def f(x: Decimal | None) -> float | None:
            return None if x is None else float(x)

        return {"path": self.path, "task": self.task, "seed": self.seed, "business": f(self.business),
                "reliability": f(self.reliability), "reward_composite": f(self.composite), "pass": self.passed,
                "reproduces": self.reproduces, "refused": self.refused, "problems": self.problems}


def _dec(value: object) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def ledger_totals(path: Path) -> tuple[Decimal, Decimal]:
    """(net assets, opening capital) in dollars from a ledger file; :class:`ArtifactError`
    naming the line of an entry that is not JSON or lacks a whole ``amount_cents`` or a ``kind``."""
    net = 0
    capital = 0
    with path.open() as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                amount = whole_number(entry["amount_cents"], "amount_cents")
                kind = entry["kind"]
            except ValueError as exc:
                raise ArtifactError(f"{path.name} line {number} is not JSON ({exc})") from None
            except (KeyError, TypeError) as exc:
                raise ArtifactError(f"{path.name} line {number} is not a ledger entry: it lacks {exc}") from None
            except ArtifactError as exc:
                raise ArtifactError(f"{path.name} line {number}: {exc.message}") from None
            net += amount
            if kind in ("opening_cash", "opening_deposit"):
                capital += amount
    return Decimal(net) / 100, Decimal(capital) / 100


def _zero(out: Regrade, problem: str) -> Regrade:
    """A trial whose artifacts cannot be checked grades to numeric zero, with the reason."""
    out.problems.append(problem)
    out.business = out.reliability = out.composite = Decimal(0)
    out.passed = False
    out.refused = True
    return out


def _attended_windows(path: Path) -> int | None:
    """Windows in which the action log spent at least one operation (None without a log)."""
    if not path.exists():
        return None
    windows = set()
    for number, entry in enumerate(read_action_log(path), start=1):
        if entry.get("op", False):
            windows.add(whole_number(entry.get("window"), f"{path} call {number} window"))
    return len(windows)


def regrade(folder: str | Path, calibration: dict[str, Any], calibration_hash: str | None = None) -> Regrade:
    """Re-grade one trial folder; a malformed folder gets its problem named, never an exception.

    Reads this engine's folders and the release's (``<task>__s<seed>__<id>``, a float seed
    and no task in ``score.json``, ``"task": null`` in ``summary.json``: the task then
    comes from the folder name).  When the manifest carries per-file checksums, every
    file must match them before anything is graded.
    """
    folder = Path(folder)
    out = Regrade(str(folder))
    if not folder.is_dir():
        out.problems.append(f"{folder} is not a folder: give trial folders (written by storebench run, batch or "
                            "mcp, or in the release's layout)")
        return out
    try:
        return _regrade(folder, out, calibration, calibration_hash)
    except ArtifactError as exc:
        return _zero(out, exc.message)


def _graded_with(recorded: str) -> str:
    """What to re-grade a trial with, from the calibration hash its manifest records (the trial
    records no file name): the shipped public calibration if that is the one, else the file
    hashing to it (``storebench calibrate`` writes a file's hash beside it, in FILE.sha256)."""
    from .suite import PUBLIC_CALIBRATION, public_calibration

    if public_calibration()[1] == recorded:
        return f"it was graded with the shipped public calibration: give --calibration {PUBLIC_CALIBRATION}"
    return (f"give --calibration the file it was graded with, the one hashing to {recorded} (a calibration "
            "file's hash is in FILE.sha256 beside it)")


def _regrade(folder: Path, out: Regrade, calibration: dict[str, Any], calibration_hash: str | None) -> Regrade:
    try:
        stored = read_json_object(folder / "score.json")
    except ArtifactError as exc:
        out.problems.append(exc.message)
        return out
    summary = read_json_object(folder / "summary.json") if (folder / "summary.json").exists() else {}
    checked = read_checked_manifest(folder, required=False)
    manifest = checked.manifest
    named = cell_from_folder_name(folder)
    out.task = stored.get("task") or summary.get("task") or manifest.get("task") or (named and named[0])
    if stored.get("seed") is not None:
        out.seed = whole_number(stored["seed"], "score.json seed")
    elif named is not None:
        out.seed = named[1]
    if named is not None and (out.task, out.seed) != named:
        out.problems.append(f"the folder is named for {named[0]} seed {named[1]}, its files say {out.task} seed "
                            f"{out.seed}")
    others = [f"{name} says {task} seed {seed}"
              for name, task, seed in cells_claimed({"score.json": stored, "summary.json": summary,
                                                      "manifest.json": manifest})
              if (task is not None and task != out.task) or (seed is not None and seed != out.seed)]
    if others:
        return _zero(out, f"the trial's files disagree on its cell (graded as {out.task} seed {out.seed}, but "
                          f"{'; '.join(others)}); refusing to grade it against either cell")
    if not manifest and ("suite" in stored or "task" in stored):
        # This engine's layout (the release's score.json has neither): its manifest holds the
        # files' checksums, so a folder without one could hold any ledger.
        return _zero(out, "manifest.json is missing: this engine writes one with every trial folder, with the "
                          "checksums of its files, so the folder cannot be trusted and grades to zero")
    if out.task is None or out.seed is None:
        out.problems.append("the trial's files name no task or no seed, and the folder's name is not the release's "
                            "<task>__s<seed>__<id>: say which cell it is by naming the folder so")
        return out
    cell = cell_of(calibration, out.task, out.seed)
    if cell is None:
        out.problems.append(f"no calibration cell for task {out.task!r} seed {out.seed!r} in this calibration "
                            f"file: re-grade against the file the trial was graded with, or calibrate the cell "
                            f"(storebench calibrate --tasks {out.task} --seeds {out.seed} --out FILE)")
        return out
    tampered = checked.problems
    if tampered:
        for problem in tampered[:-1]:
            out.problems.append(problem)
        return _zero(out, tampered[-1] + "; refusing to grade an edited folder")
    for name in ("net_assets", "business_raw", "business", "reliability", "reward_composite", "continuity"):
        finite_number(stored.get(name), f"score.json {name}")
    for name in ("on_time_rate", "return_handled_rate"):
        finite_number(stored.get(name), f"score.json {name}", optional=True)
    if manifest and calibration_hash is not None:
        recorded = manifest.get("calibration_hash")
        if recorded is not None and recorded != calibration_hash:
            return _zero(out, f"the trial's manifest records calibration hash {recorded}, but this calibration "
                              f"hashes to {calibration_hash}; refusing to re-grade it against another calibration: "
                              f"{_graded_with(recorded)}")
    if manifest and not (folder / "actions.jsonl").exists():
        return _zero(out, "actions.jsonl is missing: attendance cannot be checked, so the trial grades to zero")
    ledger = folder / "ledger.jsonl"
    if not ledger.exists():
        return _zero(out, "ledger.jsonl is missing: the score cannot be checked and grades to zero")
    try:
        net, capital = ledger_totals(ledger)
    except OSError as exc:
        return _zero(out, f"ledger.jsonl unreadable, so the trial grades to zero: {exc}")
    except ArtifactError as exc:
        return _zero(out, f"{exc.message}, so the trial grades to zero")
    raw = net - capital
    for name, mine in (("net_assets", net), ("business_raw", raw)):
        theirs = _dec(stored.get(name))
        if theirs is None or abs(theirs - mine) > MONEY_TOLERANCE:
            out.problems.append(f"{name}: score.json says {theirs}, the ledger gives {mine}")
    zero, scale = _dec(cell["business_zero_raw"]), _dec(cell["business_scale"])
    out.business = business_normalized(raw, zero, scale)
    rates = [_dec(stored.get(k)) for k in ("on_time_rate", "return_handled_rate")]
    defined = [r for r in rates if r is not None]
    out.reliability = (sum(defined, Decimal(0)) / len(defined)).quantize(Decimal("0.000001")) if defined \
        else Decimal(0)
    continuity = _dec(stored.get("continuity")) or Decimal(0)
    attended = _attended_windows(folder / "actions.jsonl")
    total = stored.get("windows_total") or summary.get("windows_total")
    if total is not None:
        total = whole_number(total, "windows_total")
    if attended is not None and total:
        derived = (Decimal(attended) / Decimal(total)).quantize(Decimal("0.000001"))
        if abs(derived - continuity) > TOLERANCE:
            out.problems.append(f"continuity: score.json says {continuity}, the action log attends {attended} "
                                f"of {total} windows ({derived})")
    for rate, num, den in (("on_time_rate", "orders_on_time", "orders_due"),
                           ("return_handled_rate", "return_credit", "returns_due")):
        if stored.get(den):
            derived = (finite_number(stored.get(num), f"score.json {num}")
                       / finite_number(stored[den], f"score.json {den}")).quantize(Decimal("0.000001"))
            stated = _dec(stored.get(rate))
            if stated is None or abs(derived - stated) > TOLERANCE:
                out.problems.append(f"{rate}: score.json says {stored.get(rate)}, its own counts give {derived}")
    out.composite = compose(out.business, out.reliability, continuity)
    out.passed = out.composite >= Decimal(str(cell["threshold"]))
    for name, mine in (("business", out.business), ("reliability", out.reliability),
                       ("reward_composite", out.composite)):
        theirs = _dec(stored.get(name))
        if theirs is None or abs(theirs - mine) > TOLERANCE:
            out.problems.append(f"{name}: score.json says {theirs}, re-grading gives {mine}")
    return out

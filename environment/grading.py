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

    @property
    def reproduces(self) -> bool:
        return not self.problems

    def as_json(self) -> dict:
        f = (lambda x: None if x is None else float(x))
        return {"path": self.path, "task": self.task, "seed": self.seed, "business": f(self.business),
                "reliability": f(self.reliability), "reward_composite": f(self.composite), "pass": self.passed,
                "reproduces": self.reproduces, "problems": self.problems}


def _dec(value) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def ledger_totals(path: Path) -> tuple[Decimal, Decimal]:
    """(net assets, opening capital) in dollars from a ledger file."""
    net = 0
    capital = 0
    with path.open() as fh:
        for line in fh:
            if not line.strip():
                continue
            entry = json.loads(line)
            amount = int(entry["amount_cents"])
            net += amount
            if entry["kind"] in ("opening_cash", "opening_deposit"):
                capital += amount
    return Decimal(net) / 100, Decimal(capital) / 100


def _zero(out: Regrade, problem: str) -> Regrade:
    """A trial whose artifacts cannot be checked grades to numeric zero, with the reason."""
    out.problems.append(problem)
    out.business = out.reliability = out.composite = Decimal(0)
    out.passed = False
    return out


def _attended_windows(path: Path) -> int | None:
    """Windows in which the action log spent at least one operation (None without a log)."""
    if not path.exists():
        return None
    windows = set()
    with path.open() as fh:
        for line in fh:
            if line.strip():
                entry = json.loads(line)
                if entry.get("op", False):
                    windows.add(entry["window"])
    return len(windows)


def regrade(folder: str | Path, calibration: dict, calibration_hash: str | None = None) -> Regrade:
    folder = Path(folder)
    out = Regrade(str(folder))
    try:
        stored = json.loads((folder / "score.json").read_text())
    except (OSError, ValueError) as exc:
        out.problems.append(f"score.json unreadable: {exc}")
        return out
    summary = {}
    if (folder / "summary.json").exists():
        summary = json.loads((folder / "summary.json").read_text())
    out.task = stored.get("task") or summary.get("task")
    out.seed = stored.get("seed")
    cell = cell_of(calibration, out.task, out.seed) if out.task is not None and out.seed is not None else None
    if cell is None:
        out.problems.append(f"no calibration cell for task {out.task!r} seed {out.seed!r}")
        return out
    manifest_path = folder / "manifest.json"
    if manifest_path.exists() and calibration_hash is not None:
        try:
            recorded = json.loads(manifest_path.read_text()).get("calibration_hash")
        except ValueError as exc:
            return _zero(out, f"manifest.json unreadable: {exc}")
        if recorded is not None and recorded != calibration_hash:
            return _zero(out, f"the trial's manifest records calibration hash {recorded}, but this calibration "
                              f"hashes to {calibration_hash}; refusing to re-grade it against another calibration")
    if manifest_path.exists() and not (folder / "actions.jsonl").exists():
        return _zero(out, "actions.jsonl is missing: attendance cannot be checked, so the trial grades to zero")
    ledger = folder / "ledger.jsonl"
    if not ledger.exists():
        return _zero(out, "ledger.jsonl is missing: the score cannot be checked and grades to zero")
    try:
        net, capital = ledger_totals(ledger)
    except (OSError, ValueError, KeyError) as exc:
        return _zero(out, f"ledger.jsonl unreadable, so the trial grades to zero: {exc}")
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
    if attended is not None and total:
        derived = (Decimal(attended) / Decimal(total)).quantize(Decimal("0.000001"))
        if abs(derived - continuity) > TOLERANCE:
            out.problems.append(f"continuity: score.json says {continuity}, the action log attends {attended} "
                                f"of {total} windows ({derived})")
    for rate, num, den in (("on_time_rate", "orders_on_time", "orders_due"),
                           ("return_handled_rate", "return_credit", "returns_due")):
        if stored.get(den):
            derived = (_dec(stored.get(num)) / _dec(stored[den])).quantize(Decimal("0.000001"))
            if _dec(stored.get(rate)) is None or abs(derived - _dec(stored[rate])) > TOLERANCE:
                out.problems.append(f"{rate}: score.json says {stored.get(rate)}, its own counts give {derived}")
    out.composite = compose(out.business, out.reliability, continuity)
    out.passed = out.composite >= _dec(cell["threshold"])
    for name, mine in (("business", out.business), ("reliability", out.reliability),
                       ("reward_composite", out.composite)):
        theirs = _dec(stored.get(name))
        if theirs is None or abs(theirs - mine) > TOLERANCE:
            out.problems.append(f"{name}: score.json says {theirs}, re-grading gives {mine}")
    return out

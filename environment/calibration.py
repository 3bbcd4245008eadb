"""Calibration: the anchor ladder of each task-seed cell, its constants and gates.

For every cell the six anchors play the real tool surface; their results set
the business zero (the better of do-nothing and absentee), the business scale
(the better judgment anchor lands at 0.70), the oracle and the pass threshold,
with the release's exact rounding.  Five gates must hold on every cell; a gate
failure names the cell and the gate.  The fifth plays a scripted check that is not
an anchor, a diligence-only clerk (ship what has stock, refund in full, never buy
or reprice), and fails the cell when diligence alone reaches the threshold; its
composite is kept in the cell as ``diligence_composite``.  The judgment gap is measured
against the stronger of the two zero-judgment plays, blast-list and that clerk.  The
file keeps the release's layout, ``tasks -> task id -> seed -> cell``, so the release's
re-grader reads it as is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from .anchors import ANCHORS, run_policy
from .engine import Episode
from .engine.settlement import Score, business_normalized, compose, score
from .errors import ErrorCode, StoreBenchError
from .suite import PUBLIC_CALIBRATION
from .tasks import Task, get_task
from .world.model import World

HONEST_TRADING = ("blast-list", "rule-based", "smart-triage")
JUDGMENT = ("rule-based", "smart-triage")
TIE = Decimal("0.02")
JUDGMENT_GAP = Decimal("0.03")  # the release's own cells clear blast-list by as little as 0.037
FLAP_MARGIN = Decimal("0.005")  # rounding the threshold to cents of score can eat half of the tie rule's 0.01
TARGET = Decimal("0.70")


class CalibrationError(StoreBenchError):
    """A calibration file or cell that cannot be used: ``problem`` says what is wrong, ``advice``
    (may be empty) what to do at the command line; the message is both.  A file's problem
    names it in ``details["path"]``."""

    code = ErrorCode.CALIBRATION_INVALID

    def __init__(self, problem: str, advice: str = "", **details: Any) -> None:
        super().__init__(f"{problem}; {advice}" if advice else problem, **details)
        self.problem = problem
        self.advice = advice


def _r2(x: Decimal) -> Decimal:
    return x.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


def _num(x: Decimal) -> float:
    return float(x)


@dataclass(frozen=True, slots=True)
class GateFailure:
    task: str
    seed: int
    gate: str
    detail: str

    def __str__(self) -> str:
        return f"{self.task} seed {self.seed}: gate {self.gate} failed: {self.detail}"


def run_anchor(task: Task, seed: int, name: str, world: World | None = None) -> tuple[Episode, Score]:
    ep = Episode(task, seed, world)
    run_policy(ep, name)
    return ep, score(ep)


def threshold_of(composites: dict[str, Decimal]) -> Decimal:
    top = sorted((composites[a] for a in HONEST_TRADING), reverse=True)
    a, b = top[0], top[1]
    if a - b <= TIE:
        return b - Decimal("0.01")  # the release keeps this one unrounded
    return _r2((a + b) / 2)


def calibrate_cell(task: Task, seed: int, world: World | None = None) -> dict[str, Any]:
    raw = {name: run_anchor(task, seed, name, world)[1] for name in ANCHORS}
    zero = max(raw["do-nothing"].business_raw, raw["absentee"].business_raw)
    oracle = max(JUDGMENT, key=lambda a: (raw[a].business_raw, a == "smart-triage"))
    scale = _r2((raw[oracle].business_raw - zero) / TARGET)
    anchors = {}
    composites = {}
    for name, s in raw.items():
        business = business_normalized(s.business_raw, zero, scale)
        composites[name] = compose(business, s.reliability, s.continuity)
        anchors[name] = {"business_raw": _num(s.business_raw), "business_normalized": _num(business),
                         "reward_composite": _num(composites[name]), "reliability": _num(s.reliability),
                         "continuity": _num(s.continuity), "net_assets": _num(s.net_assets)}
    diligence = run_anchor(task, seed, "diligence", world)[1]
    diligence_composite = compose(business_normalized(diligence.business_raw, zero, scale), diligence.reliability,
                                  diligence.continuity)
    return {"seed": seed, "business_zero_raw": _num(zero), "business_scale": _num(scale), "oracle": oracle,
            "threshold": _num(threshold_of(composites)), "anchors": anchors,
            "diligence_composite": _num(diligence_composite)}


def check_gates(task_id: str, cell: dict[str, Any]) -> list[GateFailure]:
    seed = cell["seed"]
    comp = {name: Decimal(str(a["reward_composite"])) for name, a in cell["anchors"].items()}
    thr = Decimal(str(cell["threshold"]))
    diligence = Decimal(str(cell["diligence_composite"])) if "diligence_composite" in cell else None
    failures = []
    floor = max(comp["blast-list"], comp["absentee"], comp["do-nothing"])
    for judge in JUDGMENT:
        if comp[judge] <= floor:
            failures.append(GateFailure(task_id, seed, "ordering", f"{judge} {comp[judge]} does not outscore "
                                        f"blast-list/absentee/do-nothing (best {floor})"))
    best = max(comp[j] for j in JUDGMENT)
    play, strongest = "blast-list", comp["blast-list"]  # the strongest zero-judgment play
    if diligence is not None and diligence > strongest:
        play, strongest = "the diligence clerk", diligence
    if best - strongest < JUDGMENT_GAP:
        failures.append(GateFailure(task_id, seed, "judgment-gap", f"best judgment anchor {best} clears {play} "
                                    f"{strongest} by less than {JUDGMENT_GAP}"))
    ladder = sorted(comp[a] for a in HONEST_TRADING)
    above = min((c for c in ladder if c >= thr), default=None)
    below = max((c for c in ladder if c < thr), default=None)
    if above is None or above - thr < FLAP_MARGIN or (below is not None and thr - below < FLAP_MARGIN):
        failures.append(GateFailure(task_id, seed, "flap-margin", f"threshold {thr} is within {FLAP_MARGIN} of an "
                                    f"adjacent anchor (above {above}, below {below})"))
    honest = [comp[a] for a in ("absentee", *HONEST_TRADING)]
    if comp["exploiter"] >= min(honest):
        failures.append(GateFailure(task_id, seed, "exploit-suppression", f"exploiter {comp['exploiter']} is not "
                                    f"below every honest anchor (lowest {min(honest)})"))
    if diligence is not None and diligence >= thr:
        failures.append(GateFailure(task_id, seed, "diligence", f"a diligence-only clerk scores "
                                    f"{cell['diligence_composite']}, at or above the threshold {thr}"))
    return failures


FROM_FILE = "calibration file"  # where a calibration file's cell came from (api.cell_constants' source)


def unchecked_gates(task_id: str, cell: dict[str, Any], source: str = "") -> list[str]:
    """The gates a cell calibrated on the spot fails, each as ``"gate: detail"`` ([] when it
    passes them all, and for a cell whose ``source`` is a calibration file: those passed them
    when the file was written, and may hold only the grading constants).  A cell calibrated on
    the spot (a seed outside the file) was never checked, and where a gate fails its composite
    may rank volume play above judgment, so its pass says little."""
    if source == FROM_FILE:
        return []
    return [f"{f.gate}: {f.detail}" for f in check_gates(task_id, cell)]


GATES_NOTE = ("this cell was calibrated on the spot and fails the calibration's gates, so its composite may rank "
              "volume play above judgment and its pass says little: for results, play the cells of a calibration "
              "file (the shipped calibration/public.json has seeds 7, 11 and 13)")


def document(cells: dict[str, dict[int, dict[str, Any]]], world_hash: str) -> dict[str, Any]:
    return {"world_hash": world_hash,
            "tasks": {tid: {str(seed): cells[tid][seed] for seed in sorted(cells[tid])} for tid in cells}}


def dump(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def file_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_calibration(doc: dict[str, Any], path: str | Path) -> str:
    path = Path(path)
    data = dump(doc)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a failed write leaves nothing beside the file
        raise
    digest = file_hash(data)
    path.with_name(path.name + ".sha256").write_text(digest + "\n")
    return digest


WRITTEN_BY = f"give a file written by `storebench calibrate` (the shipped one is {PUBLIC_CALIBRATION})"
WHICH_FILE = f"{WRITTEN_BY}, or leave the option out to calibrate the cell on the spot where the command allows it"


def load_calibration(path: str | Path, *, required: bool = False) -> tuple[dict[str, Any], str]:
    """A calibration file and its hash; refused if it is not the release's layout, or if
    the side file ``<name>.sha256`` written beside it records another hash.  ``required``:
    the caller cannot do without one (regrade), so the refusal does not offer leaving it out."""
    path = Path(path)
    which_file = WRITTEN_BY if required else WHICH_FILE

    def refused(problem: str, advice: str = "") -> CalibrationError:
        return CalibrationError(f"{path}: {problem}", advice, path=str(path))

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise refused(f"cannot read the calibration file ({exc.strerror})", which_file) from exc
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise refused(f"not a calibration file (not JSON: {exc})", which_file) from exc
    side = path.with_name(path.name + ".sha256")
    if side.is_file() and side.read_text().strip() != file_hash(data):
        raise refused(f"the file does not match its recorded hash in {side.name} "
                      f"({side.read_text().strip()[:80]} recorded, {file_hash(data)} read)")
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), dict):
        raise refused("not a calibration file (no 'tasks' table)", which_file)
    for tid, seeds in doc["tasks"].items():
        if not isinstance(seeds, dict):
            raise refused(f"tasks.{tid} must map seeds to cells")
        for seed, cell in seeds.items():
            for key in ("business_zero_raw", "business_scale", "threshold"):
                if not isinstance(cell, dict) or not isinstance(cell.get(key), int | float):
                    raise refused(f"tasks.{tid}.{seed}.{key} is missing or not a number")
    return doc, file_hash(data)


def cell_of(doc: dict[str, Any], task_id: str, seed: int) -> dict[str, Any] | None:
    cell: dict[str, Any] | None = doc["tasks"].get(task_id, {}).get(str(seed))
    return cell


def cells_for(task_ids: Iterable[str], seeds: Iterable[int]) -> list[tuple[str, int]]:
    out = []
    for tid in task_ids:
        get_task(tid)  # unknown ids fail before any work starts
        out += [(tid, int(s)) for s in seeds]
    return out

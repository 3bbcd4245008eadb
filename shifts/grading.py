"""Grading a shift: the calibration cell it is graded against, and its components.

The calibration file is the site's (``settings.STOREBENCH_CALIBRATION``, default
``calibration/public.json``), made on the world this code generates; its hash is recorded
with every graded shift.  A cell
missing from the file (the practice task's, which is never in it) is calibrated on the
spot against its own anchors, once per process and task file version (about a second
for the six-window practice store).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

from environment.api import cell_constants, grade
from environment.calibration import CalibrationError, cell_of, load_calibration
from environment.engine import Episode
from environment.world import world_hash

from .installed import task_of

# The score components a participant's end page shows, in its words; the studies pages name
# them the same way.
COMPONENT_NAMES = {
    "business": "Business",
    "reliability": "Reliability",
    "on_time_rate": "Orders shipped on time",
    "return_handled_rate": "Returns handled",
    "continuity": "Continuity",
    "reward_composite": "Composite score",
    "net_assets": "Net assets after settlement",
}


def _path() -> Path:
    return Path(getattr(settings, "STOREBENCH_CALIBRATION", settings.BASE_DIR / "calibration" / "public.json"))


@cache
def _calibration() -> tuple[dict, str] | None:
    path = _path()
    return load_calibration(path) if path.exists() else None


def grading_cell(task_id: str, seed: int) -> tuple[dict, str, str]:
    """The calibration cell, where it came from, and the calibration file's hash ("" if none).

    A cell of a file made on another world than this code generates is refused
    (``CalibrationError``, a 503 for the request): its zeros and thresholds would grade stores
    that no longer exist. A cell the file lacks (the practice task's) is calibrated here."""
    calibration = _calibration()
    if calibration is not None:
        doc, digest = calibration
        cell = cell_of(doc, task_id, seed)
        if cell is not None:
            made_on, runs = doc.get("world_hash"), world_hash()
            if made_on != runs:
                raise CalibrationError(f"{_path()} was calibrated on world {made_on}, but this site runs world "
                                       f"{runs}", path=str(_path()))
            return cell, "calibration file", digest
    task = task_of(task_id)
    cell, source = _on_the_spot(task_id, seed, task.file_hash)
    return cell, source, ""


@cache
def _on_the_spot(task_id: str, seed: int, file_hash: str) -> tuple[dict, str]:
    """The cell calibrated for this task file version (``file_hash`` is the cache key)."""
    return cell_constants(task_of(task_id), seed, None)


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


@dataclass(frozen=True)
class Graded:
    composite: Decimal
    passed: bool
    components: dict  # Decimals as strings, plus the threshold
    source: str
    digest: str


def grade_episode(episode: Episode, task_id: str, seed: int) -> Graded:
    """Grade ``episode`` (stopping it if it is still open) against the shift's cell."""
    cell, source, digest = grading_cell(task_id, seed)
    result = grade(episode, cell)
    components = {k: _plain(v) for k, v in asdict(result).items()}
    components["threshold"] = str(cell["threshold"])
    composite = result.reward_composite
    return Graded(composite=composite, passed=composite >= Decimal(str(cell["threshold"])),
                  components=components, source=source, digest=digest)

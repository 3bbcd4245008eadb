"""The Python API for one episode, the layer later front ends build on.

    from environment.api import arm
    ep = arm("steady", 7)
    result = ep.call("list_orders", {"page_size": 20})
    print(result.header); print(result.data)
    ...
    ep.stop()                      # or play to the horizon
    s = grade(ep, cell_of(calibration, "steady", 7))  # business, reliability, composite, pass
    ep.ledger.to_jsonl()           # the ledger; ep.dense_rewards() the per-window reward

:func:`cell_constants` finds the business zero and scale of a cell: from a
calibration file when one is given, otherwise by calibrating the cell on the spot.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .calibration import FROM_FILE, CalibrationError, calibrate_cell, cell_of
from .engine import Episode
from .engine.settlement import Score, score
from .tasks import Task, get_task
from .world import load_world


def arm(task: str | Task, seed: int, *, record: bool = False) -> Episode:
    """A fresh episode; ``record`` keeps every tool result as returned (the observation stream)."""
    return Episode(task if isinstance(task, Task) else get_task(task), seed, load_world(), record=record)


def cell_constants(task: str | Task, seed: int, calibration: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
    """The cell's grading constants from ``calibration``, else calibrated on the spot; with where they came from."""
    task = task if isinstance(task, Task) else get_task(task)
    cell = cell_of(calibration, task.id, seed) if calibration else None
    if cell is not None:
        return cell, FROM_FILE
    return calibrate_cell(task, seed, load_world()), "calibrated for this cell on the spot"


def grade(ep: Episode, cell: dict[str, Any] | None) -> Score:
    """Settle ``ep`` if it is still open and score it with the calibration ``cell``'s constants."""
    if cell is None:
        raise CalibrationError(f"no calibration cell: grading {ep.task.id} seed {ep.seed} needs its calibration "
                               "constants", "give cell_of(calibration, task, seed) for a cell the calibration has, "
                               "or cell_constants(task, seed, calibration)[0] to calibrate it on the spot",
                               task=ep.task.id, seed=ep.seed)
    if not ep.over:
        ep.stop()
    return score(ep, Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))

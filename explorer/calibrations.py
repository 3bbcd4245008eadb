"""Which calibration a trial is judged against.

The known calibration files are ``settings.EXPLORER_CALIBRATIONS`` (by default
``calibration/public.json`` and, when present, ``calibration/held-out.json``).
A trial's manifest names its calibration by hash; the file with that hash is
used.  A trial whose cell was calibrated on the spot, or whose hash matches no
known file, is shown against the first known file that has its cell, and the
label says so.  The cell is copied onto the trial at import, so a later
recalibration does not move an imported trial's threshold.  A known file that
cannot be used (unreadable, truncated, or not matching its ``.sha256`` side file)
is left out with its reason (:func:`problems`), and the label of a trial it would
have judged says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from environment.calibration import CalibrationError, cell_of, load_calibration


@dataclass(frozen=True)
class CellChoice:
    cell: dict | None
    label: str
    exact: bool = False  # the cell of the very file the trial was graded with (its calibration hash)


def known_files() -> list[Path]:
    return [Path(p) for p in settings.EXPLORER_CALIBRATIONS if Path(p).is_file()]


def display_name(path: Path) -> str:
    try:
        return str(path.relative_to(settings.BASE_DIR))
    except ValueError:
        return str(path)


def load(path: Path) -> tuple[dict, str] | None:
    try:
        return load_calibration(path)
    except CalibrationError:
        return None


def problems() -> list[str]:
    """One line per known calibration file that cannot be used, naming it and why."""
    out = []
    for path in known_files():
        try:
            load_calibration(path)
        except CalibrationError as exc:
            out.append(f"calibration {display_name(path)} left out: {exc.problem}")
    return out


def ladder_file() -> Path:
    return Path(settings.EXPLORER_CALIBRATIONS[0])


def choose_cell(task_id: str, seed: int, calibration_hash: str | None) -> CellChoice:
    loaded = []
    for path in known_files():
        found = load(path)
        if found is not None:
            loaded.append((path, *found))
    for path, doc, digest in loaded:
        if calibration_hash and digest == calibration_hash and cell_of(doc, task_id, seed):
            return CellChoice(cell_of(doc, task_id, seed), display_name(path), exact=True)
    why = ("the trial calibrated its cell on the spot" if not calibration_hash
           else "the trial's calibration hash matches no known calibration file")
    refused = len(loaded) < len(known_files())
    if refused:
        why += "; a known calibration file could not be read (see import_trials' warnings)"
    for path, doc, _digest in loaded:
        if cell_of(doc, task_id, seed):
            return CellChoice(cell_of(doc, task_id, seed), f"{display_name(path)} ({why})")
    on_the_spot = ("; the trial calibrated it on the spot, and a trial folder does not record the threshold"
                   if not calibration_hash else "")
    unread = "; a known calibration file could not be read (see import_trials' warnings)" if refused else ""
    return CellChoice(None, f"no known calibration file that could be read has {task_id} seed {seed}{on_the_spot}"
                      f"{unread}" if refused else f"no known calibration file has {task_id} seed {seed}{on_the_spot}")

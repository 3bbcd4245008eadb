"""Held-out seeds live outside the repository.

The benchmark keeps two seeds back so scores on them cannot be tuned against.  Their
list and their calibration therefore never enter version control: they live in a
folder named by the ``STOREBENCH_HELDOUT`` environment variable, holding
``seeds.txt`` (one seed per line; ``#`` starts a comment) and, once calibrated,
``held-out.json``.  Without the variable there are no held-out seeds, and nothing
in the repository or the public calibration names them.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ErrorCode, StoreBenchError

HELDOUT_ENV = "STOREBENCH_HELDOUT"


class HeldOutError(StoreBenchError):
    code = ErrorCode.HELD_OUT_INVALID


def held_out_dir() -> Path | None:
    """The held-out folder named by the environment, or None when it is not set."""
    value = os.environ.get(HELDOUT_ENV, "").strip()
    return Path(value) if value else None


def held_out_seeds() -> tuple[int, ...]:
    """The held-out seeds from ``$STOREBENCH_HELDOUT/seeds.txt`` (none without the variable)."""
    folder = held_out_dir()
    if folder is None:
        return ()
    path = folder / "seeds.txt"
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise HeldOutError(f"{HELDOUT_ENV} names {folder}, but {path} cannot be read ({exc.strerror}); "
                           "write one held-out seed per line there, or unset the variable") from exc
    seeds = []
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not text.isdigit():
            raise HeldOutError(f"{path} line {n}: {text!r} is not a seed (a whole number)")
        seeds.append(int(text))
    return tuple(seeds)

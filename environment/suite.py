"""The suite a trial was played in, named by content: ``storebench-<version>+<digest>``.

A suite is what makes two scores comparable: the bundled task files (their
relative paths and bytes), the world (its recorded content hash) and the public
calibration file (its bytes).  :func:`suite_id` hashes exactly those, so a
changed event script, a regenerated world or a recalibration gives a new id even
when the package version stays; every trial manifest and score carries it.

The public calibration is looked up beside the ``environment`` package, in
``calibration/public.json``: the folder sits next to the package in a checkout,
and the wheel installs it there as package data, so an installed copy grades
sessions with the same cells as the checkout.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import __version__

__all__ = ["PUBLIC_CALIBRATION", "public_calibration", "suite_digest", "suite_id"]

PUBLIC_CALIBRATION = Path(__file__).resolve().parent.parent / "calibration" / "public.json"


def _task_files() -> list[Path]:
    from .tasks.loader import FILES

    return sorted(FILES.glob("*/*.toml"))


@lru_cache(maxsize=1)
def suite_digest() -> str:
    """SHA-256 over the task files, the recorded world hash and the public calibration."""
    from .tasks.loader import FILES
    from .world.loader import RECORDED_HASH_FILE

    digest = hashlib.sha256()
    for path in _task_files():
        digest.update(f"task {path.relative_to(FILES).as_posix()}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(b"world\0" + RECORDED_HASH_FILE.read_bytes().strip())
    calibration = PUBLIC_CALIBRATION.read_bytes() if PUBLIC_CALIBRATION.exists() else b""
    digest.update(b"calibration\0" + hashlib.sha256(calibration).digest())
    return digest.hexdigest()


def suite_id() -> str:
    return f"storebench-{__version__}+{suite_digest()[:16]}"


def public_calibration() -> tuple[dict[str, Any] | None, str | None]:
    """The bundled public calibration and its hash, or ``(None, None)`` if it is not installed."""
    from .calibration import load_calibration

    if not PUBLIC_CALIBRATION.exists():
        return None, None
    return load_calibration(PUBLIC_CALIBRATION)

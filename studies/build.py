"""The build identifier recorded on every attempt: which code the shift ran on.

``environment.__version__`` alone does not tell two images of one release apart
(the paper's retained shifts span four image releases), so the identifier is
``<source commit>+<hash of the dependency files>``: the commit from
``STOREBENCH_BUILD_COMMIT`` (set by an image build) or ``git rev-parse HEAD`` in the
source tree, and the first 12 hex digits of a SHA-256 over the lock file(s) found
(``uv.lock``, ``requirements.lock``, ``poetry.lock``) and ``pyproject.toml``.
Computed once per process.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from functools import lru_cache
from pathlib import Path

from django.conf import settings

DEPENDENCY_FILES = ("uv.lock", "requirements.lock", "poetry.lock", "pyproject.toml")


def source_commit(root: Path) -> str:
    commit = os.environ.get("STOREBENCH_BUILD_COMMIT", "").strip()
    if commit:
        return commit[:40]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip()[:40] if out.returncode == 0 and out.stdout.strip() else "unknown"


def dependency_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for name in DEPENDENCY_FILES:
        path = root / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


@lru_cache(maxsize=1)
def build_id() -> str:
    root = Path(settings.BASE_DIR)
    return f"{source_commit(root)}+{dependency_hash(root)}"

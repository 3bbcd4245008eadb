"""The whole bench in one run: the core's figures (:mod:`environment.bench`) plus the
adapters' round trips, each set against its target in the operations spec.

``python -m benchmarks [--quick] [--json] [--participants N] [--mcp-calls N]``.

The adapters' parts run as subprocesses whose last stdout line is JSON (so a part that
cannot run is reported as unavailable with its reason): ``benchmarks.mcp.bench``
(``store_status`` against a no-op MCP tool over stdio and streamable HTTP) and
``manage.py bench_console`` (a console tool page against a minimal Django view under
concurrent participants).
"""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from environment.bench import REPO, _env, _run_json, bench_all, targets

_MCP_BENCH = (
    "import json, sys\n"
    "from benchmarks.mcp import bench\n"
    "print(json.dumps(bench(n=int(sys.argv[1]), out=sys.stderr)))\n"
)


def bench_mcp(calls: int = 300, timeout: float = 600) -> dict:
    """``benchmarks.mcp.bench`` in a subprocess: ``store_status`` against a no-op MCP
    tool, over streamable HTTP and over stdio, medians and ratios from one run."""
    result = _run_json([sys.executable, "-c", _MCP_BENCH, str(calls)], timeout)
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in result.items()}


def bench_console(participants: int = 20, calls: int = 10, timeout: float = 900) -> dict:
    """``manage.py bench_console``: a console tool page against a minimal Django view under
    ``participants`` concurrent participants.  On the database ``DATABASE_URL`` names;
    without one, on a fresh SQLite file in a temporary folder (migrated first), so the
    user's own database is never touched.  Without ``DJANGO_SECRET_KEY`` the bench signs
    its own sessions with a key made for the run (its users are deleted afterwards)."""
    manage = REPO / "manage.py"
    if not manage.exists():
        return {"unavailable": "manage.py not found: the console is not installed beside the environment"}
    with tempfile.TemporaryDirectory(prefix="storebench-bench-") as tmp:
        extra = {}
        if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
            extra = {"DATABASE_URL": "", "STOREBENCH_SQLITE_PATH": str(Path(tmp, "bench.sqlite3"))}
        if not os.environ.get("DJANGO_SECRET_KEY"):
            extra["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
        env = _env(**extra)
        env.pop("DJANGO_SETTINGS_MODULE", None)
        try:
            migrated = subprocess.run([sys.executable, str(manage), "migrate", "--noinput"], cwd=REPO, env=env,
                                      capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"unavailable": "migrating the bench database timed out"}
        if migrated.returncode != 0:
            tail = (migrated.stderr.strip().splitlines() or ["no output"])[-1]
            return {"unavailable": f"cannot migrate the bench database: {tail[:300]}"}
        result = _run_json([sys.executable, str(manage), "bench_console", "--participants", str(participants),
                            "--calls", str(calls), "--json"], timeout, env)
    if "unavailable" not in result:
        result["database"] = "postgresql" if not extra else "sqlite (temporary file)"
    return result



def bench_everything(repeats: int = 5, *, quick: bool = False, calibration: bool = True, participants: int = 20,
                     mcp_calls: int = 300, progress: Callable[[str], None] | None = None) -> dict:
    """The core's figures, then the MCP and console round trips, then the targets."""
    say = progress or (lambda _msg: None)
    figures = bench_all(repeats, quick=quick, calibration=calibration, progress=progress)
    say("MCP: store_status against a no-op tool, stdio and streamable HTTP")
    figures["mcp"] = bench_mcp(calls=100 if quick else mcp_calls)
    say(f"console: a tool page against a minimal view, {participants} participants")
    figures["console"] = bench_console(participants=participants, calls=5 if quick else 10)
    figures["targets"] = targets(figures)
    return figures

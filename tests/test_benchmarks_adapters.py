"""The adapters' benchmarks run (``benchmarks.mcp``, the suite's console part) and the MCP
command explains itself; the figures are never asserted."""
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.suite import bench_mcp

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_suite_times_store_status_against_a_no_op_tool_on_both_transports():
    result = bench_mcp(calls=5)
    assert "unavailable" not in result, result
    assert result["n"] == 5
    for transport in ("http", "stdio"):
        store, noop = result[f"{transport}_store_status_ms"], result[f"{transport}_noop_ms"]
        assert store > 0 and noop > 0
        assert result[f"{transport}_ratio"] == pytest.approx(store / noop, abs=0.01)


def test_the_command_refuses_a_count_below_one_and_names_it():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.mcp", "--calls", "0"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "--calls must be at least 1, not 0" in proc.stderr


def test_the_command_explains_itself():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.mcp", "--help"], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "no-op MCP tool" in proc.stdout and "legacy" in proc.stdout


@pytest.mark.slow
def test_the_suite_times_the_console_without_a_secret_of_the_callers(monkeypatch):
    from benchmarks.suite import bench_console

    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    result = bench_console(participants=1, calls=2)
    assert "unavailable" not in result, result
    assert result["errors"] == 0 and result["database"] == "sqlite (temporary file)"

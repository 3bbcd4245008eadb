"""The built wheel is the whole benchmark: installed outside the checkout, it runs an episode.

Builds the wheel (``pip wheel . --no-deps``), installs it in a fresh virtual environment in
a temporary folder (dependencies from the package index through pip's cache, plus
``/opt/wheels``), and from a working directory outside the checkout: prints a task's brief,
serves one episode over MCP on stdio to the SDK's client, and re-grades the trial folder
the session wrote against the calibration the wheel carries.  Slow (a venv and an install):
``pytest -m 'not slow'`` leaves it out.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from mcp import StdioServerParameters

from environment.brief import brief
from environment.suite import suite_id
from environment.tasks import get_task
from mcp_client.client import episode_client

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(root / "dist")],
                   cwd=REPO, check=True, capture_output=True)
    (wheel,) = (root / "dist").glob("storebench-*.whl")
    venv.create(root / "venv", with_pip=True)
    pip = [str(root / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)]
    if Path("/opt/wheels").is_dir():
        pip += ["--find-links", "/opt/wheels"]
    subprocess.run(pip, check=True, capture_output=True, cwd=root)
    return root


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")}


def test_the_wheel_carries_the_suite(installed):
    python = installed / "venv" / "bin" / "python"
    out = subprocess.run([str(python), "-c", "import environment, json; from environment.suite import suite_id, "
                          "PUBLIC_CALIBRATION; print(json.dumps([environment.__file__, suite_id(), "
                          "PUBLIC_CALIBRATION.is_file()]))"],
                         cwd=installed, env=clean_env(), capture_output=True, text=True, check=True)
    path, suite, has_calibration = json.loads(out.stdout)
    assert str(installed) in path and str(REPO) not in path
    assert suite == suite_id() and has_calibration
    shown = subprocess.run([str(installed / "venv" / "bin" / "storebench"), "tasks", "show", "steady", "--prompt"],
                           cwd=installed, env=clean_env(), capture_output=True, text=True, check=True)
    assert shown.stdout == brief(get_task("steady"))


def test_the_installed_wheel_runs_a_graded_episode_over_mcp(installed):
    command = str(installed / "venv" / "bin" / "storebench")
    trials = installed / "trials"
    params = StdioServerParameters(command=command, cwd=str(installed), env=clean_env(),
                                   args=["mcp", "--task", "short-runway", "--seed", "7", "--trials", str(trials),
                                         "--model", "none", "--harness", "wheel-test"])

    async def go():
        async with episode_client(params) as client:
            instructions = client.client.instructions
            calls = [await client.call("store_status"), await client.call("list_orders", {"page_size": 5}),
                     await client.call("end_window")]
            return instructions, calls

    instructions, calls = asyncio.run(go())
    assert instructions == brief(get_task("short-runway"))
    assert not any(c.is_error for c in calls)
    (folder,) = trials.iterdir()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["suite"] == suite_id() and manifest["calibration_hash"]
    calibration = json.loads(subprocess.run(
        [str(installed / "venv" / "bin" / "python"), "-c",
         "import json; from environment.suite import PUBLIC_CALIBRATION as p; print(json.dumps(str(p)))"],
        cwd=installed, env=clean_env(), capture_output=True, text=True, check=True).stdout)
    regraded = subprocess.run([command, "regrade", "--calibration", calibration, str(folder)], cwd=installed,
                              env=clean_env(), capture_output=True, text=True)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    replayed = subprocess.run([command, "replay", str(folder)], cwd=installed, env=clean_env(),
                              capture_output=True, text=True)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr

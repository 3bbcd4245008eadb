"""The service-backed stage (``make test-services``) runs what the servers can change.

With ``STOREBENCH_SERVICES_STAGE=1`` (tests/conftest.py), a test that uses Django's
database or is marked ``services`` is kept and one that touches no server is deselected.
"""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATABASE_TEST = "tests/test_shift_calls_store.py"
SERVICES_TEST = "tests/test_channel_layer.py"
ENGINE_TEST = "tests/test_world.py"


def collected(stage: str) -> list[str]:
    env = {**os.environ, "STOREBENCH_SERVICES_STAGE": stage}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "services or not services",
                           DATABASE_TEST, SERVICES_TEST, ENGINE_TEST],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return sorted({line.split("::")[0] for line in done.stdout.splitlines() if "::" in line})


def test_the_services_stage_keeps_database_and_service_tests_and_leaves_out_the_engines():
    assert collected("1") == [SERVICES_TEST, DATABASE_TEST]


def test_outside_the_services_stage_every_test_is_collected():
    assert collected("") == [SERVICES_TEST, DATABASE_TEST, ENGINE_TEST]

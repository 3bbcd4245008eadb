"""Determinism over every registered task (not a sample): the smart-triage anchor
writes byte-identical ledgers in two processes with different hash seeds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from environment.tasks import all_tasks

REPO = Path(__file__).resolve().parents[1]

HASH_EVERY_TASK = """
import hashlib, json
from environment.anchors import run_policy
from environment.api import arm
from environment.tasks import all_tasks
out = {}
for task in sorted(all_tasks(), key=lambda t: t.id):
    ep = arm(task.id, 7)
    run_policy(ep, "smart-triage")
    out[task.id] = [hashlib.sha256(ep.ledger.to_jsonl().encode()).hexdigest(), len(ep.ledger.entries)]
print(json.dumps(out))
"""


def _hashes(hashseed: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", HASH_EVERY_TASK], cwd=REPO, capture_output=True, text=True,
                          env={"PYTHONHASHSEED": hashseed, "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_every_registered_task_replays_byte_identically_across_processes():
    first, second = _hashes("1"), _hashes("4242")
    assert set(first) == {task.id for task in all_tasks()}  # every task, not a sample
    assert first == second
    assert all(entries > 0 for _digest, entries in first.values())

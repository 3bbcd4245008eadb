"""A calibration on real Celery workers survives workers killed mid-task.

The job is submitted by ``manage.py run_calibration`` (a subprocess, as an operator
would), and its cells run on ``celery -A config worker`` subprocesses on the broker
(RabbitMQ in CI) against PostgreSQL.  While a cell is running, the worker's pool
process is SIGKILLed (``reject_on_worker_lost`` sends the message back), and later
the whole worker with its children is SIGKILLed (``acks_late``: the broker
redelivers the unacknowledged message once the dead worker's connection closes).
A fresh worker finishes the job, and the file it gathers equals, byte for byte,
the one ``storebench calibrate`` writes for the same cells without interruption.
"""
from __future__ import annotations

import os
import signal
import time

import pytest
from serverprocs import BIN, children, server_env, wait_for

from environment.cli import main as storebench

pytestmark = pytest.mark.services

TASKS, SEEDS = ["steady", "trade-war"], [7, 11, 13]


def _worker(processes, env, n):
    return processes.start([str(BIN / "celery"), "-A", "config", "worker", "--pool=prefork", "--concurrency=1",
                            "--loglevel=INFO", "-n", f"killtest{n}@%h", "--without-gossip", "--without-mingle",
                            "--without-heartbeat"], env, f"worker{n}")


def _running_item(job_id):
    from jobs.models import JobItem

    return JobItem.objects.filter(job_id=job_id, status=JobItem.Status.RUNNING).first()


def test_worker_killed_mid_cell_loses_nothing(live_database, broker_up, processes, tmp_path):
    from jobs.models import Job, JobItem

    started = time.monotonic()
    env = server_env(live_database)
    out = tmp_path / "jobs" / "cal.json"
    out.parent.mkdir()
    submit = processes.start([str(BIN / "python"), "manage.py", "run_calibration", "--tasks", *TASKS,
                              "--seeds", *map(str, SEEDS), "--out", str(out), "--no-wait"], env, "submit")
    assert submit.popen.wait(timeout=120) == 0, submit.output()
    job = wait_for(lambda: Job.objects.filter(kind=Job.Kind.CALIBRATION).first(), 10, "the job row")
    assert job.total == len(TASKS) * len(SEEDS)

    # Kill 1: only the pool process running the cell (the worker itself lives on).
    worker = _worker(processes, env, 1)
    victim = wait_for(lambda: _running_item(job.pk), 120, "a running cell", worker)
    time.sleep(0.3)
    pool = children(worker.pid)
    assert pool, "the prefork worker has no pool process"
    for pid in pool:
        os.kill(pid, signal.SIGKILL)
    victim.refresh_from_db()
    assert victim.status == JobItem.Status.RUNNING, "the cell finished before the kill; nothing was tested"
    wait_for(lambda: JobItem.objects.get(pk=victim.pk).attempts >= 2, 120,
             "the killed cell to be delivered again", worker)

    # Kill 2: the whole worker with its children, while a cell is running.
    wait_for(lambda: _running_item(job.pk), 120, "a running cell", worker)
    time.sleep(0.3)
    second = _running_item(job.pk)
    worker.kill(signal.SIGKILL)
    assert not worker.alive()
    killed_at = JobItem.objects.get(pk=second.pk) if second else None

    # A new worker picks everything up.
    _worker(processes, env, 2)
    wait_for(lambda: Job.objects.get(pk=job.pk).finished, 300, "the job to finish", processes[-1])
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    items = list(job.items.all())
    assert all(item.status == JobItem.Status.DONE for item in items)
    redelivered = [item.key for item in items if item.attempts >= 2]
    assert victim.key in redelivered
    if killed_at is not None and killed_at.status == JobItem.Status.RUNNING:
        assert killed_at.key in redelivered

    reference = tmp_path / "cli" / "cal.json"
    reference.parent.mkdir()
    assert storebench(["calibrate", "--tasks", *TASKS, "--seeds", *map(str, SEEDS), "--out", str(reference)]) == 0
    assert out.read_bytes() == reference.read_bytes()
    assert (out.parent / "cal.json.sha256").read_bytes() == (reference.parent / "cal.json.sha256").read_bytes()
    assert job.result_hash == (reference.parent / "cal.json.sha256").read_text().strip()
    print(f"\nworker kill test: {len(items)} cells, 2 kills, redelivered {redelivered}, "
          f"attempts {sum(i.attempts for i in items)}, {time.monotonic() - started:.1f} s")

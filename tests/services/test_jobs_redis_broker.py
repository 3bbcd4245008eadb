"""Celery on a Redis broker, end to end: a calibration job submitted by the management
command runs on a real worker consuming Redis, against PostgreSQL, and gathers the
same file as ``storebench calibrate`` (the RabbitMQ path, with kills, is in
``test_jobs_worker_kill``)."""
from __future__ import annotations

import os

import pytest
from serverprocs import BIN, endpoint, server_env

from environment.cli import main as storebench

pytestmark = pytest.mark.services


def test_calibration_on_a_redis_broker(live_database, require_service, processes, tmp_path):
    from jobs.models import Job

    redis = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    require_service("Redis", *endpoint("REDIS_URL", "127.0.0.1", 6379))
    broker = redis.rsplit("/", 1)[0] + "/7"  # a database of its own
    env = server_env(live_database, CELERY_BROKER_URL=broker)
    out = tmp_path / "cal.json"
    worker = processes.start([str(BIN / "celery"), "-A", "config", "worker", "--pool=solo", "--loglevel=INFO",
                              "-n", "redistest@%h", "--without-gossip", "--without-mingle"], env, "worker")
    submit = processes.start([str(BIN / "python"), "manage.py", "run_calibration", "--tasks", "counter-punch",
                              "--seeds", "7", "11", "--out", str(out), "--timeout", "180"], env, "submit")
    assert submit.popen.wait(timeout=200) == 0, submit.output() + worker.output()[-2000:]
    assert "[2/2] done" in submit.output()
    job = Job.objects.get()
    assert job.status == Job.Status.DONE and job.done == job.total == 2
    reference = tmp_path / "ref" / "cal.json"
    reference.parent.mkdir()
    assert storebench(["calibrate", "--tasks", "counter-punch", "--seeds", "7", "11", "--out", str(reference)]) == 0
    assert out.read_bytes() == reference.read_bytes()
    assert "jobs.tasks.run_calibration_cell" in worker.output()  # the worker, not the submitter, ran them

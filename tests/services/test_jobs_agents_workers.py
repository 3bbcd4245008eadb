"""Model-trial batches on real services: ``manage.py run_agents`` submits from a process without
the API key, a Celery worker consuming Redis (database 11) against PostgreSQL plays both cells
with the key from its own environment, and the key is in neither the database nor the folders.
A worker killed while it waits for the model: the cell is played again, once, by another worker,
into a clean folder (on the suite's broker, RabbitMQ under ``make test-services``).  A cell that
fails on a worker leaves the other to play, and ``run_agents --retry`` plays it again."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import chat_stub
import pytest
from serverprocs import BIN, endpoint, server_env, wait_for
from test_jobs_agents import TASK, end_window

pytestmark = pytest.mark.services

KEY = "sk-services-0123456789-never-stored"


def test_a_worker_on_redis_plays_a_model_batch_with_the_key_from_its_own_environment(
        live_database, require_service, processes, tmp_path):
    from jobs.models import Job

    redis = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    require_service("Redis", *endpoint("REDIS_URL", "127.0.0.1", 6379))
    env = server_env(live_database, CELERY_BROKER_URL=redis.rsplit("/", 1)[0] + "/11")  # a database of its own
    env.pop("SB_AGENTS_SERVICE_KEY", None)
    out = tmp_path / "out"
    with chat_stub.endpoint(end_window, api_key=KEY) as (base_url, seen):
        worker = processes.start([str(BIN / "celery"), "-A", "config", "worker", "--pool=solo", "--loglevel=INFO",
                            "-n", "agentstest@%h", "--without-gossip", "--without-mingle"],
                           {**env, "SB_AGENTS_SERVICE_KEY": KEY}, "worker")
        submit = processes.start([str(BIN / "python"), "manage.py", "run_agents", "--model", "stub-1", "--base-url",
                            base_url, "--tasks", TASK, "--seeds", "7", "11", "--max-turns", "3", "--out", str(out),
                            "--api-key-env", "SB_AGENTS_SERVICE_KEY", "--timeout", "180"], env, "submit")
        assert submit.popen.wait(timeout=200) == 0, submit.output() + worker.output()[-3000:]
        assert seen
    assert "[2/2] done" in submit.output()
    assert "jobs.tasks.run_agent_trial" in worker.output()  # the worker, not the submitter, played
    job = Job.objects.get()
    assert job.status == Job.Status.DONE and job.summary["trials"] == 2
    stored = json.dumps([job.params, job.summary, [(i.params, i.result_json, i.error) for i in job.items.all()]])
    assert KEY not in stored and KEY not in submit.output() + worker.output()
    for item in job.items.all():
        assert item.attempts == 1 and (Path(json.loads(item.result_json)["out"]) / "score.json").is_file()
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files and not any(KEY.encode() in p.read_bytes() for p in files)
    assert os.environ.get("SB_AGENTS_SERVICE_KEY") is None


def test_a_worker_killed_mid_play_leaves_the_cell_to_another_worker_which_plays_it_once(
        live_database, broker_up, processes, tmp_path):
    """The first worker's play hangs on the model; the worker is killed (SIGKILL, its whole group).
    RabbitMQ hands the message out again at once; the second worker finds the lease still live,
    plays nothing and checks again after it, then takes the item over: one more play, into a
    folder without the first attempt's leftovers."""
    from jobs.models import Job, JobItem

    env = server_env(live_database, CELERY_BROKER_URL=broker_up, STOREBENCH_AGENT_LEASE_SECONDS="15")
    released = threading.Event()

    def hang_first(body: dict) -> tuple[int, bytes]:
        if len(seen) == 1:
            released.wait(120)  # the first player waits here until it is killed
        return end_window(body)

    out = tmp_path / "out"
    worker_argv = [str(BIN / "celery"), "-A", "config", "worker", "--pool=solo", "--loglevel=INFO",
                   "--without-gossip", "--without-mingle"]
    with chat_stub.endpoint(hang_first) as (base_url, seen):
        try:
            first = processes.start([*worker_argv, "-n", "agents1@%h"], env, "worker1")
            submit = processes.start([str(BIN / "python"), "manage.py", "run_agents", "--model", "stub-1", "--base-url",
                                base_url, "--tasks", TASK, "--seeds", "7", "--max-turns", "3", "--out", str(out),
                                "--no-wait"], env, "submit")
            assert submit.popen.wait(timeout=120) == 0, submit.output()
            wait_for(lambda: len(seen) >= 1, 120, "the first player's request", first)
            item = JobItem.objects.get()
            assert item.status == JobItem.Status.RUNNING and item.attempts == 1
            first.kill()
            second = processes.start([*worker_argv, "-n", "agents2@%h"], env, "worker2")
            wait_for(lambda: Job.objects.get().finished, 120, "the job to end", second)
        finally:
            released.set()
    job = Job.objects.get()
    item = job.items.get()
    assert job.status == Job.Status.DONE, job.error + second.output()[-3000:]
    assert item.attempts == 2 and len(seen) > 1
    assert "its lease is live" in second.output()  # the redelivery came while the lease was live
    assert "expired; playing the cell again" in second.output()
    folder = out / f"job-{job.pk}" / f"{TASK}-7-agent"
    session = Path(json.loads(item.result_json)["out"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(["agent.log", session.name])
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no attempt folder left
    assert (session / "score.json").is_file()


def test_a_cell_that_fails_on_a_worker_leaves_the_other_to_play_and_retry_plays_it_again(
        live_database, broker_up, processes, tmp_path):
    """The first cell to ask gets 503s: on a worker, its item fails, the other cell plays, and the
    job ends failed naming it; ``run_agents --retry`` from another process plays that cell again."""
    from jobs.models import Job, JobItem

    env = server_env(live_database, CELERY_BROKER_URL=broker_up)
    failing = [True]

    def fail_first_cell(body: dict) -> tuple[int, bytes]:
        if len(body["messages"]) == 2 and failing[0]:
            failing[0] = False
            return 503, b'{"error": "model overloaded"}'
        return end_window(body)

    manage = [str(BIN / "python"), "manage.py", "run_agents"]
    with chat_stub.endpoint(fail_first_cell) as (base_url, _seen):
        worker = processes.start([str(BIN / "celery"), "-A", "config", "worker", "--pool=solo", "--loglevel=INFO",
                                  "-n", "agentsretry@%h", "--without-gossip", "--without-mingle"], env, "worker")
        submit = processes.start([*manage, "--model", "stub-1", "--base-url", base_url, "--tasks", TASK, "--seeds",
                                  "7", "11", "--max-turns", "3", "--retries", "0", "--out", str(tmp_path / "out"),
                                  "--timeout", "180"], env, "submit")
        assert submit.popen.wait(timeout=200) == 1, submit.output() + worker.output()[-3000:]
        job = Job.objects.get()
        failed = job.items.get(status=JobItem.Status.FAILED)
        assert job.status == Job.Status.FAILED and job.summary["trials"] == 1
        assert job.error.startswith(f"1 of 2 cells failed: {TASK}/{failed.params['seed']}: the endpoint ")
        assert "[1/2] failed" in submit.output() and f"the done cells are in {job.params['out']}" in submit.output()
        retry = processes.start([*manage, "--retry", str(job.pk), "--timeout", "180"], env, "retry")
        assert retry.popen.wait(timeout=200) == 0, retry.output() + worker.output()[-3000:]
    job.refresh_from_db()
    failed.refresh_from_db()
    assert job.status == Job.Status.DONE and job.summary["trials"] == 2 and "[2/2] done" in retry.output()
    assert failed.status == JobItem.Status.DONE and failed.attempts == 2

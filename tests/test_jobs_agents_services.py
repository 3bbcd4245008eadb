"""Model-trial batches on real services: ``manage.py run_agents`` submits from a process without
the API key, a Celery worker consuming Redis (database 11) against PostgreSQL plays both cells
with the key from its own environment, and the key is in neither the database nor the folders.
Run with ``DATABASE_URL`` pointing at PostgreSQL and ``-m services``."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import chat_stub
import pytest
from test_jobs_agents import TASK, end_window

sys.path.insert(0, str(Path(__file__).resolve().parent / "services"))
from serverprocs import BIN, Process, endpoint, server_env  # noqa: E402

pytestmark = pytest.mark.services

KEY = "sk-services-0123456789-never-stored"


@pytest.fixture
def processes(tmp_path):
    started: list[Process] = []

    def start(argv: list[str], env: dict[str, str], name: str) -> Process:
        started.append(Process(argv, env, tmp_path / f"{name}.log"))
        return started[-1]

    yield start
    for process in started:
        process.stop(timeout=5)


@pytest.fixture
def live_database(require_service, skip_or_fail, transactional_db) -> str:
    from django.db import connection

    require_service("PostgreSQL", *endpoint("DATABASE_URL", "127.0.0.1", 5432))
    if connection.vendor != "postgresql":
        skip_or_fail(f"DATABASE_URL does not point to PostgreSQL (vendor is {connection.vendor!r})")
    s = connection.settings_dict
    return f"postgresql://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def test_a_worker_on_redis_plays_a_model_batch_with_the_key_from_its_own_environment(
        live_database, require_service, processes, tmp_path):
    from jobs.models import Job

    require_service("Redis", "127.0.0.1", 6379)
    env = server_env(live_database, CELERY_BROKER_URL="redis://127.0.0.1:6379/11")
    env.pop("SB_AGENTS_SERVICE_KEY", None)
    out = tmp_path / "out"
    with chat_stub.endpoint(end_window, api_key=KEY) as (base_url, seen):
        worker = processes([str(BIN / "celery"), "-A", "config", "worker", "--pool=solo", "--loglevel=INFO",
                            "-n", "agentstest@%h", "--without-gossip", "--without-mingle"],
                           {**env, "SB_AGENTS_SERVICE_KEY": KEY}, "worker")
        submit = processes([str(BIN / "python"), "manage.py", "run_agents", "--model", "stub-1", "--base-url",
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

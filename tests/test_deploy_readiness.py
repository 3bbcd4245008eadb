"""``/readyz`` tells a load balancer whether a process can serve: 200 when its database (and its
Redis, where it has one) answer, 503 naming what does not; asked by address over plain HTTP."""
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBE = ("import django, json; django.setup(); from django.test import Client; "
         "r = Client().get('/readyz', HTTP_HOST='10.1.2.3'); print(r.status_code, r.content.decode())")


def probe(tmp_path, **env: str) -> tuple[int, dict]:
    """``GET /readyz`` in a fresh production process with ``env``: its status and body."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("DJANGO_DEBUG", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "STOREBENCH_PLAIN_HTTP")}
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
                 DJANGO_ALLOWED_HOSTS="storebench.example.org", STOREBENCH_SQLITE_PATH=str(tmp_path / "db.sqlite3"),
                 **env)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=clean, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    status, body = done.stdout.strip().split(" ", 1)
    return int(status), json.loads(body)


def test_a_process_whose_database_answers_is_ready_by_address_over_plain_http(tmp_path):
    assert probe(tmp_path) == (200, {"ready": True, "database": "ok"})  # no redirect, no Host refused


def test_a_process_whose_database_does_not_answer_is_not_ready(tmp_path):
    status, body = probe(tmp_path, DATABASE_URL="postgresql://postgres@127.0.0.1:1/nowhere",
                         STOREBENCH_DB_POOL_TIMEOUT="1")
    assert (status, body) == (503, {"ready": False, "database": "unreachable"})


def test_a_process_whose_redis_does_not_answer_is_not_ready(tmp_path):
    status, body = probe(tmp_path, REDIS_URL="redis://127.0.0.1:1/0")
    assert (status, body) == (503, {"ready": False, "database": "ok", "redis": "unreachable"})

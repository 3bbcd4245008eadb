"""Settings come from the environment: with nothing set, the embedded default (SQLite,
in-memory channel layer, tasks in-process); each variable switches one part to a
server.  Read in fresh interpreters, as a deployment would start."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBE = """
import json, django
django.setup()
from django.conf import settings
from config.celery import app
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"], "name": str(settings.DATABASES["default"]["NAME"]),
    "host": settings.DATABASES["default"].get("HOST", ""),
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "layer_hosts": settings.CHANNEL_LAYERS["default"].get("CONFIG", {}).get("hosts"),
    "broker": app.conf.broker_url, "eager": app.conf.task_always_eager, "queue": app.conf.task_default_queue,
    "beat": sorted(app.conf.beat_schedule), "jobs": "jobs" in settings.INSTALLED_APPS,
}))
"""
VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "STOREBENCH_SQLITE_PATH", "STOREBENCH_CELERY_QUEUE")


def start(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    clean["DJANGO_SETTINGS_MODULE"] = "config.settings"
    return subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env={**clean, **env}, capture_output=True,
                          text=True, timeout=120)


def probe(**env):
    done = start(**env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_nothing_set_is_the_embedded_default():
    s = probe()
    assert s["engine"] == "django.db.backends.sqlite3" and s["name"].endswith("db.sqlite3")
    assert s["layer"] == "channels.layers.InMemoryChannelLayer"
    assert s["eager"] is True and s["broker"] == "memory://localhost/"
    assert s["queue"] == "celery" and s["beat"] == ["enforce-shift-deadlines", "stalled-exports", "study-notices"] and s["jobs"]


def test_each_variable_switches_its_part_to_a_server():
    s = probe(DATABASE_URL="postgresql://postgres@db.example:5433/store", REDIS_URL="redis://cache.example:6379/2",
              CELERY_BROKER_URL="amqp://guest:guest@mq.example:5672//", STOREBENCH_CELERY_QUEUE="blue")
    assert (s["engine"], s["name"], s["host"]) == ("django.db.backends.postgresql", "store", "db.example")
    assert s["layer"] == "config.layers.RedisChannelLayer" and s["layer_hosts"] == ["redis://cache.example:6379/2"]
    assert s["broker"] == "amqp://guest:guest@mq.example:5672//" and s["eager"] is False and s["queue"] == "blue"
    redis_broker = probe(CELERY_BROKER_URL="redis://127.0.0.1:6379/5")
    assert redis_broker["broker"] == "redis://127.0.0.1:6379/5" and redis_broker["eager"] is False
    assert redis_broker["engine"] == "django.db.backends.sqlite3"


def test_an_unrecognised_database_url_is_refused_naming_the_forms_it_takes(tmp_path):
    assert probe(DATABASE_URL=f"sqlite:///{tmp_path}/named.sqlite3")["name"] == f"{tmp_path}/named.sqlite3"
    done = start(DATABASE_URL="bogus://user:secret@x/db")
    assert done.returncode != 0 and "SettingsRefused: DATABASE_URL (bogus://...) is not a database" in done.stderr
    assert "postgresql://user:password@host:port/name" in done.stderr and "sqlite:///path" in done.stderr
    assert "secret" not in done.stderr

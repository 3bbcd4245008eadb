"""Start-up refuses the unsafe settings an operator can give by mistake, with a message that
says what to do, and accepts a correct configuration: each case in a fresh interpreter with
the environment a deployment would have."""
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOOD_SECRET = secrets.token_urlsafe(50)
OURS = ("DJANGO_DEBUG", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE", "STOREBENCH_PLAIN_HTTP",
        "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")


def start(tmp_path, **env: str) -> subprocess.CompletedProcess:
    """``manage.py check`` under config.settings with only ``env`` of the site's variables set."""
    clean = {k: v for k, v in os.environ.items() if k not in OURS}
    clean.update(STOREBENCH_SQLITE_PATH=str(tmp_path / "deploy.sqlite3"), **env)
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, env=clean, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("secret", ["changeme", "x" * 64, "django-insecure-" + secrets.token_urlsafe(50),
                                    secrets.token_urlsafe(30)],
                         ids=["common word", "one character", "django's insecure prefix", "short"])
def test_a_weak_secret_is_refused_outside_debug(tmp_path, secret):
    done = start(tmp_path, DJANGO_SECRET_KEY=secret)
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY is too weak" in done.stderr and "secrets.token_urlsafe(50)" in done.stderr
    assert secret not in done.stderr  # the message never repeats the secret


def test_a_missing_secret_is_one_line_that_says_what_to_set_and_no_traceback(tmp_path):
    done = start(tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "manage.py: DJANGO_SECRET_KEY is not set. A deployment needs its own secret: set DJANGO_SECRET_KEY to a long "
        "random value (for example the output of `python3 -c 'import secrets; print(secrets.token_urlsafe(50))'`), or "
        "set DJANGO_DEBUG=1 for local development only (`make run` does)."]


def test_a_command_on_a_database_never_migrated_says_to_migrate_in_one_line(tmp_path):
    clean = {k: v for k, v in os.environ.items() if k not in OURS}
    clean.update(STOREBENCH_SQLITE_PATH=str(tmp_path / "empty.sqlite3"), DJANGO_DEBUG="1")
    done = subprocess.run([sys.executable, "manage.py", "changepassword", "nobody"], cwd=REPO, env=clean,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["manage.py: the database's schema is missing or out of date (no such table: "
                                        "auth_user): run `manage.py migrate` first (`make run` and `make release` do)"]


def test_the_celery_app_keeps_its_redelivery_timeout_from_the_settings():
    from config.celery import app

    assert app.conf.broker_transport_options["visibility_timeout"] == 900


def test_an_empty_host_list_is_refused_outside_debug(tmp_path):
    done = start(tmp_path, DJANGO_SECRET_KEY=GOOD_SECRET, DJANGO_ALLOWED_HOSTS=" , ")
    assert done.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS names no host" in done.stderr


@pytest.mark.parametrize("hosts", ["bench.example.org", "localhost,bench.example.org", "*", "0.0.0.0", "10.1.2.3"])
def test_debug_is_refused_on_a_host_others_reach(tmp_path, hosts):
    done = start(tmp_path, DJANGO_DEBUG="1", DJANGO_ALLOWED_HOSTS=hosts)
    assert done.returncode != 0
    assert "DJANGO_DEBUG=1 with DJANGO_ALLOWED_HOSTS naming" in done.stderr and "Unset DJANGO_DEBUG" in done.stderr


@pytest.mark.parametrize("env", [
    {"DJANGO_SECRET_KEY": GOOD_SECRET},
    {"DJANGO_SECRET_KEY": GOOD_SECRET, "DJANGO_ALLOWED_HOSTS": "bench.example.org,127.0.0.1"},
    {"DJANGO_DEBUG": "1"},  # make run
    {"DJANGO_DEBUG": "1", "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost,[::1],app.localhost"},
])
def test_a_correct_configuration_starts(tmp_path, env):
    done = start(tmp_path, **env)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout


@pytest.mark.parametrize(("name", "value", "said"), [
    ("STOREBENCH_LOGIN_ATTEMPTS", "five", "must be a whole number, not 'five'"),
    ("STOREBENCH_DB_POOL_TIMEOUT", "soon", "must be a number, not 'soon'"),
    ("STOREBENCH_NOTICE_SWEEP_SECONDS", "0", "must be at least 1, not '0'"),
    ("EMAIL_PORT", "nan", "must be a whole number, not 'nan'"),
])
def test_a_number_setting_that_is_no_number_is_one_line_naming_it(tmp_path, name, value, said):
    # the pool's settings are read for PostgreSQL only (check connects to no database)
    done = start(tmp_path, DJANGO_SECRET_KEY=GOOD_SECRET, DATABASE_URL="postgresql://postgres@127.0.0.1:5432/nowhere",
                 **{name: value})
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"manage.py: {name} {said}: set it to ")

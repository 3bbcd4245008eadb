"""Production is the default: settings read in fresh interpreters with the environment a
deployment would have, the deploy check, the demo loader's refusal, static files outside
debug, sign-in throttling on both sign-in pages, error pages, and inputs that used to
raise a 500."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from console_helpers import briefed_user, call
from django.contrib.auth import get_user_model
from django.test import Client

from shifts import lifecycle

REPO = Path(__file__).resolve().parent.parent
SECRET = "a-test-secret-that-is-long-and-random-enough-0123456789-abcdefghijkl"
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.urls import reverse
print(json.dumps({"debug": settings.DEBUG, "secure_cookie": settings.SESSION_COOKIE_SECURE,
                  "csrf_secure": settings.CSRF_COOKIE_SECURE, "redirect": settings.SECURE_SSL_REDIRECT,
                  "hsts": settings.SECURE_HSTS_SECONDS, "admin": reverse("admin:index")}))
"""
CONTROLLED = ("DJANGO_DEBUG", "DJANGO_SECRET_KEY", "STOREBENCH_PLAIN_HTTP", "DJANGO_ADMIN_PATH",
              "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")


def fresh(argv, tmp_path, **env):
    """Run ``argv`` in a new interpreter under config.settings with only ``env`` of ours set."""
    clean = {k: v for k, v in os.environ.items() if k not in CONTROLLED}
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", STOREBENCH_SQLITE_PATH=str(tmp_path / "prod.sqlite3"))
    return subprocess.run([sys.executable, *argv], cwd=REPO, env={**clean, **env}, capture_output=True,
                          text=True, timeout=120)


def probe(tmp_path, **env) -> dict:
    done = fresh(["-c", PROBE], tmp_path, **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_a_secret_key_and_debug_the_process_refuses_to_start(tmp_path):
    done = fresh(["-c", PROBE], tmp_path)
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in done.stderr and "DJANGO_DEBUG=1" in done.stderr


def test_every_command_explains_itself_without_a_secret_key(tmp_path):
    done = fresh(["manage.py", "bench_console", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--realistic" in done.stdout
    listed = fresh(["manage.py", "help"], tmp_path)
    assert listed.returncode == 0 and "bench_console" in listed.stdout and "not properly configured" not in (
        listed.stdout + listed.stderr)
    checked = fresh(["manage.py", "check"], tmp_path)  # a command that runs still needs the deployment's secret
    assert checked.returncode != 0 and "DJANGO_SECRET_KEY is not set" in checked.stderr


def test_production_is_the_default_with_secure_transport(tmp_path):
    s = probe(tmp_path, DJANGO_SECRET_KEY=SECRET)
    assert s["debug"] is False
    assert s["secure_cookie"] and s["csrf_secure"] and s["redirect"] and s["hsts"] >= 31_536_000
    assert s["admin"] == "/admin/"


def test_one_variable_turns_secure_transport_off_for_plain_http(tmp_path):
    s = probe(tmp_path, DJANGO_SECRET_KEY=SECRET, STOREBENCH_PLAIN_HTTP="1")
    assert s["debug"] is False
    assert not s["secure_cookie"] and not s["csrf_secure"] and not s["redirect"] and s["hsts"] == 0


def test_debug_only_when_asked_for(tmp_path):
    s = probe(tmp_path, DJANGO_DEBUG="1")
    assert s["debug"] is True and not s["redirect"]


def test_the_admin_lives_where_configured(tmp_path):
    assert probe(tmp_path, DJANGO_SECRET_KEY=SECRET, DJANGO_ADMIN_PATH="/back-office/")["admin"] == "/back-office/"


def test_the_deploy_check_is_clean_in_production(tmp_path):
    done = fresh(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path,
                 DJANGO_SECRET_KEY=SECRET)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_load_demo_refuses_outside_debug(tmp_path):
    env = {"DJANGO_SECRET_KEY": SECRET}
    assert fresh(["manage.py", "migrate", "--noinput"], tmp_path, **env).returncode == 0
    done = fresh(["manage.py", "load_demo"], tmp_path, **env)
    assert done.returncode != 0 and "only in debug" in done.stderr
    users = fresh(["manage.py", "shell", "-c",
                   "from django.contrib.auth.models import User; print(User.objects.count())"], tmp_path, **env)
    assert users.stdout.strip().splitlines()[-1] == "0"


def test_static_files_are_served_outside_debug(client, settings):
    settings.DEBUG = False
    response = client.get("/static/console/console.css")
    assert response.status_code == 200
    assert b"".join(response.streaming_content if response.streaming else [response.content])


@pytest.mark.parametrize("path", ["/no/such/page/", "/explorer/"])
def test_error_pages_name_the_sites_icon_so_the_browser_asks_for_no_favicon_ico(client, settings, path, db):
    settings.DEBUG = False
    if path == "/explorer/":  # a signed-in participant is refused there (403)
        client.force_login(get_user_model().objects.create_user("someone", password="pw"))
    response = client.get(path)
    assert response.status_code in (403, 404)
    assert '<link rel="icon" type="image/svg+xml" href="/static/console/favicon.svg">' in response.content.decode()


def test_admin_pages_name_the_sites_icon_too(client, db):
    client.force_login(get_user_model().objects.create_superuser("root", password=None))
    html = client.get("/admin/").content.decode()
    assert '<link rel="icon" type="image/svg+xml" href="/static/console/favicon.svg">' in html
    assert "Site administration" in html  # the admin's own index, its template extended


def test_an_unknown_page_lists_nothing(client, settings):
    settings.DEBUG = False
    response = client.get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404 and "Page not found" in html
    assert "explorer/" not in html and "studies/" not in html and "shifts" not in html


LOG_PROBE = """
import logging, django
django.setup()
from environment.engine import Episode
from environment.tasks import get_task
from mcp_client.server import build_server
episode = Episode(get_task("steady"), 7)
build_server(lambda: episode)  # the MCP SDK configures logging here, as a console process does on a first call
logging.getLogger("django.request").error("probe-from-django")
logging.getLogger("shifts.ending").error("probe-from-the-site")
"""


def test_a_web_process_logs_each_record_once_on_one_line(tmp_path):
    done = fresh(["-c", LOG_PROBE], tmp_path, DJANGO_SECRET_KEY=SECRET)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    for probe_text, logger in (("probe-from-django", "django.request"), ("probe-from-the-site", "shifts.ending")):
        assert [line for line in lines if probe_text in line] == [line for line in lines
                                                                  if line.endswith(f"ERROR {logger}: {probe_text}")]
        assert done.stderr.count(probe_text) == 1


@pytest.mark.parametrize("page", ["/login/", "/admin/login/"])
def test_sign_in_is_throttled_per_username_and_address(db, settings, page, fast_password_hashing):
    settings.LOGIN_ATTEMPTS = 3
    from django.core.cache import cache
    cache.clear()
    get_user_model().objects.create_user("mallory-target", password="right-password-123", is_staff=True)
    client = Client()
    for _ in range(3):
        wrong = client.post(page, {"username": "mallory-target", "password": "wrong"})
        assert wrong.status_code == 200 and "Too many failed" not in wrong.content.decode()
    refused = client.post(page, {"username": "mallory-target", "password": "right-password-123"})
    # The console's page says 429 Too Many Requests; the admin's answers as Django's admin does.
    assert refused.status_code == (429 if page == "/login/" else 200)
    assert "Too many failed sign-ins" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address is not locked out by these failures.
    other = Client(REMOTE_ADDR="10.9.8.7")
    assert other.post(page, {"username": "mallory-target", "password": "right-password-123"}).status_code == 302
    cache.clear()


@pytest.mark.parametrize("lines", ['{"SKU-1": NaN}', '{"SKU-1": Infinity}', '{"SKU-1": -Infinity}',
                                   '{"SKU-1": 1e999}', "[" * 500 + "]" * 500,
                                   '{"SKU-1": ' + "[" * 500 + "]" * 500 + "}"])
def test_hostile_json_in_a_purchase_order_is_a_clear_refusal(client, db, lines, fast_password_hashing,
                                                              fresh_console_cache):
    user = briefed_user("iris")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    client.force_login(user)
    response = call(client, shift, "place_purchase_order", supply_product_id="SUP-001", lines=lines)
    html = response.content.decode()
    assert response.status_code == 200
    assert "The store refused this call</b> (invalid_argument)" in html and 'class="tag err">error' in html
    assert '<span class="tag">1 operation</span>' in html  # the store refused it: like any refusal, it costs one
    shift.refresh_from_db()
    # The live session survived: a plain call afterwards goes through.
    assert call(client, shift, "list_products").status_code == 200


def test_a_huge_trial_number_is_a_clear_error(db, client):
    client.force_login(get_user_model().objects.create(username="res", is_staff=True))
    response = client.get("/explorer/compare/", {"trial": ["9" * 40, "1"]})
    assert response.status_code == 400 and f"There is no trial {'9' * 40}, 1." in response.content.decode()
    assert client.get("/explorer/trials/" + "9" * 40 + "/").status_code == 404
    assert client.get("/studies/" + "9" * 40 + "/").status_code == 404


def test_a_form_with_an_out_of_date_token_says_to_reload_and_that_nothing_was_done(db):
    user = get_user_model().objects.create_user("someone", password="pw")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get("/")  # the page sets the CSRF cookie; the form below carries an old token
    response = browser.post("/logout/", {"csrfmiddlewaretoken": "x" * 64})
    html = response.content.decode()
    assert response.status_code == 403
    assert "This page is out of date" in html and "Nothing was done." in html
    assert "reload the page and send the form again" in html

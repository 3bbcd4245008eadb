"""E-mail notices link to the site by its full address (STOREBENCH_SITE_URL).

The worker writes the mails with no request to take a host from: the links were paths
("Open it: /shifts/13/"), which no mail reader can open (found deploying with the
console mail backend, whose output is the worker's standard output).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from test_deploy_settings import GOOD_SECRET, start
from test_studies_support import admin, cell, coordinator, make_user, study  # noqa: F401

from studies import assignment, participants

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def person(study, admin):
    user = make_user("expert-1", email="expert1@example.org")
    return participants.add_participant(admin, study, "expert 1", user=user)


def test_an_assignment_mail_links_to_the_site(person, cell, admin, settings, django_capture_on_commit_callbacks):
    settings.SITE_URL = "https://bench.example.org"
    with django_capture_on_commit_callbacks(execute=True):
        attempt = assignment.assign(admin, person, cell)
    assert f"Open it: https://bench.example.org/shifts/{attempt.shift_id}/\n" in mail.outbox[0].body


def test_the_site_url_is_read_from_the_environment():
    code = "from django.conf import settings; print(settings.SITE_URL)"
    env = {**os.environ, "DJANGO_DEBUG": "1", "STOREBENCH_SITE_URL": " https://bench.example.org/ "}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", f"import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                           f"'config.settings'); django.setup(); {code}"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "https://bench.example.org"


@pytest.mark.parametrize("url", ["bench.example.org", "https://", "https://bench example.org"])
def test_a_site_url_without_scheme_or_host_is_refused(tmp_path, url):
    done = start(tmp_path, DJANGO_SECRET_KEY=GOOD_SECRET, STOREBENCH_SITE_URL=url)
    assert done.returncode != 0
    assert "STOREBENCH_SITE_URL must be the site's address" in done.stderr

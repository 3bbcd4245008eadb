"""What a request's log lines look like on the site's one stderr handler: a refused
request (403) is its one line, with the refusal's reason, and a crash (500) keeps its
traceback."""
import io
import logging
from contextlib import contextmanager

import pytest
from django.test import Client, override_settings
from django.urls import path
from test_studies_support import admin, make_user, other_study  # noqa: F401


def crash(request):
    raise RuntimeError("the view broke")


# A test-only urlconf, so that a 500 needs no production code.
urlpatterns = [path("crash/", crash)]


@contextmanager
def stderr_output():
    """What the configured ``stderr`` handler (settings.LOGGING) writes, as text."""
    (handler,) = [h for h in logging.getLogger().handlers if h.name == "stderr"]
    written = io.StringIO()
    before = handler.setStream(written)
    try:
        yield written
    finally:
        handler.setStream(before)


def test_a_refused_page_logs_one_line_without_a_traceback(other_study):
    client = Client()
    client.force_login(make_user("nosy"))
    with stderr_output() as written:
        response = client.get(f"/studies/{other_study.pk}/")
    assert response.status_code == 403
    (line,) = written.getvalue().splitlines()  # no "Traceback (most recent call last):" after it
    assert line.endswith(f"WARNING django.request: Forbidden (Permission denied): /studies/{other_study.pk}/ "
                         "(nosy may not view the study: they hold no role in this study)")


def test_a_refused_page_logs_the_reason_it_was_refused(researcher_free_user):
    client = Client()
    client.force_login(researcher_free_user)
    with stderr_output() as written:
        response = client.get("/explorer/")
    assert response.status_code == 403
    (line,) = written.getvalue().splitlines()
    assert line.endswith("WARNING django.request: Forbidden (Permission denied): /explorer/ "
                         "(The trial explorer is for researchers only.)")


@pytest.fixture
def researcher_free_user(db):
    return make_user("plain")


@pytest.mark.django_db
@override_settings(ROOT_URLCONF=__name__)
def test_a_crashed_page_still_logs_its_traceback():
    with stderr_output() as written:
        response = Client(raise_request_exception=False).get("/crash/")
    assert response.status_code == 500
    lines = written.getvalue().splitlines()
    assert lines[0].endswith("ERROR django.request: Internal Server Error: /crash/")
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "RuntimeError: the view broke"

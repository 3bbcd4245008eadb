"""The signed-in user is remembered per process for a few seconds (config.users).

A request by a remembered session reads no user row; signing out, or a session whose
auth hash no longer matches, is refused at once; a change to the user's row made
elsewhere (deactivation) is seen once the few seconds are up.
"""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config import users

pytestmark = pytest.mark.django_db


def user_queries(client, url):
    with CaptureQueriesContext(connection) as seen:
        response = client.get(url)
    return response, [q["sql"] for q in seen.captured_queries if '"auth_user"' in q["sql"]]


@pytest.fixture
def now(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(users, "clock", lambda: clock[0])
    return clock


def test_a_remembered_session_reads_no_user_row(signed_in, now):
    first, read = user_queries(signed_in, "/")
    assert first.status_code == 200 and read  # the first request loads the user
    again, read = user_queries(signed_in, "/")
    assert again.status_code == 200 and not read
    assert again.wsgi_request.user.username == "participant-1"
    # each request has its own copy: a view that changes it changes nobody else's
    assert again.wsgi_request.user is not first.wsgi_request.user
    now[0] += users.TTL_SECONDS + 1
    _late, read = user_queries(signed_in, "/")
    assert read  # forgotten after a few seconds


def test_signing_out_takes_effect_at_once(signed_in, shift, now):
    assert signed_in.get(f"/shifts/{shift.pk}/").status_code == 200
    signed_in.post("/logout/")
    refused = signed_in.get(f"/shifts/{shift.pk}/")
    assert refused.status_code == 302 and "/login/" in refused["Location"]


def test_a_session_whose_hash_changed_is_refused_at_once(signed_in, shift, user, now):
    assert signed_in.get(f"/shifts/{shift.pk}/").status_code == 200
    user.set_password("a new password")  # the session's auth hash no longer matches
    user.save()
    session = signed_in.session
    session["_auth_user_hash"] = "0" * 64
    session.save()
    refused = signed_in.get(f"/shifts/{shift.pk}/")
    assert refused.status_code == 302 and "/login/" in refused["Location"]


def test_a_deactivated_user_is_refused_once_the_few_seconds_are_up(signed_in, shift, user, now):
    assert signed_in.get(f"/shifts/{shift.pk}/").status_code == 200
    user.is_active = False
    user.save()
    now[0] += users.TTL_SECONDS + 1
    refused = signed_in.get(f"/shifts/{shift.pk}/")
    assert refused.status_code == 302 and "/login/" in refused["Location"]

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.usefixtures("fast_password_hashing")

DEMO_USERNAMES = {"admin", "coordinator", "participant"}


def test_home_page_renders(client, db):
    response = client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "StoreBench" in body
    assert "Sign in" in body


def test_pages_load_htmx_without_the_debug_helper_that_writes_a_refusal_over_the_page(client, db, settings):
    settings.DEBUG = True  # as make run serves it
    body = client.get("/").content.decode()
    assert '<script src="/static/django_htmx/htmx-2.min.js" defer></script>' in body
    assert "django-htmx.js" not in body


def test_healthz(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"ok": True}


def test_load_demo_creates_users_idempotently(db, capsys):
    User = get_user_model()
    call_command("load_demo")
    call_command("load_demo")
    users = {u.username: u for u in User.objects.filter(username__in=DEMO_USERNAMES)}
    assert set(users) == DEMO_USERNAMES
    assert User.objects.filter(username__in=DEMO_USERNAMES).count() == 3  # not duplicated by a second run
    assert users["admin"].is_superuser and users["admin"].is_staff
    assert not users["coordinator"].is_superuser
    assert not users["participant"].is_superuser
    for name, user in users.items():
        assert user.check_password(name)
    out = capsys.readouterr().out
    assert "participant / participant" in out


def test_participant_can_sign_in(client, db):
    call_command("load_demo")
    response = client.post(
        "/login/", {"username": "participant", "password": "participant"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/"
    home = client.get("/")
    assert home.status_code == 200
    assert "participant" in home.content.decode()
    assert "Sign out" in home.content.decode()


def test_wrong_password_is_rejected(client, db):
    call_command("load_demo")
    response = client.post("/login/", {"username": "participant", "password": "nope"})
    assert response.status_code == 200
    assert "did not match" in response.content.decode()

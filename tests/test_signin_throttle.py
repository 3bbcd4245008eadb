"""Sign-in throttling (console.signin): attempts are counted before their password is
checked, and an administrator can lift a pause."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client

from console import signin

SEEN: list[int | None] = []


class CountReadingBackend(ModelBackend):
    """The site's backend, noting the pair's count at the moment a password is checked."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        SEEN.append(cache.get(signin._key(username or "", "127.0.0.1")))
        return super().authenticate(request, username=username, password=password, **kwargs)


@pytest.fixture
def target(db, settings, fast_password_hashing):
    settings.LOGIN_ATTEMPTS = 2
    cache.clear()
    SEEN.clear()
    yield get_user_model().objects.create_user("vera", password="right-password-123")
    cache.clear()


def test_an_attempt_holds_its_place_in_the_count_while_its_password_is_checked(target, settings):
    # So simultaneous guesses cannot all read the same count: the second guess's check
    # already sees two attempts, and a third is refused without a check.
    settings.AUTHENTICATION_BACKENDS = [f"{__name__}.CountReadingBackend"]
    client = Client()
    for _ in range(3):
        client.post("/login/", {"username": "vera", "password": "wrong"})
    assert SEEN == [1, 2]


def test_an_empty_password_does_not_clear_the_count(target):
    # A form that never reaches authenticate() (no password) is no sign-in: were the count
    # cleared there, a guess every LOGIN_ATTEMPTS - 1 tries could go on for ever.
    client = Client()
    for _ in range(3):
        client.post("/login/", {"username": "vera", "password": "wrong"})
        client.post("/login/", {"username": "vera", "password": ""})
    assert client.post("/login/", {"username": "vera", "password": "right-password-123"}).status_code == 429


@pytest.fixture
def shared_counts(settings, tmp_path):
    """A cache every process sees (files here; Redis in a deployment), as unlock_signin needs."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path / "cache")}}


def test_unlock_signin_lifts_the_pause_from_every_address(shared_counts, target):
    for address in ("127.0.0.1", "10.0.0.9"):
        client = Client(REMOTE_ADDR=address)
        for _ in range(3):
            client.post("/login/", {"username": "vera", "password": "wrong"})
        assert client.post("/login/", {"username": "vera", "password": "right-password-123"}).status_code == 429
    call_command("unlock_signin", "Vera")
    for address in ("127.0.0.1", "10.0.0.9"):
        signed_in = Client(REMOTE_ADDR=address).post("/login/", {"username": "vera", "password": "right-password-123"})
        assert signed_in.status_code == 302


def test_unlock_signin_refuses_when_each_process_keeps_its_own_counts(target):
    with pytest.raises(CommandError, match="each web process's own memory .* set REDIS_URL"):
        call_command("unlock_signin", "vera")


def test_unlock_signin_names_an_unknown_account(shared_counts, target):
    with pytest.raises(CommandError, match="no account is named 'nobody'"):
        call_command("unlock_signin", "nobody")

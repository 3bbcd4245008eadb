"""Sign-in throttling counts an account however its username is spelt: the sign-in form
reads usernames in Unicode's NFKC form, so full-width letters reach the same account."""
import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client


@pytest.fixture
def jane(db, settings, fast_password_hashing):
    settings.LOGIN_ATTEMPTS = 2
    cache.clear()
    yield get_user_model().objects.create_user("jane", password="right-password-123")
    cache.clear()


@pytest.mark.parametrize("page", ["/login/", "/admin/login/"])
def test_a_full_width_spelling_of_a_paused_username_is_refused_too(jane, page):
    client = Client()
    for _ in range(2):
        client.post(page, {"username": "jane", "password": "wrong"})
    # "ｊａｎｅ" in full-width letters is "jane" once the form has read it.
    refused = client.post(page, {"username": "\uff4a\uff41\uff4e\uff45", "password": "right-password-123"})
    assert "Too many failed sign-ins for this username from your address." in refused.content.decode()
    assert "_auth_user_id" not in client.session

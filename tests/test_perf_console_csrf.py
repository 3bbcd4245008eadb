"""The tool call's reply masks the CSRF secret itself (``console.views._csrf_token``): its
tokens must be what Django's ``get_token`` gives, as Django reads them.

Each token unmasks to the cookie's secret and is fresh on every reply; a secret that came
with the request's cookie is not sent back in a cookie of the reply, one just made is; with
no secret yet it falls back to Django; and a token taken from one reply is accepted by the
CSRF middleware on the next call.
"""
import re
import uuid
from collections import Counter

import pytest
from console_helpers import HX
from django.conf import settings
from django.middleware.csrf import (
    CSRF_ALLOWED_CHARS,
    CSRF_TOKEN_LENGTH,
    CsrfViewMiddleware,
    _get_new_csrf_string,
    _unmask_cipher_token,
)
from django.test import Client, RequestFactory

from console.views import _csrf_token

pytestmark = pytest.mark.usefixtures("fresh_console_cache")


def test_a_token_unmasks_to_the_cookie_secret_and_is_fresh_each_time():
    request = RequestFactory().post("/")
    secret = _get_new_csrf_string()
    request.META["CSRF_COOKIE"] = secret
    tokens = [_csrf_token(request) for _ in range(500)]
    assert len(set(tokens)) == len(tokens)
    for token in tokens:
        assert len(token) == CSRF_TOKEN_LENGTH and set(token) <= set(CSRF_ALLOWED_CHARS)
        assert _unmask_cipher_token(token) == secret
    assert "CSRF_COOKIE_NEEDS_UPDATE" not in request.META


def test_the_masks_use_every_character():
    request = RequestFactory().post("/")
    request.META["CSRF_COOKIE"] = _get_new_csrf_string()
    seen = Counter("".join(_csrf_token(request)[:32] for _ in range(400)))
    assert set(seen) == set(CSRF_ALLOWED_CHARS)


def test_without_a_secret_it_is_djangos_own_token():
    request = RequestFactory().post("/")
    token = _csrf_token(request)
    assert _unmask_cipher_token(token) == request.META["CSRF_COOKIE"]
    assert request.META["CSRF_COOKIE_NEEDS_UPDATE"] is True


def test_a_token_from_a_reply_is_accepted_on_the_next_call(user, shift):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get(f"/shifts/{shift.pk}/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"', page.content.decode())[1]
    for _ in range(3):
        reply = client.post(f"/shifts/{shift.pk}/call/", {"tool": "list_orders", "call_id": uuid.uuid4().hex,
                                                          "arg_page_size": "5", "csrfmiddlewaretoken": token}, **HX)
        assert reply.status_code == 200
        assert settings.CSRF_COOKIE_NAME not in reply.cookies  # the request's cookie stands
        tokens = set(re.findall(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"', reply.content.decode()))
        assert len(tokens) == 1 and token not in tokens
        token = tokens.pop()
    refused = client.post(f"/shifts/{shift.pk}/call/", {"tool": "list_orders", "call_id": uuid.uuid4().hex,
                                                        "csrfmiddlewaretoken": "x" * 64}, **HX)
    assert refused.status_code == 403


def test_a_secret_the_middleware_just_made_is_still_sent():
    request = RequestFactory().post("/")
    request.COOKIES[settings.CSRF_COOKIE_NAME] = "not a secret"
    CsrfViewMiddleware(lambda r: None).process_request(request)
    token = _csrf_token(request)
    assert request.META["CSRF_COOKIE_NEEDS_UPDATE"] is True
    assert _unmask_cipher_token(token) == request.META["CSRF_COOKIE"]

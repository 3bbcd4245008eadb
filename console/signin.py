"""Sign-in throttling for both sign-in pages (the console's and the admin's).

Failed sign-ins are counted in the cache per username and client address. Each attempt
takes its place in the count (an atomic increment) *before* its password is checked, so
a burst of simultaneous guesses gets no more checks than one guess after another: once
``LOGIN_ATTEMPTS`` attempts have failed, the pair is refused, the right password
included, until ``LOGIN_LOCKOUT_SECONDS`` have passed since the last attempt; the form
says so and when to try again, and the console's page answers 429. A successful
sign-in clears the count. Counting per username *and* address means someone guessing
at an account cannot lock its owner out from another address.

An administrator lifts a pause at once with ``manage.py unlock_signin USERNAME``: each
username's counts are filed under a generation number, and unlocking moves it on, so
every address's count for that username is forgotten together.
"""
from __future__ import annotations

import hashlib
import unicodedata

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache, caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpResponse

THROTTLED = "throttled"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _account(username: str) -> str:
    """The account a typed username signs in to, as counted: the sign-in form reads the
    username in Unicode's NFKC form (so "ｊane", in full-width letters, signs in as "jane"),
    and every spelling that reaches the same account shares one count."""
    return unicodedata.normalize("NFKC", username).strip().lower()


def _generation_key(username: str) -> str:
    return f"signin-generation:{_digest(_account(username))}"


def _key(username: str, address: str) -> str:
    generation = cache.get(_generation_key(username), 0)
    return f"signin-failures:{_digest(_account(username), address, str(generation))}"


def _address(request) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown") if request is not None else "unknown"


def _count_attempt(key: str) -> int:
    """Add one attempt to ``key``'s count, atomically, and restart its pause; the new count."""
    cache.add(key, 0, settings.LOGIN_LOCKOUT_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:  # the count expired between the two calls
        cache.set(key, 1, settings.LOGIN_LOCKOUT_SECONDS)
        return 1
    cache.touch(key, settings.LOGIN_LOCKOUT_SECONDS)
    return count


def counts_are_shared() -> bool:
    """Whether the counts live where every process sees them (Redis, a database or files), not in
    each process's own memory (Django's local-memory cache, the default without ``REDIS_URL``)."""
    return not isinstance(caches["default"], LocMemCache | DummyCache)


def unlock(username: str) -> None:
    """Forget every failed sign-in counted for ``username``, from any address."""
    key = _generation_key(username)
    cache.add(key, 0, None)
    try:
        cache.incr(key)
    except ValueError:  # evicted meanwhile: any other generation forgets the counts too
        cache.set(key, 1, None)


class ThrottledSignInMixin:
    """Refuse a username+address pair that failed too often; count each attempt."""

    def clean(self):
        username = self.data.get("username", "") or ""
        key = _key(username, _address(self.request))
        if _count_attempt(key) > settings.LOGIN_ATTEMPTS:
            minutes = max(1, settings.LOGIN_LOCKOUT_SECONDS // 60)
            raise forms.ValidationError(
                f"Too many failed sign-ins for this username from your address. Wait {minutes} "
                "minutes and try again, or ask the site's administrator to lift the pause.",
                code=THROTTLED,
            )
        cleaned = super().clean()  # a wrong password keeps its place in the count
        if self.get_user() is not None:  # signed in; a form that never reached authenticate() clears nothing
            cache.delete(key)
        return cleaned


class ThrottledAuthenticationForm(ThrottledSignInMixin, AuthenticationForm):
    error_messages = {**AuthenticationForm.error_messages,
                      "invalid_login": "That username and password did not match."}


class ThrottledAdminAuthenticationForm(ThrottledSignInMixin, AdminAuthenticationForm):
    pass


class ThrottledLoginView(LoginView):
    """The console's sign-in page: a paused username+address is answered 429 (Too Many
    Requests), so logs and proxies see the pause; the page is the same."""

    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        if any(error.code == THROTTLED for error in form.errors.as_data().get("__all__", [])):
            response.status_code = 429
        return response

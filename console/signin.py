"""Sign-in throttling for both sign-in pages (the console's and the admin's).

Failed sign-ins are counted in the cache per username and client address. After
``LOGIN_ATTEMPTS`` failures the pair is refused, the right password included, until
``LOGIN_LOCKOUT_SECONDS`` have passed since the last failure; the form says so and
says when to try again. A successful sign-in clears the count. Counting per username
*and* address means someone guessing at an account cannot lock its owner out from
another address.
"""
from __future__ import annotations

import hashlib

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache

THROTTLED = "throttled"


def _key(username: str, address: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}\0{address}".encode()).hexdigest()
    return f"signin-failures:{digest}"


def _address(request) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown") if request is not None else "unknown"


class ThrottledSignInMixin:
    """Refuse a username+address pair that failed too often; count each failure."""

    def clean(self):
        username = self.data.get("username", "") or ""
        key = _key(username, _address(self.request))
        failures = cache.get(key, 0)
        if failures >= settings.LOGIN_ATTEMPTS:
            minutes = max(1, settings.LOGIN_LOCKOUT_SECONDS // 60)
            raise forms.ValidationError(
                f"Too many failed sign-ins for this username from your address. Wait {minutes} "
                "minutes and try again, or ask a coordinator to reset your password.",
                code=THROTTLED,
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            cache.set(key, failures + 1, settings.LOGIN_LOCKOUT_SECONDS)
            raise
        cache.delete(key)
        return cleaned


class ThrottledAuthenticationForm(ThrottledSignInMixin, AuthenticationForm):
    error_messages = {**AuthenticationForm.error_messages,
                      "invalid_login": "That username and password did not match."}


class ThrottledAdminAuthenticationForm(ThrottledSignInMixin, AdminAuthenticationForm):
    pass

"""The signed-in user, remembered per process for a few seconds (the user-table query).

Django's :class:`~django.contrib.auth.middleware.AuthenticationMiddleware` reads the
session and then the user's row on every request that looks at ``request.user``: a
console tool call paid that query each time.  :class:`CachedAuthentication` keeps the
user it loaded, per process, for :data:`TTL_SECONDS`, keyed by what the session says
(user id, backend, and the session's auth hash).

The session is still read on every request (from the shared cache, see
``config.settings``), so signing out, a session ended by revoking an invitation, or a
session whose auth hash changed (a password change in that session) take effect at
once, in every process.  What may lag by at most :data:`TTL_SECONDS` is a change to the
user's row made elsewhere: a password changed from another session, or an account
deactivated, leaves sessions that this process already served valid for that long.
A user is remembered only when the session's hash is the user's current one (a session
verified by a fallback secret goes through Django's own path, which rotates it), and
each request gets its own copy of the user (a view may change and save it).
"""
from __future__ import annotations

import copy
import threading
import time
from typing import Any

from django.contrib import auth
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject

TTL_SECONDS = 5.0
MAX_USERS = 4096  # remembered at once per process; expired ones are dropped past it

_users: dict[tuple[str, str, str], tuple[float, Any]] = {}
_guard = threading.Lock()
clock = time.monotonic  # replaced by tests


def forget() -> None:
    """Forget every remembered user (tests; a process that must see row changes at once)."""
    with _guard:
        _users.clear()


def _remember(key: tuple[str, str, str], user: Any) -> None:
    now = clock()
    with _guard:
        if len(_users) >= MAX_USERS:
            for stale in [k for k, (until, _u) in _users.items() if until <= now]:
                del _users[stale]
            if len(_users) >= MAX_USERS:
                _users.clear()
        _users[key] = (now + TTL_SECONDS, user)


def signed_in_user(request) -> Any:
    """``django.contrib.auth.get_user(request)``, remembered for a few seconds (see the module)."""
    session = request.session
    try:
        key = (str(session[SESSION_KEY]), str(session[BACKEND_SESSION_KEY]), str(session[HASH_SESSION_KEY]))
    except KeyError:
        return auth.get_user(request)
    hit = _users.get(key)
    if hit is not None and hit[0] > clock():
        return copy.copy(hit[1])
    user = auth.get_user(request)
    if (user.is_authenticated and hasattr(user, "get_session_auth_hash")
            and session.get(HASH_SESSION_KEY) == key[2]
            and constant_time_compare(key[2], user.get_session_auth_hash())):
        _remember(key, copy.copy(user))
    return user


def _user_of(request) -> Any:
    if not hasattr(request, "_cached_user"):
        request._cached_user = signed_in_user(request)
    return request._cached_user


class CachedAuthentication(AuthenticationMiddleware):
    """Django's authentication middleware with :func:`signed_in_user` (see the module)."""

    def process_request(self, request) -> None:
        super().process_request(request)  # the session check, and ``request.auser``
        request.user = SimpleLazyObject(lambda: _user_of(request))

"""``/readyz``: whether this process can serve participants now, for a load balancer.

``/healthz`` (``console.views.healthz``) says only that the process answers; it goes through
the site's middleware like any page, so the probe's Host must be in ``DJANGO_ALLOWED_HOSTS``.
``/readyz`` also asks the database (``SELECT 1``) and, where the site uses one, Redis
(``PING``: the sessions, the sign-in counters and the live updates live there), and answers
503 naming what does not answer.  It is answered by the first middleware, before the HTTPS
redirect and the Host check: a load balancer probes a process by its address, over plain
HTTP, and the answer holds nothing but what it checked.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

PATH = "/readyz"


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        logger.error("readiness: the database does not answer: %s", exc)
        return "unreachable"
    return "ok"


def _redis() -> str | None:
    """PING through the site's own Redis client (None where the site uses no Redis)."""
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    try:
        backend._cache.get_client(write=True).ping()  # Django's own client attribute (see config.cache)
    except (RedisError, OSError) as exc:
        logger.error("readiness: Redis does not answer: %s", exc)
        return "unreachable"
    return "ok"


def readiness() -> tuple[bool, dict[str, str]]:
    """Whether every service the site uses answers, and each one's state."""
    checks = {"database": _database()}
    redis = _redis()
    if redis is not None:
        checks["redis"] = redis
    return all(state == "ok" for state in checks.values()), checks


class Readiness:
    """Answers ``GET``/``HEAD /readyz`` (see the module docstring); every other request passes on."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != PATH or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        ready, checks = readiness()
        return JsonResponse({"ready": ready, **checks}, status=200 if ready else 503)


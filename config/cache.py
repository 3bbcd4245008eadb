"""One Redis connection pool per process for the site's cache (and so its sessions).

Under ASGI, Django keeps its cache objects per request context, so each request builds
a :class:`~django.core.cache.backends.redis.RedisCache` of its own, with a connection
pool of its own: every request opened a new TCP connection to Redis to read its session.
:class:`SharedConnectionPool` (``OPTIONS["pool_class"]``) hands every cache object of a
process the same pool for the same URL and options, so a request borrows a connection
that is already open.  redis-py's pools are thread-safe and start afresh in a forked
child (they check the process id).
"""
from __future__ import annotations

import threading
from typing import Any

from redis import ConnectionPool


class SharedConnectionPool(ConnectionPool):
    _shared: dict[tuple, ConnectionPool] = {}
    _guard = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Any:
        key = (url, tuple(sorted((name, repr(value)) for name, value in kwargs.items())))
        with cls._guard:
            pool = cls._shared.get(key)
            if pool is None:
                pool = cls._shared[key] = super().from_url(url, **kwargs)
            return pool

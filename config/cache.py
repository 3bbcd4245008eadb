"""The site's Redis cache (and so its sessions) with one pool and one client per process.

Under ASGI, Django keeps its cache objects per request context, so each request builds
a :class:`~django.core.cache.backends.redis.RedisCache` of its own, with a connection
pool of its own: every request opened a new TCP connection to Redis to read its
session.  And Django's Redis cache builds a new ``redis.Redis`` client for every
operation (copying its table of a hundred and seventy response callbacks each time).
:class:`RedisCache` hands every cache object of a process the same pool for the same
server, options and role (:class:`SharedConnectionPool`), and every operation on a pool
the same client, and every cache object the same Django client over them
(:attr:`RedisCache._cache`).  redis-py's pools and clients are thread-safe, and a pool
starts afresh in a forked child (it checks the process id).
"""
from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient
from redis import ConnectionPool, Redis


class SharedConnectionPool(ConnectionPool):
    """``from_url`` answers one pool per URL and options in a process."""

    _shared: dict[tuple, SharedConnectionPool] = {}
    _guard = threading.Lock()
    client: Redis | None = None  # the one client over this pool (RedisCache sets it)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Any:
        key = (url, tuple(sorted((name, repr(value)) for name, value in kwargs.items())))
        with cls._guard:
            pool = cls._shared.get(key)
            if pool is None:
                pool = cls._shared[key] = super().from_url(url, **kwargs)
            return pool


class _Client(RedisCacheClient):
    def __init__(self, servers: list[str], **options: Any) -> None:
        options.setdefault("pool_class", SharedConnectionPool)
        super().__init__(servers, **options)

    def get_client(self, key: Any = None, *, write: bool = False) -> Redis:
        # Django's own attributes, which django-stubs does not declare.
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = getattr(pool, "client", None)
        if client is None:
            client = pool.client = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class RedisCache(DjangoRedisCache):
    """Django's Redis cache over the process's shared pool and client (see the module)."""

    _clients: dict[tuple, _Client] = {}
    _guard = threading.Lock()

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _Client

    @cached_property
    def _cache(self) -> _Client:
        # One per process for the same servers and options: building it for each request's
        # cache object (its pool options, serializer, parser) was part of every session read.
        # Django's own attributes, which django-stubs does not declare.
        servers, options = self._servers, self._options  # type: ignore[attr-defined]
        key = (tuple(servers), tuple(sorted((name, repr(value)) for name, value in options.items())))
        with self._guard:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self._class(servers, **options)
            return client

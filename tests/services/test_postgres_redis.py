"""Tests against real servers on loopback: PostgreSQL, Redis and RabbitMQ.

Run with ``make test-services``, which sets DATABASE_URL, REDIS_URL and
CELERY_BROKER_URL and STOREBENCH_REQUIRE_SERVICES=1 (so that an unreachable
server fails the run instead of skipping).
"""
import os
import uuid
from urllib.parse import urlparse

import pytest
from asgiref.sync import async_to_sync

pytestmark = pytest.mark.services


def _endpoint(env_name: str, default_host: str, default_port: int) -> tuple[str, int]:
    parsed = urlparse(os.environ.get(env_name, ""))
    return parsed.hostname or default_host, parsed.port or default_port


@pytest.fixture(scope="session")
def postgres_ready(require_service, skip_or_fail):
    """Check PostgreSQL before pytest-django tries to create the test database.

    Session-scoped and listed before ``db`` so that it runs before
    ``django_db_setup``: an unreachable server gives a clear skip or failure
    instead of a connection error during database setup.
    """
    host, port = _endpoint("DATABASE_URL", "127.0.0.1", 5432)
    require_service("PostgreSQL", host, port)
    from django.db import connection

    if connection.vendor != "postgresql":
        skip_or_fail(
            f"DATABASE_URL does not point to PostgreSQL (vendor is {connection.vendor!r})"
        )


def test_postgres_roundtrip(postgres_ready, db):
    from django.contrib.auth import get_user_model
    from django.db import connection

    assert connection.vendor == "postgresql"
    assert connection.settings_dict["NAME"].startswith("test_")
    User = get_user_model()
    User.objects.create_user(username="pg-user", email="pg@example.com", password="x")
    fetched = User.objects.get(username="pg-user")
    assert fetched.email == "pg@example.com"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        assert cursor.fetchone()[0].startswith("PostgreSQL")


def test_redis_channel_layer(require_service, skip_or_fail):
    host, port = _endpoint("REDIS_URL", "127.0.0.1", 6379)
    require_service("Redis", host, port)
    from channels.layers import get_channel_layer
    from channels_redis.core import RedisChannelLayer

    layer = get_channel_layer()
    if not isinstance(layer, RedisChannelLayer):
        skip_or_fail(f"REDIS_URL is not set; channel layer is {type(layer).__name__}")

    channel = f"storebench-test-{uuid.uuid4().hex}"
    message = {"type": "test.message", "text": "hello"}

    async def roundtrip():
        try:
            await layer.send(channel, message)
            return await layer.receive(channel)
        finally:
            await layer.close_pools()

    assert async_to_sync(roundtrip)() == message


def test_celery_broker_reachable(require_service, skip_or_fail):
    host, port = _endpoint("CELERY_BROKER_URL", "127.0.0.1", 5672)
    require_service("RabbitMQ", host, port)
    import config

    broker = config.celery_app.conf.broker_url
    if not broker or broker.startswith("memory://"):
        skip_or_fail(f"CELERY_BROKER_URL is not set; broker is {broker!r}")
    with config.celery_app.connection() as conn:
        conn.ensure_connection(max_retries=1)
        assert conn.connected
        assert conn.transport.driver_type == "amqp"


def test_readiness_asks_postgresql_and_redis(postgres_ready, db, client, require_service, settings):
    host, port = _endpoint("REDIS_URL", "127.0.0.1", 6379)
    require_service("Redis", host, port)
    # the cache a deployment with REDIS_URL has (the test settings keep one in memory)
    settings.CACHES = {"default": {"BACKEND": "config.cache.RedisCache",
                                   "LOCATION": os.environ.get("REDIS_URL", f"redis://{host}:{port}/0")}}
    response = client.get("/readyz", HTTP_HOST="10.1.2.3")
    assert (response.status_code, response.json()) == (200, {"ready": True, "database": "ok", "redis": "ok"})

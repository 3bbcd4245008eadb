"""Shared test helpers.

Service tests call ``require_service(name, host, port)`` before they touch a
server. When the server is unreachable the test is skipped on a developer's
machine, and fails when ``STOREBENCH_REQUIRE_SERVICES=1`` or ``CI`` is set, so
that CI can never pass by skipping.
"""
import os
import socket

import pytest


def services_required() -> bool:
    return os.environ.get("STOREBENCH_REQUIRE_SERVICES") == "1" or bool(
        os.environ.get("CI")
    )


def skip_or_fail(reason: str) -> None:
    """Fail when services are required, skip otherwise."""
    if services_required():
        pytest.fail(reason + " (STOREBENCH_REQUIRE_SERVICES=1 or CI is set)", pytrace=False)
    pytest.skip(reason)


def require_service(name: str, host: str, port: int, timeout: float = 2.0) -> None:
    """Check that ``host:port`` accepts a TCP connection, or skip/fail the test."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as exc:
        error = exc
    skip_or_fail(f"{name} is not reachable at {host}:{port}: {error}")


@pytest.fixture(name="require_service", scope="session")
def require_service_fixture():
    """The ``require_service`` helper, for tests that prefer a fixture."""
    return require_service


@pytest.fixture(name="skip_or_fail", scope="session")
def skip_or_fail_fixture():
    """The ``skip_or_fail`` helper, for preconditions other than a TCP port."""
    return skip_or_fail


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, whose drop at the end no longer fails with "is being accessed
    by other users": a thread a test left behind (a channel layer's or an MCP session's worker)
    still holds a PostgreSQL connection of its own, which no test can close from here."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@pytest.fixture(autouse=True)
def eager_celery_outside_service_tests(request):
    """Outside tests marked ``services``, Celery tasks run in-process even when a broker
    is configured: ``make test-services`` runs the whole suite with ``CELERY_BROKER_URL``
    set, and only the service tests start workers that consume the broker."""
    if request.node.get_closest_marker("services") is not None:
        yield
        return
    from config.celery import app

    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


@pytest.fixture(autouse=True)
def no_remembered_users():
    """No signed-in user remembered by a process (config.users) carried between tests."""
    from config import users

    users.forget()
    yield
    users.forget()


@pytest.fixture
def fast_password_hashing(settings):
    """Cheap password hashes: tests that sign people in do not need PBKDF2's cost."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def fresh_console_cache():
    """No live episode or MCP session carried between tests, in either direction."""
    from shifts import cache

    cache.clear_cache()
    yield
    cache.clear_cache()


# The console tests' trio, defined once: a participant who has read the briefing, their
# started practice shift (counter-punch, seed 7), and a test client signed in as them.


@pytest.fixture
def deployed_site(settings):
    """Settings as on a deployment: debug off, only the site's own host name, HTTPS required."""
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["bench.example.org"]
    settings.SECURE_SSL_REDIRECT = True


@pytest.fixture
def user(db):
    from console_helpers import briefed_user

    return briefed_user("participant-1")


@pytest.fixture
def shift(user):
    from shifts.lifecycle import start_shift

    return start_shift(user, "counter-punch", 7, practice=True)


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


# What the service-backed stage (``make test-services``) runs: the suite again with
# PostgreSQL, Redis and RabbitMQ configured, but only the tests those servers can change.
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "live_server", "django_db_reset_sequences",
                               "django_db_serialized_rollback"})


def touches_services(item: pytest.Item) -> bool:
    """Marked ``services``, or using Django's database (marker or fixture, however indirect)."""
    if item.get_closest_marker("services") is not None or item.get_closest_marker("django_db") is not None:
        return True
    return bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``STOREBENCH_SERVICES_STAGE=1``, deselect the tests that touch no server: the
    engine, the MCP adapters and the browser tests (whose console runs on its own SQLite
    file and embedded defaults) run the same in both stages, so the first stage covers them."""
    if os.environ.get("STOREBENCH_SERVICES_STAGE") != "1":
        return
    dropped = [item for item in items if not touches_services(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if touches_services(item)]

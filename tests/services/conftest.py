"""Fixtures for tests that run real server processes against real services.

``live_database`` checks PostgreSQL, gives the test a committed (transactional) test
database and returns that database's URL, for subprocesses to use; ``processes``
starts servers (see :mod:`serverprocs`) and kills every one of them when the test ends.
"""
from __future__ import annotations

import os

import pytest
from serverprocs import Process, endpoint


@pytest.fixture
def processes(tmp_path):
    """Start processes with ``processes.start(argv, env, name)``; all are killed at the end."""

    class Pool(list):
        def start(self, argv: list[str], env: dict[str, str], name: str) -> Process:
            process = Process(argv, env, tmp_path / f"{name}.log")
            self.append(process)
            return process

    pool = Pool()
    yield pool
    for process in pool:
        process.stop(timeout=5)


@pytest.fixture
def live_database(postgres_up, skip_or_fail, transactional_db) -> str:
    """The URL of the (committed, transactional) PostgreSQL test database."""
    from django.db import connection

    if connection.vendor != "postgresql":
        skip_or_fail(f"DATABASE_URL does not point to PostgreSQL (vendor is {connection.vendor!r})")
    s = connection.settings_dict
    return f"postgresql://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture(scope="session")
def postgres_up(require_service):
    """PostgreSQL answers; requested before ``transactional_db`` so that an unreachable
    server fails (or skips) with a clear reason before pytest-django creates the database."""
    require_service("PostgreSQL", *endpoint("DATABASE_URL", "127.0.0.1", 5432))


@pytest.fixture(scope="session")
def broker_up(require_service, skip_or_fail) -> str:
    """The broker URL, checked reachable; RabbitMQ or Redis."""
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith(("amqp://", "redis://")):
        skip_or_fail(f"CELERY_BROKER_URL names no RabbitMQ or Redis broker: {url!r}")
    require_service("broker", *endpoint("CELERY_BROKER_URL", "127.0.0.1", 5672))
    return url



"""Settings for the test suite: the development configuration, decided before
``config.settings`` reads the environment.

Production is the default in ``config.settings``, so a bare interpreter refuses to
start without ``DJANGO_SECRET_KEY``. The suite runs as ``make run`` does
(``DJANGO_DEBUG=1``); the variables are put into the environment, not only into these
settings, so the servers, workers and ``manage.py`` processes that tests start inherit
them. Tests of the production configuration start their own interpreter with the
variables they mean (tests/test_security_settings.py).
"""
import os

os.environ.setdefault("DJANGO_DEBUG", "1")

from config.settings import *  # noqa: E402,F403

# Sign-in failure counters stay inside one test process, whatever REDIS_URL says.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# ...so sessions are not cached there either (a server process a test starts has its own cache).
SESSION_ENGINE = "django.contrib.sessions.backends.db"

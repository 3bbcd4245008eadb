"""Django settings for StoreBench.

Everything that differs between a laptop and a deployment comes from the
environment. With nothing set, the console runs on embedded defaults:
SQLite, an in-memory channel layer and Celery tasks run in-process.

    DATABASE_URL        postgresql://user:pass@host:port/name, or sqlite:///path  (unset: SQLite)
    STOREBENCH_SQLITE_PATH  SQLite file when DATABASE_URL is unset
    REDIS_URL           redis://host:port/db  (else in-memory channel layer)
    CELERY_BROKER_URL   amqp://... or redis://...  (else tasks run eagerly)
    DJANGO_SECRET_KEY, DJANGO_DEBUG, DJANGO_ALLOWED_HOSTS
    (DATABASE_URL=sqlite:////abs/path names a SQLite file; any other form is refused)

Production is the default. ``DEBUG`` is off unless ``DJANGO_DEBUG=1`` (``make run``
sets it); outside debug there is no built-in ``SECRET_KEY`` (the process refuses to
start without ``DJANGO_SECRET_KEY``, or with one ``check --deploy`` would call weak, or with
a ``DJANGO_ALLOWED_HOSTS`` that names no host), cookies are secure, HSTS is sent and plain HTTP
is redirected to HTTPS, so ``manage.py check --deploy`` is clean. Debug refuses to start when
``DJANGO_ALLOWED_HOSTS`` names a host other machines reach. For a deployment
that really is plain HTTP (a closed lab network), ``STOREBENCH_PLAIN_HTTP=1`` turns
those three off and nothing else.

    STOREBENCH_PLAIN_HTTP   1: no secure cookies, no HSTS, no HTTPS redirect
    DJANGO_ADMIN_PATH       where the Django admin lives (default ``admin/``)
    DJANGO_CSRF_TRUSTED_ORIGINS  comma-separated origins (https://host) behind a proxy
    STOREBENCH_LOGIN_ATTEMPTS    failed sign-ins per username and address before a pause (5)
    STOREBENCH_LOGIN_LOCKOUT     the pause, in seconds (900)
    STOREBENCH_DB_POOL_MAX       PostgreSQL connections per server process, at most (8; 0: no pool)

On PostgreSQL each process keeps a connection pool (psycopg's, through Django's
``"pool"`` option): a request borrows a connection and gives it back when it ends,
instead of opening one per request (the ASGI server runs each request's sync code on a
thread of its own, so without a pool every request is a new connection, and a burst of
requests can exceed the server's ``max_connections``).  Keep processes x
``STOREBENCH_DB_POOL_MAX`` (plus Celery's workers) well under ``max_connections``; a
request that finds every connection busy waits for one (``STOREBENCH_DB_POOL_TIMEOUT``
seconds, 30) rather than failing.
"""
import os
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlparse

from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)

from config.refusals import SettingsRefused, env_number

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: str) -> bool:
    return os.environ.get(name, default).strip().lower() in {"1", "true", "yes", "on"}


def _weak_secret(key: str) -> bool:
    """Whether ``key`` is one ``check --deploy`` warns about (security.W009)."""
    return (len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS
            or key.startswith(SECRET_KEY_INSECURE_PREFIX))


def _local_host(host: str) -> bool:
    """Whether an ``ALLOWED_HOSTS`` entry names only this machine."""
    name = host.lower().rstrip(".")
    return (name in {"localhost", "testserver", "::1", "[::1]"} or name.endswith(".localhost")
            or name.startswith("127.") and name.replace(".", "").isdigit())


def _postgres_from_url(url: str) -> dict[str, Any]:
    parsed = urlparse(url)
    config: dict[str, Any] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
    }
    options: dict[str, Any] = dict(parse_qsl(parsed.query))
    pool_max = int(env_number("STOREBENCH_DB_POOL_MAX", "8", minimum=0))
    if pool_max > 0:
        options["pool"] = {"min_size": min(2, pool_max), "max_size": pool_max,
                           "timeout": env_number("STOREBENCH_DB_POOL_TIMEOUT", "30", kind=float, minimum=0)}
    if options:
        config["OPTIONS"] = options
    return config


DEBUG = _env_bool("DJANGO_DEBUG", "0")
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise SettingsRefused(
            "DJANGO_SECRET_KEY is not set. A deployment needs its own secret: set "
            "DJANGO_SECRET_KEY to a long random value (for example the output of "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(50))'`), or set "
            "DJANGO_DEBUG=1 for local development only (`make run` does)."
        )
    SECRET_KEY = "dev-insecure-storebench-secret-key-for-debug-only"
elif not DEBUG and _weak_secret(SECRET_KEY):
    # What `check --deploy` calls W009, refused at start: a short or guessable secret signs
    # sessions and invitation links that anyone able to guess it could forge.
    raise SettingsRefused(
        f"DJANGO_SECRET_KEY is too weak to sign sessions and invitation links ({len(SECRET_KEY)} characters, "
        f"{len(set(SECRET_KEY))} different): give at least {SECRET_KEY_MIN_LENGTH} characters with at least "
        f"{SECRET_KEY_MIN_UNIQUE_CHARACTERS} different ones, not starting with {SECRET_KEY_INSECURE_PREFIX!r}, "
        "for example the output of `python3 -c 'import secrets; print(secrets.token_urlsafe(50))'`."
    )
# `manage.py load_demo` (known passwords, a superuser admin/admin) only where the
# process started in debug; decided here, from the environment, once.
DEMO_DATA_ALLOWED = DEBUG
ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get(
        "DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,testserver"
    ).split(",")
    if host.strip()
]
if not DEBUG and not ALLOWED_HOSTS:
    raise SettingsRefused(
        "DJANGO_ALLOWED_HOSTS names no host, so every request would be refused (400 Bad Request): set it to "
        "the comma-separated host names the site answers to, e.g. DJANGO_ALLOWED_HOSTS=bench.example.org, "
        "or unset it for the default (localhost,127.0.0.1,testserver)."
    )
if DEBUG and (_public := [host for host in ALLOWED_HOSTS if not _local_host(host)]):
    # Debug pages show source, settings and local variables to whoever triggers an error:
    # only for a process that answers to this machine alone.
    raise SettingsRefused(
        f"DJANGO_DEBUG=1 with DJANGO_ALLOWED_HOSTS naming {', '.join(_public)}: debug pages show source code, "
        "settings and local variables to anyone who triggers an error, so debug is for a process that answers "
        "to this machine only (localhost, 127.0.0.1, ::1). Unset DJANGO_DEBUG for a deployment, or unset "
        "DJANGO_ALLOWED_HOSTS for local development."
    )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "channels",
    "shifts",
    "console",
    "studies",
    "jobs",
    "explorer",
    "benchmarks",
]

MIDDLEWARE = [
    # /readyz for a load balancer, answered before the HTTPS redirect and the Host check (config.probes).
    "config.probes.Readiness",
    "django.middleware.security.SecurityMiddleware",
    # Static files from the app itself (no separate web server needed for /static/).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "config.users.CachedAuthentication",  # the signed-in user, remembered a few seconds (config.users)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A calibration file that cannot be used answers 503 with what happened (config.middleware).
    "config.middleware.CalibrationUnavailable",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.navigation.staff_links",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"


def _sqlite_path(url: str) -> str:
    """The SQLite file for ``DATABASE_URL`` (empty: unset), refusing a form it cannot be."""
    if not url:
        return os.environ.get("STOREBENCH_SQLITE_PATH") or str(BASE_DIR / "db.sqlite3")
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return url[len("sqlite:///"):]
    shown = f"{urlparse(url).scheme}://..." if "://" in url else repr(url)  # no password in a log
    raise SettingsRefused(
        f"DATABASE_URL ({shown}) is not a database StoreBench can use. Give "
        "postgresql://user:password@host:port/name (or postgres://...) for PostgreSQL, or "
        "sqlite:///path/to/file.sqlite3 for a SQLite file (four slashes for an absolute path: "
        "sqlite:////tmp/storebench.sqlite3); or unset DATABASE_URL for the embedded SQLite file "
        "(STOREBENCH_SQLITE_PATH, else db.sqlite3 in the repository)."
    )


# Database
_database_url = os.environ.get("DATABASE_URL", "").strip()
DATABASES: dict[str, dict[str, Any]]
if _database_url.startswith(("postgres://", "postgresql://")):
    DATABASES = {"default": _postgres_from_url(_database_url)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _sqlite_path(_database_url),
            # Concurrent writers (threads, several processes) wait for the write lock
            # instead of failing with "database is locked": transactions take it at BEGIN.
            # WAL lets readers run beside the writer; synchronous=NORMAL keeps every
            # commit through a killed process, and skips an fsync per commit.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

# Channel layer
_redis_url = os.environ.get("REDIS_URL", "")
if _redis_url:
    CHANNEL_LAYERS = {
        "default": {
            # channels_redis's layer, sending to a group in fewer round trips (config.layers)
            "BACKEND": "config.layers.RedisChannelLayer",
            "CONFIG": {"hosts": [_redis_url]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# The cache holds sign-in failure counters: shared through Redis when there is one,
# so every server process counts the same failures.
if _redis_url:
    # One connection pool and one client per process (config.cache): Django builds a cache
    # object per request, and each would otherwise open a connection of its own.
    CACHES = {"default": {"BACKEND": "config.cache.RedisCache", "LOCATION": _redis_url}}
    # Sessions are read from that shared cache (written through to the database, which
    # stays the record): a page no longer costs a session query.  Without Redis each
    # process would cache on its own, and a sign-out in one would not reach the others.
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# Celery (read by config/celery.py with namespace "CELERY")
_broker_url = os.environ.get("CELERY_BROKER_URL", "")
if _broker_url:
    CELERY_BROKER_URL = _broker_url
    CELERY_TASK_ALWAYS_EAGER = False
else:
    CELERY_BROKER_URL = "memory://localhost/"  # in process; the host only spares kombu its "No hostname" warning
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TIMEZONE = "UTC"
# Redis redelivers an unacknowledged task after this many seconds (config/celery.py): longer than any task.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 900}
# The periodic tasks `celery -A config beat` sends (config/celery.py), their intervals in seconds.
CELERY_BEAT_SCHEDULE = {
    "enforce-shift-deadlines": {
        "task": "jobs.tasks.enforce_shift_deadlines",
        "schedule": env_number("STOREBENCH_DEADLINE_SWEEP_SECONDS", "60", kind=float, minimum=1),
    },
    "study-notices": {
        "task": "studies.notifications.sweep_notices",
        "schedule": env_number("STOREBENCH_NOTICE_SWEEP_SECONDS", "300", kind=float, minimum=1),
    },
    "stalled-exports": {"task": "studies.tasks.fail_stalled_exports", "schedule": 600.0},
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / ".staticfiles"
# WhiteNoise serves what the finders find (the repository's static/ and the apps'),
# so /static/ works outside debug without a collectstatic step.
WHITENOISE_USE_FINDERS = True
# ...and so STATIC_ROOT need not exist: no warning that it is missing.
warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)

# Transport security outside debug; STOREBENCH_PLAIN_HTTP=1 is the one switch off.
_secure_transport = not DEBUG and not _env_bool("STOREBENCH_PLAIN_HTTP", "0")
SESSION_COOKIE_SECURE = _secure_transport
CSRF_COOKIE_SECURE = _secure_transport
SECURE_SSL_REDIRECT = _secure_transport
SECURE_HSTS_SECONDS = 31_536_000 if _secure_transport else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _secure_transport
SECURE_HSTS_PRELOAD = _secure_transport
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# The health check answers over plain HTTP too (load balancers probe it that way).
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
CSRF_TRUSTED_ORIGINS = [
    origin.strip() for origin in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if origin.strip()
]

ADMIN_PATH = os.environ.get("DJANGO_ADMIN_PATH", "admin/").strip("/") + "/"

# Sign-in throttling (console.signin): failures counted per username and client address.
LOGIN_ATTEMPTS = int(env_number("STOREBENCH_LOGIN_ATTEMPTS", "5", minimum=1))
LOGIN_LOCKOUT_SECONDS = int(env_number("STOREBENCH_LOGIN_LOCKOUT", "900", minimum=1))

# Errors reach the process's stderr in every mode (Django's default logs them only in debug).
# One handler, on the root logger: every logger of the site (django's, ours, the MCP SDK's)
# reaches standard error once, one line per record.  The MCP SDK's server calls
# logging.basicConfig with a rich, 80-column handler when it is built; with a root handler
# in place that call does nothing (else each record came out twice, the second rewrapped).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # config.logformat.LineFormatter: a refused request (4xx) is logged without its traceback.
    "formatters": {"line": {"class": "config.logformat.LineFormatter",
                            "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "line"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    "loggers": {"django": {"level": "WARNING"}},
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The trial explorer judges imported trials against these calibration files (the first
# is the ladder page's); a trial's manifest picks one by hash. The held-out calibration
# lives outside the repository, in the folder STOREBENCH_HELDOUT names, when it is set.
EXPLORER_CALIBRATIONS = [BASE_DIR / "calibration" / "public.json"]
if os.environ.get("STOREBENCH_HELDOUT", "").strip():
    EXPLORER_CALIBRATIONS.append(Path(os.environ["STOREBENCH_HELDOUT"].strip()) / "held-out.json")

# Mail (study notices): the console backend unless EMAIL_BACKEND names another
# (e.g. django.core.mail.backends.smtp.EmailBackend with EMAIL_HOST, EMAIL_PORT, ...).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(env_number("EMAIL_PORT", "25", minimum=1))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = os.environ.get("EMAIL_USE_TLS", "") == "1"
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "StoreBench studies <studies@localhost>")

# The site's public address (STOREBENCH_SITE_URL, e.g. https://bench.example.org): the
# e-mail notices, written by the worker with no request to take a host from, link to it.
# Unset, their links are paths only ("Open it: /shifts/12/"), which a mail reader cannot open.
SITE_URL = os.environ.get("STOREBENCH_SITE_URL", "").strip().rstrip("/")
if SITE_URL and (not SITE_URL.startswith(("https://", "http://")) or not SITE_URL.split("://", 1)[1]
                 or any(c.isspace() for c in SITE_URL)):
    raise SettingsRefused(
        f"STOREBENCH_SITE_URL must be the site's address as participants open it, with its scheme, "
        f"e.g. https://bench.example.org (got {SITE_URL!r})")

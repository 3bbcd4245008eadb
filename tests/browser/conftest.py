"""Browser tests: a real StoreBench server in a subprocess, driven by Playwright.

Every test under ``tests/browser/`` is marked ``browser`` and runs in ``make test``.
They drive Debian's chromium (``apt-get install -y chromium``) headless through
Playwright's sync API; Playwright's own browser download is never used. When
``/usr/bin/chromium`` (or the ``playwright`` package) is missing the tests are
skipped with the reason, except when ``CI`` is set, where that fails them
(``STOREBENCH_CHROMIUM`` names another chromium binary).

The server is what ``make run`` runs: ``uvicorn config.asgi:application`` on a free
loopback port, over a temporary SQLite file named by ``DATABASE_URL=sqlite:///...``,
after ``manage.py migrate`` and ``manage.py load_demo``. Because it is a separate
process it can be killed and started again on the same port and database, which is
how a test checks that work survives a server restart.

Fixtures, for any browser test module (the studies app and the explorer reuse them):

``server`` (session)
    A :class:`Server` running for the whole session: ``server.url`` (no trailing
    slash), ``server.db_path``, ``server.manage(*args)`` runs a management command
    against the same database and returns its stdout (raises with stderr on failure),
    ``server.shell(code)`` runs Python in ``manage.py shell -c``, ``server.restart()``
    kills the process and starts it again (same port, same database),
    ``server.log_path`` is its combined output. Tests share it, so each test should
    create the users it needs (see ``server.create_user``) rather than rely on
    another test's leftovers.
``browser`` (module)
    A Playwright ``Browser`` on ``/usr/bin/chromium``. Module-scoped on purpose:
    Playwright's sync API runs an event loop in the main thread while it is open,
    and Django refuses database calls from a thread with a running loop, so it must
    be closed before the suite moves on to ordinary tests. For the same reason, do
    not touch the ORM in a browser test; use ``server.shell``/``server.manage``.
``page``
    A fresh ``Page`` in a fresh context (its own cookies), ``base_url`` set to the
    server, a 1440x900 viewport; dialogs (``confirm``) are accepted unless a test
    registers its own handler. Closed after the test.
``login``
    The :func:`login` helper: ``login(page, username, password)`` signs in through
    the sign-in form and waits for the home page.
``participant_page``
    ``page`` signed in as the demo participant (``participant``/``participant``).
``screenshot_dir``
    Where to save screenshots: ``$STOREBENCH_SCREENSHOTS`` (e.g. ``docs/screenshots``,
    relative to the repository) if set, else a temporary directory.
``screenshot``
    ``screenshot(page, name, full_page=True)`` saves a PNG as
    ``<screenshot_dir>/<name>.png`` and returns its path; ``full_page=False`` keeps
    to the viewport (better for pages with sticky parts).
"""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from benchmarks.console_process import ConsoleProcess

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("STOREBENCH_CHROMIUM", "/usr/bin/chromium"))  # the env var is for checking the skip
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
BROWSER_DIR = Path(__file__).resolve().parent


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives chromium against a server subprocess")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if BROWSER_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server(ConsoleProcess):
    """One uvicorn process over a SQLite file; see the module docstring."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, _free_port(), db_name="browser.sqlite3")

    def manage(self, *args: str, timeout: float = 120) -> str:
        return super().manage(*args, timeout=timeout)

    def create_user(self, username: str, password: str) -> None:
        self.shell(
            "from django.contrib.auth import get_user_model\n"
            f"u, _ = get_user_model().objects.get_or_create(username={username!r})\n"
            f"u.set_password({password!r}); u.save()\n"
        )

    def stop(self, *, crash: bool = True) -> None:
        super().stop(crash=crash)  # an abrupt stop, like a crash

    def restart(self) -> None:
        self.stop()
        self.start()


def login(page, username: str, password: str) -> None:
    """Sign in through the console's sign-in form; ends on the home page."""
    page.goto("/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("form.stacked button[type=submit]")
    page.wait_for_url("**/")
    if page.locator("p.error").count():
        raise AssertionError(f"sign-in failed for {username!r}")


@pytest.fixture(scope="session")
def chromium_path(skip_or_fail) -> Path:
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} is missing: browser tests need Debian's chromium "
                     "(apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        skip_or_fail("the playwright package is not installed (pip install -e '.[test]')")
    return CHROMIUM


@pytest.fixture(scope="session")
def server(chromium_path, tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("browser-server"))
    srv.manage("migrate", "--noinput")
    srv.manage("load_demo")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(base_url=server.url, viewport={"width": 1440, "height": 900})
    context.set_default_timeout(20_000)
    tab = context.new_page()
    tab.on("dialog", lambda dialog: dialog.accept())
    yield tab
    context.close()


@pytest.fixture(name="login")
def login_fixture():
    return login


@pytest.fixture
def participant_page(page):
    login(page, "participant", "participant")
    return page


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory) -> Path:
    configured = os.environ.get("STOREBENCH_SCREENSHOTS")
    if configured:
        directory = Path(configured)
        if not directory.is_absolute():
            directory = ROOT / directory
        directory.mkdir(parents=True, exist_ok=True)
        return directory
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def screenshot(screenshot_dir):
    def save(page, name: str, full_page: bool = True) -> Path:
        path = screenshot_dir / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return save

"""The console as ``make run`` serves it, in a subprocess of its own.

``uvicorn config.asgi:application`` on a loopback port over a SQLite file named by
``DATABASE_URL``, debug on, with the embedded defaults for the cache and the task
queue (no ``REDIS_URL`` or ``CELERY_BROKER_URL``).  ``manage`` and ``shell`` run
management commands against the same database.  The browser benchmark and the
browser tests (``tests/browser/conftest.py``) both start their server through it;
the tests stop it abruptly, like a crash, to check that work survives a restart.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class ConsoleProcessError(RuntimeError):
    """The server would not start, or a management command failed."""


class ConsoleProcess:
    def __init__(self, workdir: Path, port: int, db_name: str = "console.sqlite3") -> None:
        self.workdir = workdir
        self.db_path = workdir / db_name
        self.log_path = workdir / "server.log"
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.env = {**os.environ, "DATABASE_URL": f"sqlite:///{self.db_path}", "DJANGO_DEBUG": "1",
                    "PYTHONUNBUFFERED": "1"}
        for name in ("REDIS_URL", "CELERY_BROKER_URL"):
            self.env.pop(name, None)  # the embedded defaults, as `make run` without services
        self.process: subprocess.Popen[bytes] | None = None

    def manage(self, *args: str, timeout: float = 600) -> str:
        """Run ``manage.py ARGS`` against the server's database; its stdout, or an error with stderr."""
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise ConsoleProcessError(f"manage.py {' '.join(args)} failed ({done.returncode}):\n"
                                      f"{done.stderr[-3000:]}")
        return done.stdout

    def shell(self, code: str) -> str:
        """Run Python in ``manage.py shell -c``; its stdout."""
        return self.manage("shell", "-c", code)

    def ready_participant(self, username: str, password: str, task: str, seed: int) -> int:
        """A participant (made if new) past the briefing and with practice ended, with a started
        scored shift on the cell; the shift's id."""
        out = self.manage("shell", "-c",
            "from django.contrib.auth import get_user_model\n"
            "from django.utils import timezone\n"
            "from shifts.briefing import BRIEFING_VERSION, PRACTICE_CELL\n"
            "from shifts.lifecycle import start_shift\n"
            "from shifts.models import BriefingAcknowledgement, Shift\n"
            f"u, _ = get_user_model().objects.get_or_create(username={username!r})\n"
            f"u.set_password({password!r}); u.save()\n"
            "BriefingAcknowledgement.objects.create(user=u, version=BRIEFING_VERSION, acknowledged_at=timezone.now())\n"
            "Shift.objects.create(participant=u, task_id=PRACTICE_CELL[0], seed=PRACTICE_CELL[1], is_practice=True,"
            " status='ended')\n"
            f"print(start_shift(u, {task!r}, {seed}).pk)\n")
        return int(out.strip().splitlines()[-1])

    def start(self, timeout: float = 60) -> None:
        """Start the server and wait until it listens; an error names the log if it exits or stays deaf."""
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port",
             str(self.port), "--log-level", "warning"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConsoleProcessError(f"the server exited ({self.process.returncode}); see {self.log_path}:\n"
                                          + self.log_path.read_text()[-3000:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise ConsoleProcessError(f"the server did not listen on port {self.port} within {timeout:g} s")

    def stop(self, *, crash: bool = False) -> None:
        """Stop the server: politely, or with ``crash`` at once, as a power cut would."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL if crash else signal.SIGTERM)
            self.process.wait(timeout=30)
        self.process = None

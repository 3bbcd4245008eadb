"""Helpers for tests that run real server processes against real services.

:class:`Process` runs one server (uvicorn, a Celery worker) in its own process
group with its output in a log file; it can be SIGKILLed like a crashed host and is
always reaped when the test ends, so no test leaves an orphan behind.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def endpoint(env_name: str, default_host: str, default_port: int) -> tuple[str, int]:
    parsed = urlparse(os.environ.get(env_name, ""))
    return parsed.hostname or default_host, parsed.port or default_port


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Process:
    """A server subprocess in its own session (process group)."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.argv, self.log_path = argv, log
        self.log = log.open("ab")
        self.popen = subprocess.Popen(argv, cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole group (a prefork worker's children die with it)."""
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGKILL:
            self.popen.wait(timeout=30)
            _reap_group(self.popen.pid)

    def stop(self, timeout: float = 10) -> None:
        if self.alive():
            self.kill(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill(signal.SIGKILL)
        self.log.close()

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")


def _group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp
            members.append(int(stat.parent.name))
    return members


def _reap_group(pgid: int, timeout: float = 10) -> None:
    """Wait until no process of the group is left (children of a killed worker too)."""
    deadline = time.monotonic() + timeout
    while _group_members(pgid) and time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            break
        time.sleep(0.05)


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def server_env(database_url: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1",
           "STOREBENCH_CELERY_QUEUE": f"storebench-test-{uuid.uuid4().hex[:12]}", **extra}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def wait_for(predicate, timeout: float, what: str, process: Process | None = None, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if process is not None and not process.alive():
            raise AssertionError(f"{what}: the process exited:\n{process.output()[-3000:]}")
        time.sleep(interval)
    tail = process.output()[-3000:] if process is not None else ""
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{tail}")


CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


# --- the console over HTTP ------------------------------------------------------------


def start_console(processes, env: dict[str, str], port: int, name: str, timeout: float = 60) -> Process:
    """``uvicorn config.asgi:application`` on ``port``, once its health check answers."""
    import httpx

    process = processes.start([str(BIN / "uvicorn"), "config.asgi:application", "--host", "127.0.0.1",
                               "--port", str(port), "--log-level", "warning", "--no-access-log"], env, name)

    def healthy() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_for(healthy, timeout, "the console to answer /healthz", process, interval=0.02)
    return process


def redirect_of(reply) -> str:
    """Where a reply sends the page: htmx's ``HX-Redirect``, or a plain redirect's location."""
    return reply.headers.get("HX-Redirect") or reply.headers.get("location") or ""


def acknowledged(reply) -> bool:
    """Whether the console's reply to a tool call says the call is stored: the result
    (200), or a redirect to the workspace showing that call (``?call=N``; a call that
    ended the shift, or a form post without htmx).  A redirect without it is a refusal
    (the shift is not active; or the sign-in page): nothing was stored."""
    if reply.status_code == 200:
        return True
    return reply.status_code in (204, 302) and "?call=" in redirect_of(reply)


class Participant:
    """One signed-in browser: Django's login form, then tool calls as the console's forms
    post them (``tool``, ``call_id``, ``arg_<name>``), with htmx's header."""

    def __init__(self, base: str, username: str, password: str, timeout: float = 30) -> None:
        import httpx

        self.base, self.username, self.password = base, username, password
        self.http = httpx.Client(base_url=base, timeout=timeout, follow_redirects=False)

    def login(self) -> None:
        page = self.http.get("/login/")
        token = CSRF_RE.search(page.text)
        assert page.status_code == 200 and token, f"no login form: {page.status_code}"
        reply = self.http.post("/login/", data={"username": self.username, "password": self.password,
                                                 "csrfmiddlewaretoken": token.group(1)})
        assert reply.status_code == 302, f"login of {self.username} refused: {reply.status_code}"

    def call(self, shift_id: int, tool: str, arguments: dict, call_id: str):
        data = {"tool": tool, "call_id": call_id, **{f"arg_{k}": str(v) for k, v in arguments.items()}}
        return self.http.post(f"/shifts/{shift_id}/call/", data=data,
                              headers={"HX-Request": "true", "X-CSRFToken": self.http.cookies.get("csrftoken", "")})

    def close(self) -> None:
        self.http.close()


# The calls participants make: reads, a refused read and window ends.
MOVES = [("list_orders", {"page_size": 5}), ("finance_summary", {}), ("list_returns", {}),
         ("store_status", {}), ("list_inventory", {"page_size": 5}), ("get_product", {"product_id": "nope"}),
         ("end_window", {})]
WEIGHTS = [4, 2, 2, 1, 2, 1, 2]


def make_participants(n: int, prefix: str, task: str):
    """n users (one password hash, computed once), each with a started practice shift."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from shifts import lifecycle
    from shifts.briefing import BRIEFING_VERSION, acknowledge_briefing

    password = "pw-" + uuid.uuid4().hex[:12]
    hashed = make_password(password)
    out = []
    for i in range(n):
        user = get_user_model().objects.create(username=f"{prefix}{i}", password=hashed)
        acknowledge_briefing(user, BRIEFING_VERSION)
        shift = lifecycle.start_shift(user, task, 7 + i % 3, practice=True)
        out.append((user.username, password, shift))
    return out


def replay_check(shift) -> dict:
    """Replay a shift's stored calls in-process and compare every stored result and the
    final header with the replay's; returns counts, raises AssertionError on a mismatch."""
    from environment.api import arm
    from environment.tools import REGISTRY
    from environment.tools.format import store_header
    from environment.trial import play_actions

    calls = list(shift.calls.order_by("seq"))
    assert [c.seq for c in calls] == list(range(1, len(calls) + 1)), f"shift {shift.pk}: seq has gaps"
    ep = arm(shift.task_id, shift.seed)
    for stored in calls:
        if not stored.reached_core:
            continue
        result = ep.call(stored.tool, stored.arguments)
        text = result.text()
        if stored.is_error:
            assert stored.result_text.endswith(text), f"shift {shift.pk} call {stored.seq}: refusal differs"
        else:
            assert stored.result_text == text, f"shift {shift.pk} call {stored.seq} ({stored.tool}) differs"
    replayed = play_actions(arm(shift.task_id, shift.seed),
                            [{"tool": c.tool, "arguments": c.arguments} for c in calls if c.reached_core],
                            stop=False)
    last = next((c.header for c in reversed(calls) if c.header), "")
    replayed.call("store_status", {})
    assert store_header(replayed).line == last, f"shift {shift.pk}: final header differs from the replay"
    spent = sum(1 for c in calls if c.reached_core and not REGISTRY[c.tool].free)
    assert replayed.calls == spent, f"shift {shift.pk}: {replayed.calls} operations replayed, {spent} stored"
    return {"calls": len(calls), "operations": spent}

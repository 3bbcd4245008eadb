"""The realistic console load: N participants with think time, over HTTP, against a
multi-process server (``uvicorn --workers W``) on the site's database.

Each participant has a started practice shift of its own (``steady``, enough
operations for a long run), a session made the way ``login()`` makes one, and a CSRF
cookie; it waits a random think time (uniform between half and one and a half times
the mean), posts one tool call as the console's form does (htmx header, a fresh call
id), and so on until the run's time is up.  Reported: latency p50/p95/max, the calls
slower than 150 ms and in how many distinct seconds they were sent, calls per second,
errors (transport errors and any status but 200), shifts over (a read spends an
operation too, so about 1,200 calls play a shift to the store's horizon; its participant
stops calling there, and the count says how many did), lost calls (acknowledged call ids
missing from the database afterwards), and the server's CPU per tool call
(the server processes' user+system time over the run, from ``/proc``, divided by the
calls made in it: every worker and thread included, and what a process spends between
calls), and the median CPU of the calls that had their server process to itself
(``benchmarks.server``: a call's own cost, uncontended, even under load).  After the
run, :data:`BASELINE_REQUESTS` requests to a view that does nothing (``/healthz``) are
sent one after another to the same server, and their median CPU is reported beside the
calls', with the ratio of the two: measured side by side in one run, that ratio holds
on a slower or busier machine where the milliseconds do not.

The latencies are the driving process's own clocks, so its own pauses would be in them:
during the run, what it set up before is frozen out of its garbage collector's walks
(:func:`own_collector_frozen`), and its longest collection is reported beside the slow
calls (``driver_gc_max_ms``).

With ``pages``, each participant also holds its shift page's websocket open
(``/ws/shifts/<pk>/``), as the browser does while the workspace is on screen: the
server then pushes the shift's state to it after every call and on its tick, and that
work is in the CPU figures (the pushes received are counted; the median CPU of a call
that had its process to itself leaves them out, since a push runs beside its call).

The bench's users, shifts and sessions are deleted afterwards.
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.hashers import make_password
from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.backends.db import SessionStore
from django.db import connection
from django.middleware.csrf import _get_new_csrf_string
from django.utils import timezone

from shifts import cache
from shifts.briefing import BRIEFING_VERSION
from shifts.lifecycle import assign_shift, begin_shift
from shifts.models import BriefingAcknowledgement, Shift, ShiftCall

REPO = Path(__file__).resolve().parent.parent
TASK, SEED = "steady", 7
# What participants do: reads, a refused read, writes that spend an operation.
MOVES: list[tuple[str, dict[str, Any]]] = [("list_orders", {"page_size": 5}), ("finance_summary", {}), ("list_returns", {}),
         ("store_status", {}), ("list_inventory", {"page_size": 5}), ("get_product", {"product_id": "nope"})]
WEIGHTS = [4, 2, 2, 1, 2, 1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


WARM_UP_AT_ONCE = 4
WARM_UP_HEADER = "x-bench-warm-up"  # marks a warm-up call, which benchmarks.server does not record
BASELINE_HEADER = "x-bench-baseline"  # marks a no-op request whose CPU benchmarks.server records
BASELINE_REQUESTS = 200
KEEP_ALIVE_S = 120  # how long an idle participant's connection stays open, on both sides


def _cpu_seconds(pid: int) -> float:
    """User+system CPU of ``pid`` and its live children (uvicorn's workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for one in pids:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _session_for(user: AbstractBaseUser) -> str:
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return str(session.session_key)


def participant(username: str, password: str) -> tuple[AbstractBaseUser, Shift, str]:
    """A participant who has read the briefing, with a started practice shift of the bench's
    cell and a signed-in session: the user, the shift and the session's key.  ``password``
    is stored as given (a hash, or ``make_password(None)``'s unusable one)."""
    user = get_user_model().objects.create(username=username, password=password)
    BriefingAcknowledgement.objects.create(user=user, version=BRIEFING_VERSION, acknowledged_at=timezone.now())
    shift = begin_shift(assign_shift(user, TASK, SEED, practice=True))
    return user, shift, _session_for(user)


def remove(people: list[tuple[Any, Shift, str]]) -> None:
    """Delete what :func:`participant` made: the shifts (their calls and this process's live
    episodes with them), the sessions and the users."""
    for _user, shift, key in people:
        cache.evict(shift.pk)
        cached_db.SessionStore(key).delete()  # its row, and the copy a server cached on reading it
    Shift.objects.filter(participant__in=[user for user, _s, _k in people]).delete()
    get_user_model().objects.filter(pk__in=[user.pk for user, _s, _k in people]).delete()


def _setup(participants: int, run: str) -> list[tuple[Any, Shift, str]]:
    hashed = make_password(uuid.uuid4().hex)  # one hash for all: hashing is not what is measured
    return [participant(f"bench-{run}-{index:03d}", hashed) for index in range(participants)]


def _database_url() -> str:
    """The database this process is connected to (a test run's test database included)."""
    db = connection.settings_dict
    auth = quote(db["USER"] or "") + (":" + quote(db["PASSWORD"]) if db["PASSWORD"] else "")
    return f"postgresql://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{quote(db['NAME'])}"


def _start_server(workers: int, port: int, log: Path, cpu_log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "DATABASE_URL": _database_url()}
    env["STOREBENCH_BENCH_CPU_LOG"] = str(cpu_log)  # each call's CPU when it ran alone (benchmarks.server)
    env["DJANGO_SETTINGS_MODULE"] = "benchmarks.settings"  # the site's, with errors logged
    env.setdefault("DJANGO_DEBUG", "0")
    env["DJANGO_SECRET_KEY"] = settings.SECRET_KEY  # the sessions made here are signed with it
    env.setdefault("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost")
    uvicorn = Path(sys.executable).parent / "uvicorn"
    return subprocess.Popen([str(uvicorn), "benchmarks.server:application", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", str(workers), "--log-level", "warning", "--no-access-log",
                             # a participant's connection outlives its think time, as behind a proxy
                             # with sticky sessions: its calls stay on the process holding its shift
                             "--timeout-keep-alive", str(KEEP_ALIVE_S)],
                            cwd=REPO, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


async def _wait_healthy(base: str, server: subprocess.Popen, timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=base, timeout=2) as http:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise RuntimeError("the server exited before answering /healthz")
            try:
                if (await http.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"the server did not answer /healthz within {timeout:.0f} s")


async def _open_pages(base: str, people, headers: list[dict], pushes: list[int]) -> tuple[list, list]:
    """Each participant's shift page socket, and a task per socket counting its pushes."""
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    ws_base = base.replace("http://", "ws://", 1)
    sockets, readers = [], []

    async def read(socket) -> None:
        async for _message in socket:
            pushes[0] += 1

    for index, (_u, shift, _k) in enumerate(people):
        socket = await connect(f"{ws_base}/ws/shifts/{shift.pk}/", origin=Origin(base),
                               additional_headers={"Cookie": headers[index]["Cookie"]})
        await socket.recv()  # the state sent on connect
        sockets.append(socket)
        readers.append(asyncio.ensure_future(read(socket)))
    return sockets, readers


async def _drive(base: str, people, duration: float, think: float, seed: int, cpu_log: Path,
                 pages: bool = False) -> dict:
    """Warm up (one unmeasured call per participant: the server processes load the
    world and their live episodes), then the measured run; each participant keeps its
    own connection, as a browser tab does, so its calls stay on one server process."""
    import httpx

    latencies: list[float] = []
    began_at: list[float] = []  # when each call of ``latencies`` was sent, seconds into the run
    errors: list[str] = []
    over: list[int] = []  # shifts that reached the store's horizon during the run
    acked: dict[int, list[str]] = {shift.pk: [] for _u, shift, _s in people}
    # httpx drops an idle connection after 5 s by default, shorter than a think time: the
    # next call would open a new one, land on either process and rebuild the shift there.
    # Kept alive as long as the server keeps it (--timeout-keep-alive), as a browser does.
    clients = [httpx.AsyncClient(base_url=base, timeout=120,
                                 limits=httpx.Limits(max_connections=1, keepalive_expiry=KEEP_ALIVE_S))
               for _ in people]

    def form(index: int, session_key: str) -> dict:
        csrf = _get_new_csrf_string()
        cookies = {settings.SESSION_COOKIE_NAME: session_key, settings.CSRF_COOKIE_NAME: csrf}
        return {"HX-Request": "true", "X-CSRFToken": csrf,
                "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}

    headers = [form(i, key) for i, (_u, _s, key) in enumerate(people)]

    async def post(index: int, shift: Shift, tool: str, arguments: dict, warm_up: bool = False):
        call_id = uuid.uuid4().hex
        data = {"tool": tool, "call_id": call_id, **{f"arg_{k}": str(v) for k, v in arguments.items()}}
        sent = {**headers[index], WARM_UP_HEADER: "1"} if warm_up else headers[index]
        reply = await clients[index].post(f"/shifts/{shift.pk}/call/", data=data, headers=sent)
        return call_id, reply

    arriving = asyncio.Semaphore(WARM_UP_AT_ONCE)
    sockets: list = []
    readers: list = []
    pushes = [0]

    async def warm(index: int, shift: Shift) -> None:
        async with arriving:  # participants arrive a few at a time, as at the start of a session
            call_id, reply = await post(index, shift, "store_status", {}, warm_up=True)
        if reply.status_code != 200:
            raise RuntimeError(f"warm-up call answered HTTP {reply.status_code}: {reply.text[:300]!r}")
        acked[shift.pk].append(call_id)

    try:
        await asyncio.gather(*(warm(i, shift) for i, (_u, shift, _k) in enumerate(people)))
        if pages:
            sockets, readers = await _open_pages(base, people, headers, pushes)
            pushes[0] = 0

        async def participant(index: int, shift: Shift) -> None:
            rng = random.Random(seed * 100_003 + index)
            await asyncio.sleep(rng.uniform(0, think))  # arrivals spread over one think time
            while time.monotonic() < stop:
                tool, arguments = rng.choices(MOVES, WEIGHTS)[0]
                t = time.perf_counter()
                try:
                    call_id, reply = await post(index, shift, tool, arguments)
                except httpx.TransportError as exc:
                    errors.append(f"{tool}: {exc!r}")
                else:
                    latencies.append(time.perf_counter() - t)
                    began_at.append(t - began)
                    if reply.status_code == 200:
                        acked[shift.pk].append(call_id)
                    elif shift_over(reply.status_code, reply.headers):
                        over.append(shift.pk)
                        return
                    else:
                        errors.append(f"{tool}: HTTP {reply.status_code}")
                await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))

        with own_collector_frozen() as own_pauses:
            cpu_before, began = _cpu_seconds(SERVER_PID[0]), time.perf_counter()
            stop = time.monotonic() + duration
            await asyncio.gather(*(participant(i, shift) for i, (_u, shift, _k) in enumerate(people)))
            wall, cpu = time.perf_counter() - began, _cpu_seconds(SERVER_PID[0]) - cpu_before
        counted = pushes[0]
        for reader in readers:
            reader.cancel()
        for socket in sockets:
            await socket.close()
        for _ in range(BASELINE_REQUESTS):  # after the run: the no-op's CPU, on a process the run warmed
            noop = await clients[0].get("/healthz", headers={**headers[0], BASELINE_HEADER: "1"})
            if noop.status_code != 200:
                errors.append(f"baseline /healthz: HTTP {noop.status_code}")
                break
    finally:
        for client in clients:
            await client.aclose()
    return {"latencies": latencies, "began_at": began_at, "errors": errors, "acked": acked, "wall": wall,
            "cpu": cpu, "over": over, "pushes": counted if pages else None,
            "own_gc_max_s": max(own_pauses, default=0.0)}


@contextlib.contextmanager
def own_collector_frozen() -> Iterator[list[float]]:
    """The measured run's garbage collection in the driving process itself: what was made
    before it (Django, the participants' shifts, their clients and sockets) is frozen out
    of the collector's walks, and the pause of each collection is recorded (seconds).

    The driver's latencies are its own clocks, so its own pauses are in them.  Unfrozen,
    one full collection of the driving process walked all it had set up: 1.1 s once in a
    minute's run with 200 open pages, and every call then in flight was counted as more
    than 150 ms slow, a stall the servers never saw (their own request times were short)."""
    pauses: list[float] = []
    began: list[float | None] = [None]

    def timed(phase: str, _info: dict) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        elif began[0] is not None:  # a stop whose start came before the callback was added is not timed
            pauses.append(time.perf_counter() - began[0])
            began[0] = None

    gc.collect()
    gc.freeze()
    gc.callbacks.append(timed)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(timed)
        gc.unfreeze()


def shift_over(status: int, headers) -> bool:
    """Whether a call's reply says its shift is over: the console sends an htmx page back
    to the workspace (204 with ``HX-Redirect``) when a call ended the shift or came after
    its end. Every read spends an operation too, so about 1,200 calls play a practice
    shift to the store's horizon."""
    return status == 204 and "HX-Redirect" in headers


SERVER_PID = [0]
SLOW_MS = 150.0  # a call slower than this counts as slow (issue 14's bound on p95)
OWN_PAUSE_MS = 50.0  # a collector pause of the driving process worth naming beside slow calls


def slow_calls(began_at: list[float], latencies_ms: list[float], bound_ms: float = SLOW_MS) -> tuple[int, int]:
    """How many calls took longer than ``bound_ms``, and in how many distinct seconds of
    the run they were sent.  Slow calls bunched into a few seconds point at a stall every
    process shared (the database's disk flushing its log, a collector pause); spread over
    the run, at a server short of CPU."""
    slow = [start for start, ms in zip(began_at, latencies_ms, strict=True) if ms > bound_ms]
    return len(slow), len({int(start) for start in slow})


def _solo_cpu(cpu_log: Path) -> dict[str, list[float]]:
    """The CPU (ms) of each measured request that had its server process to itself
    (``benchmarks.server``), by kind (``call``, ``noop``); the file is removed."""
    found: dict[str, list[float]] = {"call": [], "noop": []}
    try:
        lines = cpu_log.read_text().splitlines()
    except FileNotFoundError:
        return found
    cpu_log.unlink()
    for line in lines:
        kind, micros = line.split()
        found[kind].append(int(micros) / 1000)
    return found


def _median_ms(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def run(participants: int, workers: int, duration: float, think: float, seed: int = 7, pages: bool = False) -> dict:
    """Set up, serve, drive, check, clean up; the figures as a dict."""
    run_id = uuid.uuid4().hex[:8]
    people: list = []
    try:
        people.extend(_setup(participants, run_id))
        return _serve_and_drive(people, workers, duration, think, seed, run_id, pages)
    finally:
        remove(people)


def _serve_and_drive(people, workers: int, duration: float, think: float, seed: int, run_id: str,
                     pages: bool = False) -> dict:
    participants = len(people)
    port = _free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-console-{run_id}.log"
    cpu_log = log.with_suffix(".cpu")
    server = _start_server(workers, port, log, cpu_log)
    try:
        base = f"http://127.0.0.1:{port}"
        asyncio.run(_wait_healthy(base, server))
        SERVER_PID[0] = server.pid
        outcome = asyncio.run(_drive(base, people, duration, think, seed, cpu_log, pages))
        wall, cpu = outcome["wall"], outcome["cpu"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
    solo = _solo_cpu(cpu_log)
    call_ms, noop_ms = _median_ms(solo["call"]), _median_ms(solo["noop"])
    lost = 0
    for shift_id, ids in outcome["acked"].items():
        stored = set(ShiftCall.objects.filter(shift_id=shift_id).values_list("call_id", flat=True))
        lost += len(set(ids) - stored)
    latencies = [s * 1000 for s in outcome["latencies"]]
    calls = len(latencies)
    slow, slow_seconds = slow_calls(outcome["began_at"], latencies)
    quantiles = statistics.quantiles(latencies, n=100, method="inclusive") if calls >= 2 else [0.0] * 99
    return {
        "mode": "realistic", "participants": participants, "workers": workers, "think_s_mean": think,
        "duration_s": duration, "database_vendor": connection.vendor, "calls": calls,
        "calls_per_second": round(calls / wall, 1) if wall else None,
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(quantiles[94], 1), "max_ms": round(max(latencies), 1) if latencies else None,
        "slow_calls": slow, "slow_call_seconds": slow_seconds,
        "driver_gc_max_ms": round(outcome["own_gc_max_s"] * 1000, 1),
        "errors": len(outcome["errors"]), "error_samples": outcome["errors"][:5], "lost_calls": lost,
        "shifts_over": len(outcome["over"]), "pages_open": pages, "pushes": outcome["pushes"],
        "server_cpu_ms_per_call": round(cpu * 1000 / calls, 2) if calls else None,
        "server_cpu_ms_per_solo_call_median": call_ms, "solo_calls": len(solo["call"]),
        "server_cpu_ms_per_solo_noop_median": noop_ms, "solo_noops": len(solo["noop"]),
        "solo_cpu_ratio": round(call_ms / noop_ms, 1) if call_ms and noop_ms else None,
        "server_log": str(log),
    }

"""The console under load on loopback, on PostgreSQL: bounded in count and time.

* 50 participants, each on their own shift, post tool calls concurrently for
  ``DURATION`` seconds against one ``uvicorn`` process: no error, no lost action
  (every acknowledged call is stored) and every shift replays exactly, with the
  operation count the stored calls spent.
* Many concurrent calls on ONE shift (with double submits of the same call id) are
  serialised: the stored calls are exactly the distinct call ids, numbered without
  gaps, and the operation count is exact.  Run against one server process and
  against two processes sharing the database (as behind a proxy).

The sessions are made by Django's own ``login()`` (the test client's
``force_login``): password hashing for 50 users is not what is measured here; the
kill test signs in through the login form.
"""
from __future__ import annotations

import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from serverprocs import (
    MOVES,
    WEIGHTS,
    Participant,
    acknowledged,
    free_port,
    make_participants,
    redirect_of,
    replay_check,
    server_env,
    start_console,
)

pytestmark = pytest.mark.services

PARTICIPANTS = 50
DURATION = 60.0


def signed_in(base: str, username: str) -> Participant:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    browser = Participant(base, username, "", timeout=120)
    browser.http.cookies.set("sessionid", client.cookies["sessionid"].value)
    page = browser.http.get("/")  # sets the CSRF cookie
    assert page.status_code == 200
    if "csrftoken" not in browser.http.cookies:
        browser.http.get("/login/")
    return browser


def test_fifty_participants_lose_nothing(live_database, processes):
    import random

    from shifts.models import Shift, ShiftCall

    env = server_env(live_database)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    people = make_participants(PARTICIPANTS, "load", "steady")
    server = start_console(processes, env, port, "console-load")
    browsers = [signed_in(base, u) for u, _p, _s in people]
    stop = time.monotonic() + DURATION
    latencies: list[float] = []
    errors: list[str] = []
    acked: dict[int, list[str]] = {s.pk: [] for _u, _p, s in people}
    answers: dict[str, str] = {}  # call id -> the reply's status and where it pointed (a lost call's)
    ended: set[int] = set()  # shifts whose last window a participant's call ended
    lock = threading.Lock()

    def participant(i: int) -> None:
        rng = random.Random(i)
        browser, shift = browsers[i], people[i][2]
        while time.monotonic() < stop:
            tool, arguments = rng.choices(MOVES, WEIGHTS)[0]
            call_id = uuid.uuid4().hex
            t = time.perf_counter()
            try:
                reply = browser.call(shift.pk, tool, arguments, call_id)
            except httpx.TransportError as exc:
                with lock:
                    errors.append(f"{tool}: {exc!r}")
                continue
            with lock:
                latencies.append(time.perf_counter() - t)
                if acknowledged(reply):
                    acked[shift.pk].append(call_id)
                    answers[call_id] = f"{tool} {reply.status_code} {redirect_of(reply)}"
                else:  # refused (nothing here ends or pauses a shift but its own calls) or failed
                    errors.append(f"{tool}: HTTP {reply.status_code} {redirect_of(reply)}")
            if reply.status_code != 200:
                # The call ended the shift (or was refused): the page goes to the workspace,
                # which shows the end, as a browser follows the redirect.
                with lock:
                    ended.add(shift.pk)
                return

    started = time.monotonic()
    with ThreadPoolExecutor(PARTICIPANTS) as pool:
        for future in [pool.submit(participant, i) for i in range(PARTICIPANTS)]:
            future.result(timeout=DURATION + 180)
    wall = time.monotonic() - started
    for browser in browsers:
        browser.close()
    server.stop()

    assert not errors, errors[:5]
    assert all(Shift.objects.get(pk=pk).status == Shift.Status.ENDED for pk in ended)
    total = sum(len(ids) for ids in acked.values())
    operations = 0
    for shift_id, ids in acked.items():
        stored = set(ShiftCall.objects.filter(shift_id=shift_id).values_list("call_id", flat=True))
        lost = sorted(set(ids) - stored)
        assert not lost, f"shift {shift_id}: lost {len(lost)} acknowledged calls: {[answers[c] for c in lost]}"
        assert len(stored) == len(ids) + 1  # the opening store_status, and nothing unacknowledged
        operations += replay_check(Shift.objects.get(pk=shift_id))["operations"]
    p50 = statistics.median(latencies) * 1000
    p95 = statistics.quantiles(latencies, n=20)[-1] * 1000
    print(f"\nload: {PARTICIPANTS} participants for {wall:.1f} s: {total} acknowledged calls "
          f"({total / wall:.1f}/s), {operations} operations, {len(ended)} shifts played to their end, "
          f"p50 {p50:.0f} ms, p95 {p95:.0f} ms, 0 errors, 0 lost")
    assert total >= PARTICIPANTS  # everyone got through at least once


@pytest.mark.parametrize("servers", [1, 2])
def test_concurrent_calls_on_one_shift_are_serialised(live_database, processes, servers):
    from environment.tools import REGISTRY
    from shifts.models import Shift, ShiftCall

    threads, per_thread = 16, 8
    env = server_env(live_database)
    ((username, _pw, shift),) = make_participants(1, f"one{servers}-", "steady")
    ports = [free_port() for _ in range(servers)]
    for n, port in enumerate(ports):
        start_console(processes, env, port, f"console-one-{n}")
    sent: dict[str, str] = {}
    lock = threading.Lock()
    errors: list[str] = []

    browsers = [signed_in(f"http://127.0.0.1:{ports[i % servers]}", username) for i in range(threads)]

    def clicker(i: int) -> None:
        browser = browsers[i]
        mine = []
        for k in range(per_thread):
            tool, arguments = MOVES[(i + k) % len(MOVES)]
            call_id = uuid.uuid4().hex
            for _attempt in range(2 if k % 3 == 0 else 1):  # a double submit every third call
                reply = browser.call(shift.pk, tool, arguments, call_id)
                if not acknowledged(reply):
                    with lock:
                        errors.append(f"{tool}: HTTP {reply.status_code} {redirect_of(reply)}")
            mine.append((call_id, tool))
        with lock:
            sent.update(mine)
        browser.close()

    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(clicker, i) for i in range(threads)]:
            future.result(timeout=300)
    assert not errors, errors[:5]
    shift = Shift.objects.get(pk=shift.pk)
    stored = dict(ShiftCall.objects.filter(shift=shift).values_list("call_id", "tool"))
    stored.pop("opening-store-status", None)
    assert stored == sent  # each call id once: double submits spent nothing
    checked = replay_check(shift)  # seq without gaps; every result and the header as replayed
    expected_ops = sum(1 for tool in sent.values() if not REGISTRY[tool].free)
    assert checked["operations"] == expected_ops
    print(f"\none shift, {servers} server process(es): {len(sent)} distinct calls from {threads} threads "
          f"(+{sum(1 for i in range(threads) for k in range(per_thread) if k % 3 == 0)} double submits), "
          f"{checked['operations']} operations, exact")

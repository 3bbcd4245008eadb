"""A console server killed with SIGKILL mid-shift loses no acknowledged action.

The console runs as a real ``uvicorn`` process on PostgreSQL.  Participants sign in
with Django's login form and post tool calls to the shift call view from threads,
as browsers do.  At random moments the server process is SIGKILLed, with calls in
flight, and restarted; every participant then resends the call whose reply it never
got, with the same call id (what a browser retry does), and carries on.

An acknowledged action is a call whose HTTP reply (200, 204 or 302) came back before
the kill.  At the end every acknowledged call must be stored, and every shift must be
exactly what an uninterrupted in-process replay of its stored calls gives: each
stored result, the final header and the operation count (``replay_check``).  After
the last restart each shift is read once more over HTTP, so the state the restarted
server rebuilt by replay is compared too.
"""
from __future__ import annotations

import random
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
    wait_for,
)

pytestmark = pytest.mark.services

KILLS = 50
SHIFTS = 6
TASK = "full-year"  # 365 windows: no shift runs out during the test
class Driver(threading.Thread):
    """One participant's browser: calls in a loop until told to stop; remembers what
    was acknowledged and the one call in flight when the server died."""

    def __init__(self, base, username, password, shift, rng):
        super().__init__(daemon=True)
        self.base, self.username, self.password, self.shift_id, self.rng = base, username, password, shift.pk, rng
        self.acked: list[str] = []
        self.pending: tuple[str, str, dict] | None = None
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.browser = Participant(base, username, password, timeout=20)

    def run_once(self) -> None:
        while not self.stop.is_set():
            if self.pending is None:
                tool, arguments = self.rng.choices(MOVES, WEIGHTS)[0]
                self.pending = (uuid.uuid4().hex, tool, arguments)
            call_id, tool, arguments = self.pending
            try:
                reply = self.browser.call(self.shift_id, tool, arguments, call_id)
            except httpx.TransportError:
                return  # the server died under us: this call stays pending
            if not acknowledged(reply):
                self.errors.append(f"{tool}: HTTP {reply.status_code} {redirect_of(reply)} {reply.text[:200]}")
                return
            self.acked.append(call_id)
            self.pending = None


class KillLoop:
    """One console server and its participants: drive, SIGKILL at a random point,
    restart, resend what was in flight; ``kills`` times."""

    def __init__(self, n, processes, env, people, kills, rng):
        self.n, self.processes, self.env, self.kills, self.rng = n, processes, env, kills, rng
        self.port = free_port()
        base = f"http://127.0.0.1:{self.port}"
        self.drivers = [Driver(base, u, p, s, random.Random(rng.random())) for u, p, s in people]
        self.done_kills = 0
        self.in_flight_at_kill = 0

    def acked(self) -> int:
        return sum(len(d.acked) for d in self.drivers)

    def run(self) -> None:
        server = start_console(self.processes, self.env, self.port, f"console-{self.n}-0")
        for d in self.drivers:
            d.browser.login()
        for kill in range(1, self.kills + 1):
            for d in self.drivers:
                d.stop.clear()
            threads = [threading.Thread(target=d.run_once, daemon=True) for d in self.drivers]
            for t in threads:
                t.start()
            # A random point: after a random number of acknowledged calls since the restart
            # (the first calls after a restart rebuild each episode by replay), then a few
            # random milliseconds more, so calls are in flight at every stage of a request.
            target = self.acked() + self.rng.randint(1, 3 * len(self.drivers))
            wait_for(lambda target=target: self.acked() >= target or any(d.errors for d in self.drivers),
                     60, "acknowledged calls", server, interval=0.005)
            time.sleep(self.rng.uniform(0, 0.05))
            server.kill()  # SIGKILL, replies in flight or not
            self.done_kills = kill
            for d in self.drivers:
                d.stop.set()
            for t in threads:
                t.join(timeout=30)
                assert not t.is_alive(), "a participant thread hung"
            self.in_flight_at_kill += sum(d.pending is not None for d in self.drivers)
            server = start_console(self.processes, self.env, self.port, f"console-{self.n}-{kill}")
        # After the last restart: resend what is pending, then read each store once more.
        for d in self.drivers:
            if d.pending is not None:
                call_id, tool, arguments = d.pending
                reply = d.browser.call(d.shift_id, tool, arguments, call_id)
                assert acknowledged(reply), (reply.status_code, redirect_of(reply))
                d.acked.append(call_id)
                d.pending = None
            reply = d.browser.call(d.shift_id, "store_status", {}, uuid.uuid4().hex)
            assert acknowledged(reply), (reply.status_code, redirect_of(reply))
            d.browser.close()
        server.stop()


def test_kill_nine_mid_shift_loses_no_acknowledged_action(live_database, processes):
    """Two console servers side by side (each with its own participants), each killed
    KILLS / 2 times: the kills are counted together."""
    from shifts.models import Shift, ShiftCall

    started = time.monotonic()
    rng = random.Random(20261129)
    env = server_env(live_database)
    people = make_participants(SHIFTS, "kill", TASK)
    half = SHIFTS // 2
    loops = [KillLoop(i, processes, env, group, KILLS // 2, random.Random(rng.random()))
             for i, group in enumerate([people[:half], people[half:]])]
    with ThreadPoolExecutor(len(loops)) as pool:
        for future in [pool.submit(loop.run) for loop in loops]:
            future.result(timeout=900)  # re-raises a loop's failure here

    drivers = [d for loop in loops for d in loop.drivers]
    kills = sum(loop.done_kills for loop in loops)
    acked = sum(len(d.acked) for d in drivers)
    lost = [(d.shift_id, cid) for d in drivers for cid in d.acked
            if not ShiftCall.objects.filter(shift_id=d.shift_id, call_id=cid).exists()]
    errors = [e for d in drivers for e in d.errors]
    totals = {"calls": 0, "operations": 0}
    for d in drivers:
        shift = Shift.objects.get(pk=d.shift_id)
        assert shift.status == Shift.Status.ACTIVE
        checked = replay_check(shift)
        totals = {k: totals[k] + checked[k] for k in totals}
        assert len(set(d.acked)) == len(d.acked)
    elapsed = time.monotonic() - started
    print(f"\nkill test: {kills} kills (SIGKILL), {SHIFTS} shifts, {acked} acknowledged calls, "
          f"{sum(loop.in_flight_at_kill for loop in loops)} calls in flight at a kill, {totals['calls']} stored "
          f"calls, {totals['operations']} operations, lost {len(lost)}, errors {len(errors)}, {elapsed:.1f} s")
    assert not errors, errors[:5]
    assert lost == []
    assert kills >= 50

"""Instructions per console tool call, counted by valgrind's callgrind: a figure the host's
speed does not move.

The realistic mode's CPU figures (:mod:`benchmarks.realistic`) move with the machine: the
same commit measured 3.1 and 4.8 ms a call on one machine an hour apart, as its speed
drifted (``sum(range(1000))`` in 10 µs, then 13).  Callgrind counts the instructions a
process executes instead, which are the same for the same code, inputs and environment
whatever else the machine is doing; so two commits can be set side by side to a fraction
of a percent, on any machine, busy or not.

What is counted: the site's ASGI application (``config.asgi``, as the server runs it, the
worker thread and the event loop both) answering a participant's tool calls of the realistic
mix, in one process, on the database the settings name (``DATABASE_URL``; migrate it
first), with the production settings a server runs on (debug off unless ``DJANGO_DEBUG``
says otherwise) over plain HTTP (``STOREBENCH_PLAIN_HTTP=1``, as the realistic mode's
server: behind a proxy that ends TLS); call ids are drawn from a seeded generator, so the
two runs make the same calls.  Uvicorn's HTTP parsing is left out, and so are PostgreSQL's and Redis's own work
(other processes).  The process runs twice under callgrind, once making ``warm`` calls and
once ``warm + calls``: the difference over ``calls`` is what one call costs, start-up, the
world's loading and the first, colder calls cancelling out.  The same for a no-op request
(``GET /healthz``) gives the ratio the realistic mode reports beside its CPU figures.

An instruction count is not a time: it leaves out cache misses and system calls' own
work, so it sets code against code, not against a millisecond target.

``python -m benchmarks.call_instructions [--calls 100] [--warm 30] [--json]`` (four runs
under callgrind, about 70 s each on 2026-12-04's machine).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import subprocess
import sys
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
COLLECTED = re.compile(r"^==\d+== Collected : (\d+)$", re.MULTILINE)
KINDS = ("call", "noop")


class InstructionCountError(RuntimeError):
    """valgrind is missing, or a counted run failed."""


def collected(stderr: str) -> int:
    """The instruction count callgrind prints at the end of a run (``==pid== Collected : N``)."""
    found = COLLECTED.findall(stderr)
    if len(found) != 1:
        raise InstructionCountError("callgrind printed no instruction count; its output ended:\n"
                                    + "\n".join(stderr.splitlines()[-15:]))
    return int(found[0])


def per_request(fewer: int, more: int, extra: int) -> int:
    """Instructions of one request: two runs ``extra`` requests apart."""
    if more <= fewer:
        raise InstructionCountError(f"the run with {extra} more requests counted {more:,} instructions, not more "
                                    f"than the shorter run's {fewer:,}")
    return round((more - fewer) / extra)


# --- the counted process ---------------------------------------------------------------------------

def drive(kind: str, requests: int, seed: int = 7) -> Counter[int]:
    """Make ``requests`` requests of ``kind`` through the site's ASGI application, as one
    signed-in participant of a fresh practice shift; how many were answered with each status."""
    from config.asgi import application  # first: it sets Django up

    # isort: split
    from django.conf import settings
    from django.contrib.auth.hashers import make_password
    from django.middleware.csrf import _get_new_csrf_string

    from benchmarks.realistic import MOVES, WEIGHTS, participant, remove

    # no password hash: it is not what is counted
    people = [participant(f"instructions-{uuid.uuid4().hex[:12]}", make_password(None))]
    try:
        _user, shift, session_key = people[0]
        csrf = _get_new_csrf_string()
        cookie = f"{settings.SESSION_COOKIE_NAME}={session_key}; {settings.CSRF_COOKIE_NAME}={csrf}".encode()
        rng = random.Random(seed)
        path = f"/shifts/{shift.pk}/call/" if kind == "call" else "/healthz"

        async def one() -> int:
            if kind == "call":
                tool, arguments = rng.choices(MOVES, WEIGHTS)[0]
                body = urllib.parse.urlencode({"tool": tool, "call_id": uuid.UUID(int=rng.getrandbits(128)).hex,
                                               **{f"arg_{k}": str(v) for k, v in arguments.items()}}).encode()
                method, headers = "POST", [(b"hx-request", b"true"), (b"x-csrftoken", csrf.encode()),
                                           (b"content-type", b"application/x-www-form-urlencoded")]
            else:
                body, method, headers = b"", "GET", []
            scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                     "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
                     "headers": [(b"host", b"127.0.0.1"), (b"cookie", cookie),
                                 (b"content-length", str(len(body)).encode()), *headers],
                     "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80)}
            received = False
            sent: list[dict[str, Any]] = []

            async def receive() -> dict[str, Any]:
                nonlocal received
                if received:  # the request is whole: what a server's receive does next is wait
                    await asyncio.Event().wait()
                received = True
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                sent.append(message)

            await application(scope, receive, send)
            return int(sent[0]["status"])

        async def all_of_them() -> Counter[int]:
            return Counter([await one() for _ in range(requests)])

        return asyncio.run(all_of_them())
    finally:
        remove(people)


def unanswered(kind: str, requests: int, statuses: Counter[int]) -> str:
    """What went wrong when not every request was answered 200 ("" when every one was)."""
    if statuses[200] == requests:
        return ""
    seen = ", ".join(f"{count} answered {status}" for status, count in sorted(statuses.items()))
    return (f"only {statuses[200]} of {requests} {kind} requests were answered 200 ({seen}): a 301 is the redirect to "
            "HTTPS (set STOREBENCH_PLAIN_HTTP=1), a 403 a refused sign-in or CSRF token")


# --- the runs under callgrind ----------------------------------------------------------------------

def count(kind: str, requests: int, run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> int:
    """Instructions of a whole process making ``requests`` requests of ``kind`` under callgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise InstructionCountError("valgrind is not installed (Debian: apt-get install valgrind); the realistic "
                                    "mode (manage.py bench_console --realistic) measures CPU time without it")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.setdefault("STOREBENCH_PLAIN_HTTP", "1")  # see the module: a redirect to HTTPS is not what is counted
    done = run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
                "benchmarks.call_instructions", "--drive", kind, str(requests)],
               cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise InstructionCountError(f"the counted run of {requests} {kind} requests failed (exit {done.returncode}):\n"
                                    + "\n".join(done.stderr.splitlines()[-15:]))
    return collected(done.stderr)


def measure(calls: int, warm: int, progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    figures: dict[str, Any] = {"calls": calls, "warm": warm}
    for kind in KINDS:
        runs = []
        for n in (warm, warm + calls):
            progress(f"{kind}: {n} requests under callgrind (about a minute)")
            runs.append(count(kind, n))
        figures[f"{kind}_instructions"] = per_request(runs[0], runs[1], calls)
    figures["ratio"] = round(figures["call_instructions"] / figures["noop_instructions"], 1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.call_instructions", description=(
        "Count the instructions of one console tool call (the realistic mix, through the site's ASGI application, "
        "on the database DATABASE_URL names) and of a no-op request, with valgrind's callgrind: figures that do not "
        "move with the machine's speed, to set two commits side by side."))
    parser.add_argument("--calls", type=int, default=100, help="requests counted, beyond the warm ones (default 100)")
    parser.add_argument("--warm", type=int, default=30, help="requests made first, in both runs (default 30)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--drive", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)  # the counted process
    args = parser.parse_args(argv)
    if args.drive:
        kind, n = args.drive
        problem = unanswered(kind, int(n), drive(kind, int(n)))
        if problem:
            print(problem, file=sys.stderr)
            return 1
        return 0
    if args.calls < 1 or args.warm < 1:
        parser.error("--calls and --warm take a whole number of at least 1")
    try:
        figures = measure(args.calls, args.warm,
                          progress=lambda msg: print(f"instructions: {msg}", file=sys.stderr, flush=True))
    except InstructionCountError as failed:
        print(f"call_instructions: {failed}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"a tool call: {figures['call_instructions']:,} instructions; a no-op request: "
              f"{figures['noop_instructions']:,} (ratio {figures['ratio']}); {args.calls} counted after {args.warm}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(main())

"""The console as the realistic bench serves it: ``config.asgi``'s application, with the
server CPU of each tool call recorded when the call had its process to itself.

A call's CPU is its process's CPU time (:func:`time.process_time`: every thread, the
request's worker and the event loop) from the moment the application is called until
it returns, by when the reply is sent and the shift's event handed on.  That time is the
call's own only when no other request of the same process was in flight meanwhile:
calls that overlapped another request are not recorded (other processes do not count,
their CPU is their own).  So the figures are uncontended per-call costs, even under
load, and the bench can give their median beside its mean over the whole run (which
also carries what a process spends between calls).

Each process appends one line per recorded request to the file
``STOREBENCH_BENCH_CPU_LOG`` names, ``call`` or ``noop`` and its CPU in microseconds;
without it nothing is recorded.  The bench's warm-up calls (each participant's first:
its process loads the world and builds the episode) carry the header
:data:`WARM_UP_HEADER` and are not recorded.  A ``GET /healthz`` (a view that returns a
constant) carrying :data:`BASELINE_HEADER` is recorded as ``noop``: the same server's
cost of a request that does nothing, to set the tool calls' figure beside.
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from config.asgi import application as site  # first: it sets Django up

# isort: split
from benchmarks.realistic import BASELINE_HEADER, WARM_UP_HEADER

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOOL_CALL = re.compile(r"^/shifts/\d+/call/$")
NOOP = "/healthz"


def kind_of(scope: Scope) -> str | None:
    """``call`` for a measured tool call, ``noop`` for a baseline request, else None (not recorded)."""
    headers = {name for name, _value in scope.get("headers", ())}
    method, path = scope.get("method"), scope.get("path", "")
    if method == "POST" and TOOL_CALL.match(path) and WARM_UP_HEADER.encode() not in headers:
        return "call"
    if method == "GET" and path == NOOP and BASELINE_HEADER.encode() in headers:
        return "noop"
    return None


class SoloCallCpu:
    """ASGI middleware: the CPU of every tool call that ran alone in its process (see the module)."""

    def __init__(self, app: ASGIApp, log_path: str | None) -> None:
        self.app = app
        self.log_path = log_path
        self.in_flight: dict[int, bool] = {}  # request -> overlapped another request
        self.next_id = 0
        self._log: Any = None

    def _write(self, kind: str, micros: int) -> None:
        if self._log is None:
            assert self.log_path is not None
            self._log = open(self.log_path, "a", buffering=1)  # noqa: SIM115 - kept open for the process
        self._log.write(f"{kind} {micros}\n")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.log_path is None:
            await self.app(scope, receive, send)
            return
        me = self.next_id
        self.next_id += 1
        overlapped = bool(self.in_flight)
        for other in self.in_flight:
            self.in_flight[other] = True
        self.in_flight[me] = overlapped
        began = time.process_time()
        try:
            await self.app(scope, receive, send)
        finally:
            spent = time.process_time() - began
            alone = not self.in_flight.pop(me)
            kind = kind_of(scope)
            if alone and kind is not None:
                self._write(kind, round(spent * 1_000_000))


application = SoloCallCpu(site, os.environ.get("STOREBENCH_BENCH_CPU_LOG"))

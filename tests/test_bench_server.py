"""The bench server's per-call CPU record (benchmarks.server): only tool calls that had
their process to themselves, never a warm-up call."""
from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks.server import BASELINE_HEADER, WARM_UP_HEADER, SoloCallCpu


def scope(path: str = "/shifts/7/call/", method: str = "POST", warm_up: bool = False, baseline: bool = False) -> dict:
    headers = [(b"host", b"127.0.0.1")] + ([(WARM_UP_HEADER.encode(), b"1")] if warm_up else [])
    headers += [(BASELINE_HEADER.encode(), b"1")] if baseline else []
    return {"type": "http", "method": method, "path": path, "headers": headers}


class Gate:
    """An ASGI app that burns a little CPU, then waits until released (to make requests overlap)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def __call__(self, scope, receive, send) -> None:
        sum(i * i for i in range(20_000))
        await self.release.wait()


async def _nothing(*_args):
    return None


def open_gate() -> Gate:
    app = Gate()
    app.release.set()
    return app


def test_a_call_alone_is_recorded_and_overlapping_ones_are_not(tmp_path: Path):
    log = tmp_path / "cpu.log"

    async def run() -> None:
        app = open_gate()
        bench = SoloCallCpu(app, str(log))
        await bench(scope(), _nothing, _nothing)  # alone
        app.release.clear()
        first = asyncio.create_task(bench(scope(), _nothing, _nothing))
        await asyncio.sleep(0)
        second = asyncio.create_task(bench(scope(), _nothing, _nothing))
        await asyncio.sleep(0)
        app.release.set()
        await asyncio.gather(first, second)  # each overlapped the other
        await bench(scope(), _nothing, _nothing)  # alone again

    asyncio.run(run())
    lines = [line.split() for line in log.read_text().splitlines()]
    assert len(lines) == 2 and all(kind == "call" and int(micros) > 0 for kind, micros in lines)


def test_warm_up_calls_pages_and_gets_are_not_recorded(tmp_path: Path):
    log = tmp_path / "cpu.log"

    async def run() -> None:
        bench = SoloCallCpu(open_gate(), str(log))
        await bench(scope(warm_up=True), _nothing, _nothing)
        await bench(scope(path="/shifts/7/"), _nothing, _nothing)
        await bench(scope(method="GET"), _nothing, _nothing)
        await bench(scope(), _nothing, _nothing)

    asyncio.run(run())
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["call"]


def test_a_baseline_healthz_is_recorded_as_a_noop_and_a_plain_one_is_not(tmp_path: Path):
    log = tmp_path / "cpu.log"

    async def run() -> None:
        bench = SoloCallCpu(open_gate(), str(log))
        await bench(scope(path="/healthz", method="GET"), _nothing, _nothing)  # the bench's wait for the server
        await bench(scope(path="/healthz", method="GET", baseline=True), _nothing, _nothing)
        await bench(scope(path="/shifts/7/", method="GET", baseline=True), _nothing, _nothing)

    asyncio.run(run())
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["noop"]


def test_without_a_log_path_nothing_is_written(tmp_path: Path):
    async def run() -> None:
        await SoloCallCpu(open_gate(), None)(scope(), _nothing, _nothing)

    asyncio.run(run())
    assert list(tmp_path.iterdir()) == []

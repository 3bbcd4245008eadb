"""Benchmark: a console tool page against a minimal Django view, under concurrent participants.

Each simulated participant is a thread with its own signed-in test client and its own
started (practice) shift. After a warm-up, all threads start together and each
alternates a real tool call through the console's call view (``list_orders``, which
spends an operation, as an htmx request) with a GET of a no-op view, so both are
timed under the same load in the same run. Times are in-process server times (the
test client calls the handler directly; there is no network). The no-op view exists
only in this command's URLconf (``benchmarks.urls``). The benchmark's users and
shifts are deleted afterwards.

Before the concurrent phase, one more participant runs alone (the same alternation,
``--calls`` times each), so the uncontended figures come from the same run and process.

What the figures mean:

- ``*_median_ms``: wall time of ``Client.post``/``Client.get``, as before; under
  concurrency this includes queueing for the GIL and for the database's locks.
- ``*_cpu_median_ms``: CPU time of the handler's own thread (``time.thread_time_ns``
  around the whole middleware stack, taken by a middleware this command adds first),
  which excludes queueing.  It also excludes work the handler hands to other threads:
  the MCP server runs the core call on its worker thread, and outside an ASGI server
  the live notification runs on a thread ``async_to_sync`` starts.
- ``single_*_process_cpu_median_ms``: CPU time of the whole process per request in the
  uncontended phase (``time.process_time_ns``, every thread), which includes that
  handed-off work: the honest per-request cost.
- ``tool_calls_per_second``: tool calls completed in the concurrent phase over its wall
  time (the no-op requests run in the same time).

The JSON keys ``participants, calls_per_participant, tool, tool_page_median_ms,
noop_median_ms, ratio, tool_page_p90_ms, noop_p90_ms, errors, wall_seconds`` are stable
(``storebench bench`` reads them); the others are added after them.

The database is the site's: ``DATABASE_URL`` chooses it, as for ``runserver``.  On
PostgreSQL, with a database of your own, migrated first:

    createdb -h 127.0.0.1 -U postgres storebench_bench
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/storebench_bench .venv/bin/python manage.py migrate
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/storebench_bench .venv/bin/python manage.py bench_console --json

On a SQLite file: ``DATABASE_URL=sqlite:////tmp/bench.sqlite3`` (migrated the same way).
"""
from __future__ import annotations

import json
import statistics
import threading
import time
import uuid

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from benchmarks import realistic
from shifts.briefing import BRIEFING_VERSION, PRACTICE_CELL
from shifts.cache import clear_cache
from shifts.lifecycle import assign_shift, begin_shift
from shifts.models import BriefingAcknowledgement, Shift
from studies.bots import SiteClient

TOOL = "list_orders"
MAX_CALLS = 100  # below the practice task's operation budget, so the store stays open


TIMER = "benchmarks.management.commands.bench_console.handler_timer"


def handler_timer(get_response):
    """Middleware (outermost, added by this command only): CPU times of the handler,
    put on the response as ``bench_thread_cpu_ns`` and ``bench_process_cpu_ns``."""

    def timed(request):
        thread_began, process_began = time.thread_time_ns(), time.process_time_ns()
        response = get_response(request)
        response.bench_thread_cpu_ns = time.thread_time_ns() - thread_began  # type: ignore[attr-defined]
        response.bench_process_cpu_ns = time.process_time_ns() - process_began  # type: ignore[attr-defined]
        return response

    return timed


def _ms(values_ns: list[int]) -> float:
    return round(statistics.median(values_ns) / 1e6, 3)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


class Command(BaseCommand):
    help = "Median server time of a console tool page vs a no-op Django view under concurrent participants."

    def add_arguments(self, parser):
        parser.add_argument("--participants", type=int, default=20,
                            help="concurrent participants (default 20; 1 to 200, or 1 to 1000 with --realistic)")
        parser.add_argument("--calls", type=int, default=10, help="tool calls (and no-op views) per participant")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--realistic", action="store_true",
                            help="instead: N participants with think time over HTTP against `uvicorn --workers W`"
                                 " on this database (PostgreSQL: set DATABASE_URL; see benchmarks.realistic)")
        parser.add_argument("--workers", type=int, default=2, help="server processes in --realistic (default 2)")
        parser.add_argument("--duration", type=float, default=60.0, help="seconds of load in --realistic (default 60)")
        parser.add_argument("--think", type=float, default=5.0,
                            help="mean think time between a participant's calls in --realistic (default 5 s)")
        parser.add_argument("--pages", action="store_true",
                            help="in --realistic, each participant also keeps its shift page's websocket open, as a "
                                 "browser does: the server pushes the shift's state to it after each call")

    def handle(self, *args, **options) -> None:
        if options["realistic"]:
            return self._realistic(options)
        participants, calls = options["participants"], options["calls"]
        if not 1 <= participants <= 200:
            raise CommandError(f"--participants must be between 1 and 200, not {participants}")
        if not 1 <= calls <= MAX_CALLS:
            raise CommandError(f"--calls must be between 1 and {MAX_CALLS}, not {calls}")
        run = uuid.uuid4().hex[:8]
        User = get_user_model()
        users = []
        try:
            with override_settings(ROOT_URLCONF="benchmarks.urls", MIDDLEWARE=[TIMER, *settings.MIDDLEWARE]):
                shifts = []
                for index in range(participants + 1):  # the last one runs alone, first
                    user = User.objects.create_user(f"bench-{run}-{index:03d}")
                    users.append(user)
                    BriefingAcknowledgement.objects.create(user=user, version=BRIEFING_VERSION,
                                                           acknowledged_at=timezone.now())
                    task_id, seed = PRACTICE_CELL
                    shifts.append(begin_shift(assign_shift(user, task_id, seed, practice=True)))
                single = self._measure(users[-1:], shifts[-1:], calls)
                result = self._measure(users[:-1], shifts[:-1], calls)
        finally:
            Shift.objects.filter(participant__in=users).delete()
            User.objects.filter(pk__in=[u.pk for u in users]).delete()
            clear_cache()
        result = {"participants": participants, "calls_per_participant": calls, "tool": TOOL, **result}
        result.update({
            "single_tool_page_median_ms": single["tool_page_median_ms"],
            "single_noop_median_ms": single["noop_median_ms"],
            "single_ratio": single["ratio"],
            "single_tool_page_cpu_median_ms": single["tool_page_cpu_median_ms"],
            "single_noop_cpu_median_ms": single["noop_cpu_median_ms"],
            "single_cpu_ratio": single["cpu_ratio"],
            "single_tool_page_process_cpu_median_ms": single["tool_page_process_cpu_median_ms"],
            "single_noop_process_cpu_median_ms": single["noop_process_cpu_median_ms"],
            "single_process_cpu_ratio": single["process_cpu_ratio"],
            "single_errors": single["errors"],
            "database_vendor": connection.vendor,
        })
        for key in ("tool_page_process_cpu_median_ms", "noop_process_cpu_median_ms", "process_cpu_ratio"):
            del result[key]  # with other threads running, process time is theirs too
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                f"{participants} participants x {calls} calls on {connection.vendor}: tool page median"
                f" {result['tool_page_median_ms']} ms, no-op view median {result['noop_median_ms']} ms,"
                f" ratio {result['ratio']}; handler CPU {result['tool_page_cpu_median_ms']} vs"
                f" {result['noop_cpu_median_ms']} ms, ratio {result['cpu_ratio']};"
                f" alone: {result['single_tool_page_median_ms']} vs {result['single_noop_median_ms']} ms,"
                f" ratio {result['single_ratio']}; {result['tool_calls_per_second']} tool calls/s"
                f" (errors: {result['errors']}, {result['wall_seconds']} s)")

    def _realistic(self, options) -> None:
        participants, workers = options["participants"], options["workers"]
        if not 1 <= participants <= 1000:
            raise CommandError(f"--participants must be between 1 and 1000, not {participants}")
        if not 1 <= workers <= 16:
            raise CommandError(f"--workers must be between 1 and 16, not {workers}")
        if options["duration"] <= 0 or options["think"] <= 0:
            raise CommandError("--duration and --think must be positive (seconds)")
        if connection.vendor != "postgresql":
            raise CommandError("--realistic serves several processes from one database: set DATABASE_URL to a "
                               "PostgreSQL database of your own (migrated), e.g. "
                               "postgresql://postgres@127.0.0.1:5432/storebench_bench")
        result = realistic.run(participants, workers, options["duration"], options["think"], pages=options["pages"])
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                f"{participants} participants (think {options['think']} s) against {workers} server processes on "
                f"{result['database_vendor']} for {options['duration']} s: {result['calls']} calls "
                f"({result['calls_per_second']}/s), p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, max "
                f"{result['max_ms']} ms, server CPU {result['server_cpu_ms_per_call']} ms per call over the run "
                f"(median {result['server_cpu_ms_per_solo_call_median']} ms over the {result['solo_calls']} calls "
                f"that had their process to themselves; a no-op view's median {result['server_cpu_ms_per_solo_noop_median']}"
                f" ms, ratio {result['solo_cpu_ratio']}), {self._slow(result)}, {result['errors']} errors,"
                f" {result['lost_calls']} lost{self._over(result)}")

    @staticmethod
    def _over(result: dict) -> str:
        if not result["shifts_over"]:
            return ""
        return (f"; {result['shifts_over']} of {result['participants']} participants played their shift to the "
                "store's horizon (about 1,200 calls) and stopped calling there: shorten --duration or lengthen --think")

    @staticmethod
    def _slow(result: dict) -> str:
        if not result["slow_calls"]:
            return f"no call over {realistic.SLOW_MS:.0f} ms"
        pause = result["driver_gc_max_ms"]
        own = (f" (the bench's own longest collector pause was {pause} ms: its latencies include it)"
               if pause >= realistic.OWN_PAUSE_MS else "")
        return (f"{result['slow_calls']} calls over {realistic.SLOW_MS:.0f} ms, sent within "
                f"{result['slow_call_seconds']} distinct seconds (bunched in a few: a stall every server process "
                f"shared, such as the database's disk flushing its log){own}")

    def _measure(self, users, shifts, calls) -> dict:
        clients = []
        for user in users:
            client = SiteClient(raise_request_exception=False)  # a failed request counts as an error
            client.force_login(user)
            clients.append(client)
        tool_ms: list[float] = []
        noop_ms: list[float] = []
        cpu_ns: dict[str, list[int]] = {"tool": [], "noop": [], "tool_process": [], "noop_process": []}
        errors: list[str] = []
        record = threading.Lock()
        start = threading.Barrier(len(users))

        def participant(client: SiteClient, shift: Shift) -> None:
            url = f"/shifts/{shift.pk}/call/"
            try:
                mine_tool, mine_noop = [], []
                mine_cpu: dict[str, list[int]] = {key: [] for key in cpu_ns}
                client.get("/bench/noop")  # warm-up, untimed
                start.wait()
                for _ in range(calls):
                    data = {"tool": TOOL, "call_id": uuid.uuid4().hex, "arg_page_size": "5"}
                    began = time.perf_counter()
                    response = client.post(url, data, HTTP_HX_REQUEST="true")
                    mine_tool.append((time.perf_counter() - began) * 1000)
                    if response.status_code != 200:
                        errors.append(f"tool page answered {response.status_code}: {response.content[:120]!r}")
                    mine_cpu["tool"].append(response.bench_thread_cpu_ns)  # type: ignore[attr-defined]
                    mine_cpu["tool_process"].append(response.bench_process_cpu_ns)  # type: ignore[attr-defined]
                    began = time.perf_counter()
                    response = client.get("/bench/noop")
                    mine_noop.append((time.perf_counter() - began) * 1000)
                    if response.status_code != 200:
                        errors.append(f"no-op view answered {response.status_code}: {response.content[:120]!r}")
                    mine_cpu["noop"].append(response.bench_thread_cpu_ns)  # type: ignore[attr-defined]
                    mine_cpu["noop_process"].append(response.bench_process_cpu_ns)  # type: ignore[attr-defined]
                with record:
                    tool_ms.extend(mine_tool)
                    noop_ms.extend(mine_noop)
                    for key, values in mine_cpu.items():
                        cpu_ns[key].extend(values)
            finally:
                connection.close()

        threads = [threading.Thread(target=participant, args=(c, s)) for c, s in zip(clients, shifts, strict=True)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        if errors:  # figures of error pages would pass for the tool page's
            raise CommandError(f"{len(errors)} of {len(tool_ms) + len(noop_ms)} requests failed, so no figure is "
                               f"reported; the first: {errors[0]}")
        tool_median, noop_median = statistics.median(tool_ms), statistics.median(noop_ms)
        tool_cpu, noop_cpu = _ms(cpu_ns["tool"]), _ms(cpu_ns["noop"])
        tool_process, noop_process = _ms(cpu_ns["tool_process"]), _ms(cpu_ns["noop_process"])
        return {
            "tool_page_median_ms": round(tool_median, 3),
            "noop_median_ms": round(noop_median, 3),
            "ratio": round(tool_median / noop_median, 2),
            "tool_page_p90_ms": round(_percentile(tool_ms, 0.9), 3),
            "noop_p90_ms": round(_percentile(noop_ms, 0.9), 3),
            "errors": len(errors),
            "wall_seconds": round(wall, 2),
            "tool_page_cpu_median_ms": tool_cpu,
            "noop_cpu_median_ms": noop_cpu,
            "cpu_ratio": round(tool_cpu / noop_cpu, 2) if noop_cpu else None,
            "tool_calls_per_second": round(len(tool_ms) / wall, 1),
            "tool_page_process_cpu_median_ms": tool_process,
            "noop_process_cpu_median_ms": noop_process,
            "process_cpu_ratio": round(tool_process / noop_process, 2) if noop_process else None,
        }

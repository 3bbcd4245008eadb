"""Benchmark: a console tool page against a minimal Django view, under concurrent participants.

Each simulated participant is a thread with its own signed-in test client and its own
started (practice) shift. After a warm-up, all threads start together and each
alternates a real tool call through the console's call view (``list_orders``, which
spends an operation, as an htmx request) with a GET of a no-op view, so both are
timed under the same load in the same run. Times are in-process server times (the
test client calls the handler directly; there is no network). The no-op view exists
only in this command's URLconf (``console.bench_urls``). The benchmark's users and
shifts are deleted afterwards.

The JSON keys are stable (``storebench bench`` reads them):
``participants, calls_per_participant, tool, tool_page_median_ms, noop_median_ms,
ratio, tool_page_p90_ms, noop_p90_ms, errors, wall_seconds``.
"""
from __future__ import annotations

import json
import statistics
import threading
import time
import uuid

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from console.briefing import BRIEFING_VERSION, PRACTICE_CELL
from console.models import BriefingAcknowledgement, Shift
from console.services import begin_shift, assign_shift, clear_cache

TOOL = "list_orders"
MAX_CALLS = 100  # below the practice task's operation budget, so the store stays open


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


class Command(BaseCommand):
    help = "Median server time of a console tool page vs a no-op Django view under concurrent participants."

    def add_arguments(self, parser):
        parser.add_argument("--participants", type=int, default=20)
        parser.add_argument("--calls", type=int, default=10, help="tool calls (and no-op views) per participant")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options) -> None:
        participants, calls = options["participants"], options["calls"]
        if not 1 <= participants <= 200:
            raise CommandError(f"--participants must be between 1 and 200, not {participants}")
        if not 1 <= calls <= MAX_CALLS:
            raise CommandError(f"--calls must be between 1 and {MAX_CALLS}, not {calls}")
        run = uuid.uuid4().hex[:8]
        User = get_user_model()
        users = []
        try:
            with override_settings(ROOT_URLCONF="console.bench_urls"):
                shifts = []
                for index in range(participants):
                    user = User.objects.create_user(f"bench-{run}-{index:03d}")
                    users.append(user)
                    BriefingAcknowledgement.objects.create(user=user, version=BRIEFING_VERSION,
                                                           acknowledged_at=timezone.now())
                    task_id, seed = PRACTICE_CELL
                    shifts.append(begin_shift(assign_shift(user, task_id, seed, practice=True)))
                result = self._measure(users, shifts, calls)
        finally:
            Shift.objects.filter(participant__in=users).delete()
            User.objects.filter(pk__in=[u.pk for u in users]).delete()
            clear_cache()
        result = {"participants": participants, "calls_per_participant": calls, "tool": TOOL, **result}
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                f"{participants} participants x {calls} calls: tool page median {result['tool_page_median_ms']} ms,"
                f" no-op view median {result['noop_median_ms']} ms, ratio {result['ratio']}"
                f" (errors: {result['errors']}, {result['wall_seconds']} s)")

    def _measure(self, users, shifts, calls) -> dict:
        clients = []
        for user in users:
            client = Client(raise_request_exception=False)  # a failed request counts as an error
            client.force_login(user)
            clients.append(client)
        tool_ms: list[float] = []
        noop_ms: list[float] = []
        errors: list[str] = []
        record = threading.Lock()
        start = threading.Barrier(len(users))

        def participant(client: Client, shift: Shift) -> None:
            url = f"/shifts/{shift.pk}/call/"
            try:
                mine_tool, mine_noop = [], []
                client.get("/bench/noop")  # warm-up, untimed
                start.wait()
                for _ in range(calls):
                    data = {"tool": TOOL, "call_id": uuid.uuid4().hex, "arg_page_size": "5"}
                    began = time.perf_counter()
                    response = client.post(url, data, HTTP_HX_REQUEST="true")
                    mine_tool.append((time.perf_counter() - began) * 1000)
                    if response.status_code != 200:
                        errors.append(f"tool page answered {response.status_code}")
                    began = time.perf_counter()
                    response = client.get("/bench/noop")
                    mine_noop.append((time.perf_counter() - began) * 1000)
                    if response.status_code != 200:
                        errors.append(f"no-op view answered {response.status_code}")
                with record:
                    tool_ms.extend(mine_tool)
                    noop_ms.extend(mine_noop)
            finally:
                connection.close()

        threads = [threading.Thread(target=participant, args=(c, s)) for c, s in zip(clients, shifts)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        if not tool_ms or not noop_ms:
            raise CommandError("no request completed: " + "; ".join(errors[:3]))
        tool_median, noop_median = statistics.median(tool_ms), statistics.median(noop_ms)
        return {
            "tool_page_median_ms": round(tool_median, 3),
            "noop_median_ms": round(noop_median, 3),
            "ratio": round(tool_median / noop_median, 2),
            "tool_page_p90_ms": round(_percentile(tool_ms, 0.9), 3),
            "noop_p90_ms": round(_percentile(noop_ms, 0.9), 3),
            "errors": len(errors),
            "wall_seconds": round(wall, 2),
        }

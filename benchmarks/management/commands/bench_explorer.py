"""``manage.py bench_explorer [--json]``: how fast a full-year trial page renders.

Plays (or takes, with ``--trial DIR``) a full-year smart-triage trial, imports it,
and requests its pages through Django's test client as a signed-in researcher:
the trial page (first page of the action log), the last page of the action log
filtered to one family, and one chart download.  Reports the median, fastest and
slowest server time over ``--requests`` requests and each response's size.  It
all runs inside a transaction that is rolled back, so the database is left as it
was.  Times are measured, never asserted.
"""
import json
import statistics
import tempfile
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse

from environment.anchors import get_anchor
from environment.calibration import load_calibration
from environment.cli import positive_int, seed_arg
from environment.errors import StoreBenchError
from environment.tasks import get_task
from environment.trial import run_trial
from explorer import calibrations
from explorer.importing import ImportStatus, import_trial
from studies.bots import SiteClient


class RolledBack(Exception):
    """Raised to leave the benchmark's transaction without committing."""


def _time(client: SiteClient, url: str, n: int) -> dict:
    times, size, status = [], 0, None
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        size, status = len(response.content), response.status_code
    return {"url": url, "status": status, "median_ms": round(statistics.median(times) * 1000, 1),
            "min_ms": round(min(times) * 1000, 1), "max_ms": round(max(times) * 1000, 1), "bytes": size}


class Command(BaseCommand):
    help = "Median server time of a full-year trial's explorer page (rolled back afterwards)."

    def add_arguments(self, parser):
        parser.add_argument("--trial", metavar="DIR", help="an existing trial folder instead of playing one")
        parser.add_argument("--task", default="full-year",
                            help="task to play (default full-year; `storebench tasks list` lists them)")
        parser.add_argument("--seed", type=seed_arg, default=7, help="seed to play (default 7)")
        parser.add_argument("--policy", default="smart-triage", help="anchor policy to play (default smart-triage)")
        parser.add_argument("--requests", type=positive_int, default=15, help="timed requests per page (default 15)")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, **options):
        try:  # before a full year is played
            get_task(options["task"])
            get_anchor(options["policy"])
        except StoreBenchError as exc:
            raise CommandError(exc.message) from None
        report = {}
        with tempfile.TemporaryDirectory(prefix="bench-explorer-") as tmp:
            folder = Path(options["trial"]) if options["trial"] else Path(tmp) / "trial"
            if not options["trial"]:
                doc, digest = load_calibration(calibrations.ladder_file())
                started = time.perf_counter()
                run_trial(options["task"], options["seed"], folder, policy=options["policy"], calibration=doc,
                          calibration_hash=digest)
                report["play_seconds"] = round(time.perf_counter() - started, 2)
            try:
                with transaction.atomic():
                    self._bench(folder, options["requests"], report)
                    raise RolledBack
            except RolledBack:
                pass
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            for key, value in report.items():
                self.stdout.write(f"{key}: {value}")

    def _bench(self, folder: Path, n: int, report: dict) -> None:
        started = time.perf_counter()
        outcome = import_trial(folder)
        report["import_seconds"] = round(time.perf_counter() - started, 2)
        if outcome.status == ImportStatus.REFUSED:
            raise CommandError(f"the trial folder was refused: {outcome.reason}")
        trial = outcome.trial
        assert trial is not None, "only a refused folder has no trial"
        report["trial"] = {"task": trial.task_id, "seed": trial.seed, "player": trial.player,
                           "windows": trial.windows_played, "calls": trial.calls.count(),
                           "events": trial.events.count()}
        user = get_user_model().objects.create(username="bench-explorer", is_staff=True)
        client = SiteClient()
        client.force_login(user)
        page = reverse("explorer:trial", args=[trial.pk])
        client.get(page)  # the first request pays for imports and template compilation
        last = -(-trial.calls.filter(family="orders").count() // 50)
        report["requests"] = n
        report["trial_page"] = _time(client, page, n)
        report["action_log_last_orders_page"] = _time(client, f"{page}?family=orders&page={last}", n)
        report["chart_svg"] = _time(client, reverse("explorer:trial_chart", args=[trial.pk, "net-assets"]), n)

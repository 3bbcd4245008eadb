"""``manage.py run_batch --tasks steady --seeds 7 11 --policy rule-based --out trials/``:
submit a batch job (one Celery task per trial, each writing its trial folder) and
follow its progress, as ``storebench batch`` does in one process."""
from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from environment.errors import StoreBenchError
from jobs.models import Job
from jobs.submit import submit_batch


class Command(BaseCommand):
    help = "Submit a batch of trials (one task per trial) and show its progress."

    def add_arguments(self, parser):
        parser.add_argument("--tasks", nargs="+", default=["all"], help="task ids, or all (default)")
        parser.add_argument("--seeds", nargs="+", type=int, default=[7, 11, 13], help="seeds (default 7 11 13)")
        parser.add_argument("--policy", help="an anchor policy")
        parser.add_argument("--actions", help="an actions.jsonl to replay on every cell")
        parser.add_argument("--calibration", help="calibration file (else each cell is calibrated)")
        parser.add_argument("--out", required=True, help="folder to hold the trial folders")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the job")

    def handle(self, *args, **options):
        try:
            job = submit_batch(options["tasks"], options["seeds"], options["out"], policy=options["policy"],
                               actions=options["actions"], calibration=options["calibration"])
        except (StoreBenchError, ValueError) as exc:
            raise CommandError(getattr(exc, "message", None) or str(exc)) from exc
        self.stdout.write(f"job {job.pk}: {job.total} trials")
        deadline = time.monotonic() + options["timeout"]
        shown = -1
        while True:
            job.refresh_from_db()
            if job.done != shown:
                shown = job.done
                self.stdout.write(f"[{job.done}/{job.total}] {job.get_status_display().lower()}")
            if job.finished:
                break
            if time.monotonic() > deadline:
                raise CommandError(f"job {job.pk} not finished after {options['timeout']} s ({job.done}/{job.total})")
            time.sleep(0.5)
        if job.status == Job.Status.FAILED:
            raise CommandError(f"job {job.pk} failed: {job.error}")
        self.stdout.write(json.dumps(job.summary))

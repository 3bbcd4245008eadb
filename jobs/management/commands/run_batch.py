"""``manage.py run_batch --tasks steady --seeds 7 11 --policy rule-based --out trials/``:
submit a batch job (one Celery task per trial, each writing its trial folder) and
follow its progress, as ``storebench batch`` does in one process."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from environment.cli import TASKS_HELP, positive_seconds, seed_arg
from environment.errors import StoreBenchError
from jobs.batch import summary
from jobs.management.follow import raise_if_failed, submitted
from jobs.models import Job
from jobs.submit import submit_batch


class Command(BaseCommand):
    help = "Submit a batch of trials (one task per trial) and show its progress."

    def add_arguments(self, parser):
        parser.add_argument("--tasks", nargs="+", default=["all"], help=f"{TASKS_HELP} (default all)")
        parser.add_argument("--seeds", nargs="+", type=seed_arg, default=[7, 11, 13],
                            help="seeds (default 7 11 13)")
        parser.add_argument("--policy", help="an anchor policy")
        parser.add_argument("--actions", help="an actions.jsonl to replay on every cell")
        parser.add_argument("--calibration", help="calibration file (else each cell is calibrated)")
        parser.add_argument("--out", required=True,
                            help="folder to hold the trial folders (none of them may exist yet)")
        parser.add_argument("--timeout", type=positive_seconds, default=3600,
                            help="seconds to wait for the job (default 3600)")
        parser.add_argument("--no-wait", action="store_true", help="submit and print the job id only")

    def handle(self, *args, **options):
        try:
            job = submit_batch(options["tasks"], options["seeds"], options["out"], policy=options["policy"],
                               actions=options["actions"], calibration=options["calibration"])
        except (StoreBenchError, ValueError) as exc:
            raise CommandError(getattr(exc, "message", None) or str(exc)) from exc
        followed = submitted(job, "trial", options, self.stdout.write)
        if followed is None:
            return
        # A failed job stores no summary: print its done trials' (their folders stay), then the error.
        failed = followed.status == Job.Status.FAILED
        self.stdout.write(json.dumps(summary(followed) if failed else followed.summary))
        if not failed:
            self.stdout.write(f"trial folders in {followed.result_path}")
        raise_if_failed(followed)

"""``manage.py run_calibration --tasks steady --seeds 7 11 --out FILE``: submit a
calibration job (one Celery task per cell) and follow its progress until the file
is written.  With no broker configured the cells run in-process before the first
progress line; with one, they run on whatever workers consume the queue."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from environment.cli import TASKS_HELP, positive_seconds, seed_arg, writable_file
from environment.errors import StoreBenchError
from environment.orchestration import check_replacing, expand_tasks, run_cells
from jobs.management.follow import raise_if_failed, submitted
from jobs.submit import submit_calibration


class Command(BaseCommand):
    help = "Submit a calibration job (one task per cell) and show its progress."

    def add_arguments(self, parser):
        parser.add_argument("--tasks", nargs="+", default=["all"], help=f"{TASKS_HELP} (default all)")
        parser.add_argument("--seeds", nargs="+", type=seed_arg, default=[7, 11, 13],
                            help="seeds (default 7 11 13)")
        parser.add_argument("--out", required=True, help="calibration JSON to write (its folder is created if need be)")
        parser.add_argument("--replace", action="store_true",
                            help="replace --out even if it holds cells this run does not calibrate (they are dropped)")
        parser.add_argument("--timeout", type=positive_seconds, default=3600,
                            help="seconds to wait for the job (default 3600)")
        parser.add_argument("--no-wait", action="store_true", help="submit and print the job id only")

    def handle(self, *args, **options):
        try:
            writable_file(options["out"], "--out", "public.json")  # before any cell runs
            check_replacing(options["out"], run_cells(expand_tasks(options["tasks"]), options["seeds"]),
                            replace=options["replace"])
            job = submit_calibration(options["tasks"], options["seeds"], options["out"])
        except StoreBenchError as exc:
            raise CommandError(exc.message) from exc
        followed = submitted(job, "cell", options, self.stdout.write)
        if followed is None:
            return
        raise_if_failed(followed)  # no file was written: nothing more to say
        job = followed
        failures = job.summary.get("gate_failures", [])
        for failure in failures:
            self.stderr.write(f"GATE FAILURE: {failure}")
        if failures:
            raise CommandError(f"gate failures: the calibration was written to {job.result_path} "
                               f"({job.result_hash}); {options['out']} was left as it was")
        self.stdout.write(f"wrote {job.result_path} ({job.result_hash})")


"""Following a submitted job from a management command until it ends."""
from __future__ import annotations

import time

from django.core.management.base import CommandError

from jobs.models import Job


def follow(job: Job, timeout: float, write) -> Job:
    """Print ``[done/total] status`` at each change of either until the job ends (so its
    last line says how it ended, also when the end came after the last item: gathering a
    calibration), and return the ended job, failed or not: the command prints what it has
    to say, then :func:`raise_if_failed`. A job still running after ``timeout`` seconds is a
    :class:`CommandError` naming it."""
    deadline = time.monotonic() + timeout
    shown: tuple[int, str] | None = None
    while True:
        job.refresh_from_db()
        if (job.done, job.status) != shown:
            shown = (job.done, job.status)
            write(f"[{job.done}/{job.total}] {job.get_status_display().lower()}")
        if job.finished:
            return job
        if time.monotonic() > deadline:
            raise CommandError(f"job {job.pk} not finished after {timeout} s ({job.done}/{job.total})")
        time.sleep(0.5)


def raise_if_failed(job: Job) -> None:
    """A failed job is a :class:`CommandError` naming it and its error (the command exits 1)."""
    if job.status == Job.Status.FAILED:
        raise CommandError(f"job {job.pk} failed: {job.error}")


def submitted(job: Job, noun: str, options: dict, write, detail: str = "") -> Job | None:
    """What every submitting command does next: say the job's id and size (``noun`` in the
    singular: "cell", "model trial"; then ``detail``), then with ``--no-wait`` stop there
    (None), else :func:`follow` it to its end (the ended job, failed or not)."""
    write(f"job {job.pk}: {job.total} {noun}{'' if job.total == 1 else 's'}{detail}")
    if options.get("no_wait"):
        job.refresh_from_db(fields=["status", "error"])
        raise_if_failed(job)  # failed already: its tasks could not reach the queue
        return None
    return follow(job, options["timeout"], write)

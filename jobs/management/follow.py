"""Following a submitted job from a management command until it ends."""
from __future__ import annotations

import time

from django.core.management.base import CommandError

from jobs.models import Job


def follow(job: Job, timeout: float, write) -> Job:
    """Print ``[done/total] status`` at each change of either until the job ends (so its
    last line says how it ended, also when the end came after the last item: gathering a
    calibration); a failed job or one still running after ``timeout`` seconds is a
    :class:`CommandError` naming it."""
    deadline = time.monotonic() + timeout
    shown: tuple[int, str] | None = None
    while True:
        job.refresh_from_db()
        if (job.done, job.status) != shown:
            shown = (job.done, job.status)
            write(f"[{job.done}/{job.total}] {job.get_status_display().lower()}")
        if job.finished:
            break
        if time.monotonic() > deadline:
            raise CommandError(f"job {job.pk} not finished after {timeout} s ({job.done}/{job.total})")
        time.sleep(0.5)
    if job.status == Job.Status.FAILED:
        raise CommandError(f"job {job.pk} failed: {job.error}")
    return job


def submitted(job: Job, what: str, options: dict, write) -> Job | None:
    """What every submitting command does next: say the job's id and size (``what``: "cells",
    "model trials"), then with ``--no-wait`` stop there (None), else :func:`follow` it."""
    write(f"job {job.pk}: {job.total} {what}")
    if options.get("no_wait"):
        return None
    return follow(job, options["timeout"], write)

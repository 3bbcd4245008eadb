"""Celery tasks of the studies app.  Each takes ids, is idempotent and is scheduled on commit."""
from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from .exports import job_dir, superseded_by, write_export
from .figures import Filters
from .models import ExportJob
from .notifications import notify, sweep_notices  # noqa: F401  (registers the notice tasks)
from .rehearsal import run_rehearsal  # noqa: F401  (registers the rehearsal task)
from .settling import settle_study


def _failed(exc: Exception) -> str:
    """What the exports page says about a delivery that raised."""
    return (f"the export could not be written ({type(exc).__name__}: {exc}); request the export again, "
            "and if it fails again, tell the site's operator (the worker's log has the details)")


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_export(job_id: int) -> str:
    """Write an export job's files.  A finished or failed job is left alone (a failed one was
    superseded by a withdrawal, or could not be sent: requesting the export again makes a new
    job); a rerun of a job still running (its worker died) rewrites the files.
    A delivery whose job was finished meanwhile by another, or superseded by a participant's
    withdrawal, writes nothing onto it (not its progress, not its files).

    ``reject_on_worker_lost``: a pool process killed mid-export (SIGKILL, OOM) sends the
    message back to the broker, which delivers it again, instead of acknowledging it and
    leaving the job "running" with nothing to finish it.  Any exception fails the job with
    a message saying what to do (and is raised again for the worker's log), unless another
    delivery of the same job has finished it meanwhile."""
    with transaction.atomic():
        job = ExportJob.objects.select_for_update().select_related("study").filter(pk=job_id).first()
        if job is None or job.status in (ExportJob.Status.DONE, ExportJob.Status.FAILED):
            return "skipped"  # a failed job is final too: a new request makes a new job
        job.status = ExportJob.Status.RUNNING
        job.progress = 0
        job.save(update_fields=["status", "progress"])

    running = ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.RUNNING)

    def progress(pct: int) -> None:
        running.update(progress=pct)  # never onto a job another delivery finished, or a withdrawal superseded

    started = timezone.now()
    study = job.study

    def place() -> bool:
        """Whether this delivery's files go in place: the job still runs (no other delivery
        finished it, no withdrawal superseded it), and nobody withdrew since its rows were
        read (their data would be in them)."""
        withdrew = study.participants.filter(withdrawn_at__gte=started).order_by("withdrawn_at").first()
        if withdrew is not None:
            running.update(status=ExportJob.Status.FAILED, finished_at=timezone.now(),
                           error=superseded_by(withdrew.label, withdrew.withdrawn_at))
        return withdrew is None and running.exists()

    try:
        settle_study(study)
        manifest = write_export(study, Filters.from_mapping(job.filters), job_dir(job.pk), progress, place)
    except Exception as exc:
        running.update(status=ExportJob.Status.FAILED, error=_failed(exc), finished_at=timezone.now())
        raise
    if manifest is None:  # finished by another delivery ("skipped"), or superseded by a withdrawal
        return "skipped" if ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.DONE).exists() else \
            "superseded"
    running.update(
        status=ExportJob.Status.DONE, progress=100, finished_at=timezone.now(), error="",
        row_counts={name: f["rows"] for name, f in manifest["files"].items()},
        checksums={name: f["sha256"] for name, f in manifest["files"].items()},
    )
    return "done"


STALLED_AFTER = timedelta(hours=1)  # an export starts in seconds; one queued this long never will
STALLED = ("it did not start within an hour: its task was lost, or no worker ran it; request the export again, and "
           "if it stalls again, tell the site's operator (is a Celery worker running?)")


@shared_task
def fail_stalled_exports() -> int:
    """Mark failed, saying why, the export jobs queued longer than :data:`STALLED_AFTER`: a job
    whose message the broker lost stayed "queued" on the page for good.  A delivery that comes
    after all skips a failed job (:func:`run_export`).  Returns how many were failed."""
    return ExportJob.objects.filter(status=ExportJob.Status.QUEUED, created_at__lt=timezone.now() - STALLED_AFTER
                                    ).update(status=ExportJob.Status.FAILED, finished_at=timezone.now(), error=STALLED)

"""Celery tasks of the studies app.  Each takes ids, is idempotent and is scheduled on commit."""
from __future__ import annotations

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from .exports import job_dir, write_export
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
    """Write an export job's files.  A finished job is left alone; a rerun rewrites the files.

    ``reject_on_worker_lost``: a pool process killed mid-export (SIGKILL, OOM) sends the
    message back to the broker, which delivers it again, instead of acknowledging it and
    leaving the job "running" with nothing to finish it.  Any exception fails the job with
    a message saying what to do (and is raised again for the worker's log), unless another
    delivery of the same job has finished it meanwhile."""
    with transaction.atomic():
        job = ExportJob.objects.select_for_update().select_related("study").filter(pk=job_id).first()
        if job is None or job.status == ExportJob.Status.DONE:
            return "skipped"
        job.status = ExportJob.Status.RUNNING
        job.progress = 0
        job.save(update_fields=["status", "progress"])

    def progress(pct: int) -> None:
        ExportJob.objects.filter(pk=job_id).update(progress=pct)

    try:
        settle_study(job.study)
        manifest = write_export(job.study, Filters.from_mapping(job.filters), job_dir(job.pk), progress)
    except Exception as exc:
        ExportJob.objects.filter(pk=job_id).exclude(status=ExportJob.Status.DONE).update(
            status=ExportJob.Status.FAILED, error=_failed(exc), finished_at=timezone.now())
        raise
    ExportJob.objects.filter(pk=job_id).update(
        status=ExportJob.Status.DONE, progress=100, finished_at=timezone.now(), error="",
        row_counts={name: f["rows"] for name, f in manifest["files"].items()},
        checksums={name: f["sha256"] for name, f in manifest["files"].items()},
    )
    return "done"

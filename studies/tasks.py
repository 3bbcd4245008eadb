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


@shared_task(acks_late=True)
def run_export(job_id: int) -> str:
    """Write an export job's files.  A finished job is left alone; a rerun rewrites the files."""
    with transaction.atomic():
        job = ExportJob.objects.select_for_update().select_related("study").filter(pk=job_id).first()
        if job is None or job.status == ExportJob.Status.DONE:
            return "skipped"
        job.status = ExportJob.Status.RUNNING
        job.progress = 0
        job.save(update_fields=["status", "progress"])

    def progress(pct: int) -> None:
        ExportJob.objects.filter(pk=job_id).update(progress=pct)

    settle_study(job.study)
    try:
        manifest = write_export(job.study, Filters.from_mapping(job.filters), job_dir(job.pk), progress)
    except OSError as exc:
        ExportJob.objects.filter(pk=job_id).update(status=ExportJob.Status.FAILED, error=str(exc),
                                                   finished_at=timezone.now())
        raise
    ExportJob.objects.filter(pk=job_id).update(
        status=ExportJob.Status.DONE, progress=100, finished_at=timezone.now(), error="",
        row_counts={name: f["rows"] for name, f in manifest["files"].items()},
        checksums={name: f["sha256"] for name, f in manifest["files"].items()},
    )
    return "done"

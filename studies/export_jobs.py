"""Requesting an export: the job row, its audit event, and the task scheduled on commit."""
from __future__ import annotations

from pathlib import Path

from django.db import transaction

from . import audit
from .errors import StudyError
from .exports import FORMATS, TABLES, job_dir
from .figures import Filters
from .models import AuditAction, ExportJob, Study
from .permissions import Action, require


def request_export(actor, study: Study, filters: Filters = Filters()) -> ExportJob:
    require(actor, study, Action.EXPORT)
    from .tasks import run_export

    with transaction.atomic():
        job = ExportJob.objects.create(study=study, requested_by=actor, filters=filters.as_dict())
        audit.record(study, actor, AuditAction.EXPORTED, job=job.pk, filters=filters.as_dict())
        transaction.on_commit(lambda: run_export.delay(job.pk))
    return job


ALLOWED_FILES = {f"{t}.{f}" for t in TABLES for f in FORMATS} | {"manifest.json", "codebook.json"}


def export_file(actor, job: ExportJob, name: str) -> Path:
    require(actor, job.study, Action.EXPORT)
    if name not in ALLOWED_FILES:
        raise StudyError(f"no export file named {name!r}")
    if job.status != ExportJob.Status.DONE:
        raise StudyError(f"export {job.pk} is {job.get_status_display().lower()}, not done")
    return job_dir(job.pk) / name


def export_directory(actor, job: ExportJob) -> Path:
    require(actor, job.study, Action.EXPORT)
    if job.status != ExportJob.Status.DONE:
        raise StudyError(f"export {job.pk} is {job.get_status_display().lower()}, not done")
    return job_dir(job.pk)

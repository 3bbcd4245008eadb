"""Requesting an export: the job row, its audit event, and the task scheduled on commit.

One export waiting per study and filters.  A request made while an equivalent export
(same study, same filters) is still queued gets that job back instead of a second one
that would compute the same files: a double submit of the form, or two coordinators
pressing export at once, share one job, and :class:`Requested` says so, for the page to
tell the user that the export shown is the one already waiting.  Only the first request
is audited (``exported``, naming its job): a request that joins starts nothing.  A
queued job has read nothing yet, so it will hold what the later request asked for; a
running job may have read its tables already, so a request made then (perhaps just after
an invalidation or a selection) starts a job of its own.  A job queued longer than
:data:`JOIN_WITHIN` is not joined either (its message may have been lost), nor is a done
or failed one.

The look and the creation run in one transaction holding the study's row lock
(``select_for_update``), so two requests at once are serialised: the second waits for the
first to commit, then reads its job.  On SQLite every transaction takes the write lock at
BEGIN (``transaction_mode`` IMMEDIATE in the settings), which serialises them the same
way.  A partial unique constraint would need the filters compared as stored JSON (key
order matters in SQLite's text) and the loser's IntegrityError caught and read again;
this is the only place an export job is made, so the lock states the rule where it applies.

A job whose task could not be sent to the broker is marked failed saying so, and the
page says it at once (the request does not fail with a server error).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from . import audit
from .errors import StudyError
from .exports import FORMATS, TABLES, job_dir
from .figures import Filters
from .models import AuditAction, ExportJob, Study
from .permissions import Action, require

logger = logging.getLogger(__name__)

JOIN_WITHIN = timedelta(minutes=15)  # a queued job older than this is not joined: its message may be lost


@dataclass(frozen=True)
class Requested:
    """What a request for an export got: ``job``, and whether it was already under way
    (an equivalent export queued, given back instead of a new one)."""

    job: ExportJob
    under_way: bool


def start_or_join_export(actor, study: Study, filters: Filters = Filters()) -> Requested:
    """A new export job for ``filters``, scheduled on commit, or the equivalent one still
    queued (see the module docstring).  A new job whose task could not be sent comes back
    failed, saying so."""
    require(actor, study, Action.EXPORT)
    wanted = filters.as_dict()
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()  # one request per study at a time
        waiting = study.exports.filter(status=ExportJob.Status.QUEUED, created_at__gte=timezone.now() - JOIN_WITHIN)
        for job in waiting.select_related("requested_by").order_by("pk"):
            if job.filters == wanted:
                return Requested(job, under_way=True)
        job = ExportJob.objects.create(study=study, requested_by=actor, filters=wanted)
        audit.record(study, actor, AuditAction.EXPORTED, job=job.pk, filters=wanted)
        job_id = job.pk
        transaction.on_commit(lambda: _send(job_id))
    if not transaction.get_connection().in_atomic_block:  # committed and sent (or not): say how it went
        job.refresh_from_db(fields=["status", "error", "finished_at"])
    return Requested(job, under_way=False)


def request_export(actor, study: Study, filters: Filters = Filters()) -> ExportJob:
    """The export job for ``filters``: a new one, or the equivalent one under way
    (:func:`start_or_join_export` also says which)."""
    return start_or_join_export(actor, study, filters).job


def _send(job_id: int) -> None:
    from .tasks import run_export

    try:
        run_export.delay(job_id)
    except BrokerUnavailable as exc:
        logger.error("export job %s could not be sent to the broker: %s", job_id, exc)
        ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
            status=ExportJob.Status.FAILED, finished_at=timezone.now(), error=unsent(exc))


def unsent(exc: Exception) -> str:
    """What the exports page says about a job whose task could not be sent."""
    return (f"the export could not be sent to the task queue ({type(exc).__name__}: {exc}), so nothing will "
            "write it; request the export again, and if it fails again, tell the site's operator (the "
            "broker may be down)")


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

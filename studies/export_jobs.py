"""Requesting an export: the job row, its audit event, and the task scheduled on commit.

One export under way per study and filters.  A request made while an equivalent export
(same study, same filters) is still queued or running gets that job back instead of a
second one that would compute the same files: a double submit of the form, or two
coordinators pressing export at once, share one job, and :class:`Requested` says so, for
the page to tell the user that the export shown is the one already under way.  Only that
first request is audited (``exported``, naming its job): a request that joins starts
nothing.  A done or failed job blocks nothing: a new request exports the study as it is
now.

The look and the creation run in one transaction holding the study's row lock
(``select_for_update``), so two requests at once are serialised: the second waits for the
first to commit, then reads its job (PostgreSQL's read committed: each statement sees
what was committed before it started).  On SQLite, where ``select_for_update`` does
nothing, every transaction takes the write lock at BEGIN (``transaction_mode``
IMMEDIATE in the settings), which serialises them the same way.

Why not a partial unique constraint on (study, filters) over queued and running jobs?
It would hold for code that bypassed this function, but there is none (this is the only
place an export job is made), and it would cost more than it gives: a migration; filters
compared as stored JSON (PostgreSQL's jsonb ignores key order, SQLite's text does not);
the losing request turned into an IntegrityError to catch, roll back to a savepoint and
follow with a second read; and the rule imposed on the export task too, which moves jobs
between statuses (a redelivered job is set running again even after it failed) and would
then fail on a transition the constraint refuses.  The lock states the rule where it
applies, costs one row lock per request, and returns the job under way directly.

Because a queued job is now handed to later requests, a job whose task never reached the
broker must not stay queued: when sending it fails, the job is marked failed saying so
(the error is still raised, for the log), and the next request starts a new one.
"""
from __future__ import annotations

from dataclasses import dataclass
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

UNDER_WAY = (ExportJob.Status.QUEUED, ExportJob.Status.RUNNING)


@dataclass(frozen=True)
class Requested:
    """What a request for an export got: ``job``, and whether it was already under way
    (an equivalent export queued or running, given back instead of a new one)."""

    job: ExportJob
    under_way: bool


def start_or_join_export(actor, study: Study, filters: Filters = Filters()) -> Requested:
    """A new export job for ``filters``, scheduled on commit, or the equivalent one still
    queued or running (see the module docstring)."""
    require(actor, study, Action.EXPORT)
    wanted = filters.as_dict()
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()  # one request per study at a time
        for job in study.exports.filter(status__in=UNDER_WAY).select_related("requested_by").order_by("pk"):
            if job.filters == wanted:
                return Requested(job, under_way=True)
        job = ExportJob.objects.create(study=study, requested_by=actor, filters=wanted)
        audit.record(study, actor, AuditAction.EXPORTED, job=job.pk, filters=wanted)
        job_id = job.pk
        transaction.on_commit(lambda: _send(job_id))
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
        ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
            status=ExportJob.Status.FAILED, finished_at=timezone.now(), error=unsent(exc))
        raise


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

"""Moving a job and its items through their statuses, idempotently.

Every change happens under the job's row lock (``select_for_update``; on SQLite the
write lock of the transaction), and counts are recomputed from the items, so two
deliveries of one item, or two items finishing at once, leave the same counts.

Export tasks written elsewhere (``studies``) report through :func:`start`,
:func:`advance`, :func:`finish` and :func:`fail` with the job id they were given.
"""
from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import Job, JobItem


def locked_job(job_id: int) -> Job:
    """The job row, locked until the surrounding transaction ends."""
    return Job.objects.select_for_update().get(pk=job_id)


def start(job_id: int, total: int | None = None) -> Job:
    """Mark the job running (once); ``total`` sets the item count an export reports against."""
    with transaction.atomic():
        job = locked_job(job_id)
        if job.status == Job.Status.PENDING:
            job.status = Job.Status.RUNNING
            job.started_at = timezone.now()
        if total is not None:
            job.total = total
        job.save()
        return job


def advance(job_id: int, done: int) -> None:
    """Set how many units of an export are done (a level, not an increment)."""
    Job.objects.filter(pk=job_id).update(done=done, updated_at=timezone.now())


def finish(job_id: int, *, path: str = "", digest: str = "", summary: dict | None = None) -> Job:
    """Mark the job done (once); a failed job stays failed (an overlapping delivery that
    completes after another failed it must not turn it done with its error still set)."""
    with transaction.atomic():
        job = locked_job(job_id)
        if not job.finished:
            job.status = Job.Status.DONE
            job.result_path = path
            job.result_hash = digest
            job.summary = summary or {}
            job.done = job.total
            job.finished_at = timezone.now()
            job.save()
        return job


def fail(job_id: int, error: str, *, path: str = "", summary: dict | None = None) -> Job:
    """Fail the job (once); ``path`` and ``summary`` say what it still gave (a model-trial
    job's done cells)."""
    with transaction.atomic():
        job = locked_job(job_id)
        if not job.finished:
            job.status = Job.Status.FAILED
            job.error = error
            job.finished_at = timezone.now()
            if path or summary:
                job.result_path, job.summary = path, summary or {}
            job.save()
        return job


def claim_item(item_id: int) -> JobItem | None:
    """The item to work on, marked running with one more attempt; None when there is
    nothing to do (already done, its job has failed, or the job was deleted meanwhile)."""
    with transaction.atomic():
        item = JobItem.objects.select_for_update().select_related("job").filter(pk=item_id).first()
        if item is None or item.status in (JobItem.Status.DONE, JobItem.Status.FAILED) or item.job.status == Job.Status.FAILED:
            return None
        JobItem.objects.filter(pk=item_id).update(status=JobItem.Status.RUNNING, attempts=F("attempts") + 1,
                                                  started_at=timezone.now())
        start(item.job_id)
    item.refresh_from_db()
    return item


def complete_item(item_id: int, result_json: str) -> tuple[Job, bool]:
    """Store an item's result (the first stored result wins; a failed item stays failed)
    and recount the job.

    Returns the job and whether every item is now done; call inside no transaction.
    """
    with transaction.atomic():
        item = JobItem.objects.select_for_update().get(pk=item_id)
        job = locked_job(item.job_id)
        if item.status == JobItem.Status.FAILED:  # another delivery failed it, and its job: that stands
            return job, False
        if item.status != JobItem.Status.DONE:
            item.status = JobItem.Status.DONE
            item.result_json = result_json
            item.error = ""
            item.finished_at = timezone.now()
            item.save()
        job.done = job.items.filter(status=JobItem.Status.DONE).count()
        job.save(update_fields=["done", "updated_at"])
        return job, job.done == job.total


def fail_item(item_id: int, error: str) -> None:
    """An item that cannot succeed (a refused input): the item and its job fail."""
    with transaction.atomic():
        item = JobItem.objects.select_for_update().get(pk=item_id)
        if item.status != JobItem.Status.DONE:
            item.status = JobItem.Status.FAILED
            item.error = error
            item.finished_at = timezone.now()
            item.save()
    fail(item.job_id, f"{item.key}: {error}")

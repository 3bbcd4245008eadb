"""The Celery tasks: thin shells that take ids and call :mod:`jobs.calibration`,
:mod:`jobs.batch` and :mod:`jobs.deadlines`.

Item tasks run with ``acks_late`` and ``reject_on_worker_lost``: the broker keeps a
message until its task has returned, and a worker killed mid-task (SIGKILL, OOM, a
lost host) leaves the message to be delivered again, to this worker's replacement
or another one.  That is safe because every task is idempotent: an item whose row
says done is skipped, and the gathering step writes its file once.  The last item
to finish schedules the gathering on commit; a redelivered item that finds itself
done schedules it again, so a crash between the two loses nothing either.

A refused input (:class:`~environment.errors.StoreBenchError`: an unknown task, a bad
calibration file, a folder that cannot be written) fails the item and its job
with the message.  Any other exception (a bug) fails them too, with the exception's
type and text, and is raised again for the worker's log: Celery acknowledges a task
that raised, so nothing would run the item again and the job would stay running.
Only a worker that dies mid-task leaves its message to be delivered again.

Model trials (:func:`run_agent_trial`) are the exception to "redo it": they sample, so
they run under a lease (:mod:`jobs.lease`): a delivery that finds the item's lease live
plays nothing and checks again once the lease would have ended, one that finds it expired
takes the item over, and only the lease holder writes the item's folder.  They are also the
exception to "a failed item fails its job": a failed cell fails its item only, the other
cells play on, and the job ends (FAILED, naming the failed cells) once every item has ended;
a bug fails the cells not yet played as well, so the job ends without spending more
(:mod:`jobs.agents`).
"""
from __future__ import annotations

import logging

from celery import current_app, shared_task
from django.db import transaction

from environment.errors import StoreBenchError

from . import agents, batch, calibration, deadlines, lease, progress
from .models import Job, JobItem

logger = logging.getLogger(__name__)

ITEM_TASK = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


def _bug(exc: Exception) -> str:
    return f"unexpected {type(exc).__name__}: {exc}"


@shared_task(**ITEM_TASK)
def run_calibration_cell(item_id: int) -> None:
    item = progress.claim_item(item_id)
    if item is not None:
        try:
            result = calibration.run_cell(item)
        except StoreBenchError as exc:
            progress.fail_item(item_id, exc.message)
            return
        except Exception as exc:
            progress.fail_item(item_id, _bug(exc))
            raise
        job, complete = progress.complete_item(item_id, result)
    else:
        found = Job.objects.filter(items__pk=item_id).first()
        if found is None:  # deleted meanwhile
            return
        job = found
        complete = job.status != Job.Status.FAILED and job.done == job.total
    if complete:
        transaction.on_commit(lambda: gather_calibration.delay(job.pk))


@shared_task(**ITEM_TASK)
def gather_calibration(job_id: int) -> None:
    if not Job.objects.filter(pk=job_id).exists():  # deleted meanwhile
        return
    try:
        calibration.gather(job_id)
    except OSError as exc:  # the file cannot be written where the job said
        progress.fail(job_id, f"cannot write the calibration file: {exc}")
    except Exception as exc:
        progress.fail(job_id, _bug(exc))
        raise


@shared_task(**ITEM_TASK)
def run_batch_trial(item_id: int) -> None:
    """One trial of a batch; the item that completes the batch finishes the job.  A
    redelivered item that finds itself done finishes the job if nothing did (its worker
    died between the two), as the calibration's cells gather theirs."""
    item = progress.claim_item(item_id)
    if item is None:
        found = Job.objects.filter(items__pk=item_id).first()
        if found is not None and not found.finished and found.done == found.total:
            _finish_batch(found)
        return
    try:
        result = batch.run_item(item)
    except (StoreBenchError, OSError) as exc:
        progress.fail_item(item_id, getattr(exc, "message", None) or str(exc))
        return
    except Exception as exc:
        progress.fail_item(item_id, _bug(exc))
        raise
    job, complete = progress.complete_item(item_id, result)
    if complete:
        _finish_batch(job)


def _finish_batch(job: Job) -> None:
    try:
        progress.finish(job.pk, path=job.params["out"], summary=batch.summary(job))
    except Exception as exc:  # the job would stay running, every item done, with no task left to end it
        progress.fail(job.pk, _bug(exc))
        raise


@shared_task(**ITEM_TASK)
def run_agent_trial(item_id: int) -> None:
    """One model trial under the item's lease (see :mod:`jobs.agents` and :mod:`jobs.lease`).  A failed
    cell fails its item only; a bug also fails the cells not yet played; the job ends with its last cell."""
    owner = lease.new_owner()
    found = lease.claim(item_id, owner)
    if found.recheck_in is not None:
        check_agent_trial_later(item_id, found.recheck_in)
        return
    if found.item is None:  # done or failed (a redelivery), or deleted: end the job if that was missed
        agents.end_job(JobItem.objects.filter(pk=item_id).values_list("job_id", flat=True).first())
        return
    if found.took_over:
        logger.warning("item %s: the lease of %s expired; playing the cell again", item_id, found.took_over)
    job_id = found.item.job_id
    try:
        agents.play_item(found.item, owner)
    except lease.LeaseLost as exc:
        logger.warning("item %s: taken over by %s while playing; this attempt wrote nothing", item_id, exc)
        return
    except (StoreBenchError, OSError) as exc:
        lease.fail_owned(item_id, owner, getattr(exc, "message", None) or str(exc))
    except Exception as exc:
        if lease.fail_owned(item_id, owner, _bug(exc)):
            agents.stop_unplayed(job_id, f"the job stopped after an unexpected error in {agents.cell_name(found.item)}")
        agents.end_job(job_id)
        raise
    agents.end_job(job_id)


def check_agent_trial_later(item_id: int, lease_left: float) -> None:
    """Send the item's task again to run just after its live lease would end: if the player dies
    meanwhile, that delivery takes the item over; if it finishes, the delivery does nothing.  Not in
    eager mode (no broker: nothing can be redelivered, and the send would run at once, forever)."""
    if current_app.conf.task_always_eager:
        logger.warning("item %s: its lease is live for %.0f s more; nothing sent (tasks run in-process)",
                       item_id, lease_left)
        return
    countdown = min(lease_left + 5, lease.RECHECK_MAX_SECONDS)
    logger.info("item %s: its lease is live for %.0f s more; checking again in %.0f s", item_id, lease_left, countdown)
    run_agent_trial.apply_async((item_id,), countdown=countdown)


@shared_task(ignore_result=True)
def enforce_shift_deadlines() -> int:
    """Periodic (Celery beat): end the shifts whose deadline has passed."""
    return deadlines.sweep()

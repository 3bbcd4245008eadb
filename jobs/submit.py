"""Submitting jobs: create the rows, then schedule the tasks once they are committed.

``transaction.on_commit`` sends the messages only after the rows exist for every
other connection, so a worker never receives an id it cannot read.  With no broker
configured (the embedded default) Celery runs the tasks in-process, eagerly, right
after the commit, and the job is finished when the submit call returns.
"""
from __future__ import annotations

import logging
from pathlib import Path

from celery import current_app
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from . import tasks
from .agents import cell_name, create_agent_job, reset_failed
from .batch import create_batch_job
from .calibration import create_calibration_job
from .models import Job

logger = logging.getLogger(__name__)


def _fan_out(task, job: Job) -> None:
    _send_on_commit(task, job.pk, list(job.items.order_by("index").values_list("pk", flat=True)))


def _send_on_commit(task, job_id: int, item_ids: list[int]) -> None:
    """Send each item's task once the rows are committed.  With the broker down, the job is
    failed saying so (as an export that cannot be sent is), not left pending for ever."""
    def send() -> None:
        sent = 0
        try:
            for item_id in item_ids:
                task.delay(item_id)
                sent += 1
        except BrokerUnavailable as exc:
            logger.error("job %s: %d of its %d tasks could not be sent to the task queue: %s", job_id,
                         len(item_ids) - sent, len(item_ids), exc)
            Job.objects.filter(pk=job_id).exclude(status__in=(Job.Status.DONE, Job.Status.FAILED)).update(
                status=Job.Status.FAILED, finished_at=timezone.now(),
                error=f"{len(item_ids) - sent} of its {len(item_ids)} tasks could not be sent to the task queue "
                      f"({type(exc).__name__}: {exc}), so nothing will run them; submit the job again (a model-trial "
                      f"job: manage.py run_agents --retry {job_id}), and if it fails again, tell the site's operator "
                      "(the broker may be down)")

    transaction.on_commit(send)


def submit_calibration(tasks_: list[str], seeds: list[int], out: str | Path) -> Job:
    """One task per cell, gathered into ``out`` (the release's layout) when all are done."""
    with transaction.atomic():
        job = create_calibration_job(tasks_, seeds, out)
        _fan_out(tasks.run_calibration_cell, job)
    return job


def submit_batch(tasks_: list[str], seeds: list[int], out: str | Path, **kwargs) -> Job:
    """One task per trial, each writing ``out/<task>-<seed>-<label>``."""
    with transaction.atomic():
        job = create_batch_job(tasks_, seeds, out, **kwargs)
        _fan_out(tasks.run_batch_trial, job)
    return job


def submit_agents(tasks_: list[str], seeds: list[int], out: str | Path, **kwargs) -> Job:
    """One task per cell, each playing a model trial into ``out/<task>-<seed>-agent`` (:mod:`jobs.agents`)."""
    with transaction.atomic():
        job = create_agent_job(tasks_, seeds, out, **kwargs)
        _fan_out(tasks.run_agent_trial, job)
    return job


def retry_agents(job_id: int, *, api_key_env: str | None = None) -> tuple[Job, list[str]]:
    """Play again, in the same job and job folder, the failed cells of an ended model-trial job
    (:func:`jobs.agents.reset_failed`, which says what is refused); the job and the cells sent."""
    with transaction.atomic():
        job, items = reset_failed(job_id, api_key_env=api_key_env)
        _send_on_commit(tasks.run_agent_trial, job.pk, [item.pk for item in items])
    return job, [cell_name(item) for item in items]


def submit_export(task_name: str, params: dict | None = None) -> Job:
    """The hook for exports built elsewhere: a job row, then the Celery task named
    ``task_name`` is sent the job's id.  That task reads ``job.params`` and reports
    through :mod:`jobs.progress` (``start``, ``advance``, ``finish``, ``fail``)."""
    with transaction.atomic():
        job = Job.objects.create(kind=Job.Kind.EXPORT, params={"task": task_name, **(params or {})})
        transaction.on_commit(lambda: current_app.send_task(task_name, args=[job.pk])
                              if not current_app.conf.task_always_eager
                              else current_app.tasks[task_name].apply(args=[job.pk]))
    return job

"""Calibration as a job: one item per task-seed cell, gathered into one file.

Each cell is calibrated exactly as ``storebench calibrate`` does it
(:func:`environment.calibration.calibrate_cell`) and its cell dict is stored as JSON
text on its item.  Gathering builds the document with the same
:func:`~environment.calibration.document` and writes it with the same
:func:`~environment.calibration.write_calibration` and report writer, so the file,
its ``.sha256`` and its report are byte for byte what the CLI writes for the same
cells.  Calibration is deterministic, so a cell computed twice (a redelivered task)
gives the same bytes; the first stored result is kept.
"""
from __future__ import annotations

import json
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from environment.orchestration import calibration_cell, expand_tasks, finish_calibration, run_cells

from . import progress
from .models import Job, JobItem


def create_calibration_job(tasks: list[str], seeds: list[int], out: str | Path) -> Job:
    """The job row and one item per cell; refuses unknown tasks and a task or seed named twice
    before anything is stored (as ``storebench calibrate`` does)."""
    task_ids = expand_tasks(tasks)
    cells = run_cells(task_ids, seeds)
    with transaction.atomic():
        job = Job.objects.create(kind=Job.Kind.CALIBRATION, total=len(cells),
                                 params={"tasks": task_ids, "seeds": [int(s) for s in seeds],
                                         "out": str(Path(out).resolve())})
        JobItem.objects.bulk_create(JobItem(job=job, index=i, key=f"{tid}:{seed}", params={"task": tid, "seed": seed})
                                    for i, (tid, seed) in enumerate(cells))
    return job


def run_cell(item: JobItem) -> str:
    """The cell's calibration as JSON text (deterministic for the cell)."""
    return json.dumps(calibration_cell(item.params["task"], int(item.params["seed"])))


def gather(job_id: int) -> Job:
    """Write the calibration file once every cell is done; a no-op when already written
    or not yet complete.  Holds the job's row lock while writing, so two gatherers
    cannot interleave; the file is written to a temporary name and renamed (a failed
    write leaves no temporary file behind: :func:`environment.calibration.write_calibration`)."""
    with transaction.atomic():
        job = progress.locked_job(job_id)
        if job.status == Job.Status.DONE or job.status == Job.Status.FAILED:
            return job
        items = list(job.items.order_by("index"))
        if any(item.status != JobItem.Status.DONE for item in items):
            return job
        results: dict[str, dict[int, dict]] = {}
        for item in items:
            results.setdefault(item.params["task"], {})[int(item.params["seed"])] = json.loads(item.result_json)
        out = Path(job.params["out"])
        written = finish_calibration(results, job.params["tasks"], out)
        job.status = Job.Status.DONE
        job.result_path = str(written.path)  # beside ``out`` when a gate failed: out is left as it was
        job.result_hash = written.digest
        job.summary = {"cells": len(items), "gate_failures": [str(f) for f in written.failures],
                       "report": str(written.report),
                       "attempts": sum(item.attempts for item in items)}
        job.done = job.total
        job.finished_at = timezone.now()
        job.save()
        return job

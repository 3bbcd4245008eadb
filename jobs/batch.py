"""Trial batches as a job: one item per trial, each writing one trial folder.

A trial is played by :func:`environment.trial.run_trial`, the function behind
``storebench run`` and ``storebench batch``, so a folder means the same thing
whichever way it was made.  A trial is a pure function of (task, seed, policy or
action log, calibration): a redelivered item whose earlier delivery died after
writing some or all of its folder removes it and plays the trial again, which
writes the same files (``summary.json``'s wall time aside).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from django.db import transaction

from environment.artifacts import read_action_log
from environment.calibration import load_calibration
from environment.cli import writable_folder
from environment.orchestration import batch_summary, plan_batch
from environment.trial import run_trial

from .models import Job, JobItem


def create_batch_job(tasks: list[str], seeds: list[int], out: str | Path, *, policy: str | None = None,
                     actions: str | None = None, calibration: str | None = None) -> Job:
    """The job row and one item per trial; bad input (an unknown policy or task, a bad action log or
    calibration, an ``out`` that is a file or cannot be created, trial folders already there) is
    refused before anything is stored."""
    # the CLI's checks (environment.orchestration.plan_batch), before any row or folder
    cells = plan_batch(tasks, seeds, Path(out).resolve(), policy=policy, actions=actions)
    if calibration is not None:
        load_calibration(calibration)  # a bad file is refused now, not in every worker
    root = writable_folder(out, "--out").resolve()  # a file here would fail every item in the worker
    task_ids = list(dict.fromkeys(c.task for c in cells))
    with transaction.atomic():
        job = Job.objects.create(kind=Job.Kind.BATCH, total=len(cells), params={
            "tasks": task_ids, "seeds": [int(s) for s in seeds], "out": str(root), "policy": policy,
            "actions": str(Path(actions).resolve()) if actions else None,
            "calibration": str(Path(calibration).resolve()) if calibration else None})
        JobItem.objects.bulk_create(
            JobItem(job=job, index=i, key=f"{c.task}:{c.seed}",
                    params={"task": c.task, "seed": c.seed, "out": str(c.out)})
            for i, c in enumerate(cells))
    return job


def run_item(item: JobItem) -> str:
    """Play the item's trial into its folder; the score (with pass and threshold) as JSON text."""
    params = item.job.params
    out = Path(item.params["out"])
    for stale in [out, *out.parent.glob(f".{out.name}.partial-*")]:
        if stale.exists():
            shutil.rmtree(stale)
    calibration, digest = load_calibration(params["calibration"]) if params.get("calibration") else (None, None)
    actions = read_action_log(Path(params["actions"])) if params.get("actions") else None
    data = run_trial(item.params["task"], int(item.params["seed"]), out, policy=params.get("policy"),
                     actions=actions, calibration=calibration, calibration_hash=digest)
    return json.dumps(data, sort_keys=True)


def summary(job: Job) -> dict:
    return batch_summary(json.loads(item.result_json) for item in job.items.filter(status=JobItem.Status.DONE))

"""Model-trial batches as a job: one item per task-seed cell, each played by an LLM.

Each item plays :func:`mcp_client.agent.play` (the function behind ``storebench agent``)
into a folder of its own, ``OUT/job-<id>/<task>-<seed>-agent``, which then holds play's session
folder (``<task>__s<seed>__<id>``) and ``agent.log`` (play's per-turn lines).  Every job has a
folder of its own under ``OUT``, so two jobs given one ``OUT`` (a command run again after its
wait timed out, while the first job still plays) never touch each other's cells.  The job is a
``Job.Kind.BATCH`` whose params say ``"runner": "agent"``; its summary is the scripted
batch's (trials, passed, mean_composite) with the token totals and how the trials ended.

The API key
-----------
The key never reaches the database, the broker, a log or a trial folder: the job stores
the *name* of an environment variable (``api_key_env``, default ``OPENAI_API_KEY``) and
each worker reads the key from its own environment when it plays.  A worker without the
variable plays without a key; an endpoint that needs one then refuses the first request,
and the item fails with the endpoint's answer and a note that the variable is not set on
that worker.  A base URL carrying credentials (``user:password@``) is refused at submission.

Outcomes
--------
An endpoint that never answered a completion writes no trial (play's ``result`` is None):
the item fails with the endpoint's message.  An endpoint that fails after some turns still
gets a graded trial (play ends the episode there): the item is done and its result says
``ended_by``.  A failed cell fails only its item; the other cells play on, and the job ends
when none of its items is pending or running any more (:func:`end_job`, under the job's row
lock, so two cells ending at once end it once): DONE with the summary if every cell is
done, else FAILED with an error naming how many and which cells failed ("2 of 6 cells
failed: steady/7: ...; liquidity/11: ..."), the summary of the done cells plus a
``failed`` list, and ``result_path`` the job folder all the same (the done cells are there).

A bug (an unexpected exception, not a refusal) fails its item with the exception's type and
text, and since it would likely strike every cell, it stops the job from spending more:
every cell still pending fails at once without being played ("not played: ..."), the cells
already playing finish under their leases, and the job then ends FAILED as above.
:func:`reset_failed` (``run_agents --retry JOB``) plays a failed job's failed cells again
in the same job and job folder once the job has ended.

Each item plays under a lease, and only the lease holder writes the item's folder and result
(:mod:`jobs.lease`): a model trial samples, so it is never simply redone like a scripted one.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from environment.cli import writable_folder
from environment.errors import StoreBenchError
from environment.orchestration import batch_summary, expand_tasks, run_cells
from mcp_client import agent
from mcp_client.agent import KEEP_TURNS, MAX_IDLE_TURNS, MAX_TURNS, RETRIES, Retry, play

from . import progress
from .lease import Heartbeat, LeaseLost, attempt_folder, clear_leftovers, publish
from .models import Job, JobItem

RUNNER = "agent"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
LOG_NAME = "agent.log"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
ENDED = (JobItem.Status.DONE, JobItem.Status.FAILED)


def check_base_url(base_url: str) -> None:
    """The runner's check (http(s) with a host, no credentials: here the URL is stored with the job)."""
    agent.check_base_url(base_url, credentials="stored with the job: give the key through --api-key-env instead")


def check_key_env(name: str) -> None:
    if not _ENV_NAME.match(name or ""):
        # the value is not echoed: someone may have given the key itself
        raise StoreBenchError("--api-key-env must name an environment variable (letters, digits and _, not "
                              "starting with a digit): the variable's name, never the key")


def job_folder(out: Path, job_id: int) -> Path:
    return out / f"job-{job_id}"


def item_folder(root: Path, task: str, seed: int) -> Path:
    return root / f"{task}-{seed}-{RUNNER}"


def create_agent_job(tasks: list[str], seeds: list[int], out: str | Path, *, model: str, base_url: str,
                     api_key_env: str = DEFAULT_KEY_ENV, max_turns: int = MAX_TURNS, keep_turns: int = KEEP_TURNS,
                     max_idle_turns: int = MAX_IDLE_TURNS, temperature: float | None = None,
                     retries: int = RETRIES) -> Job:
    """The job row and one item per cell, each writing under ``out/job-<id>`` (:func:`job_folder`).
    Bad input (an unknown or repeated task, a repeated seed, a base URL that is not http(s) with a
    host, a bad variable name or turn setting, an ``out`` that cannot be a folder, a job folder
    already there) is refused before any row is kept."""
    if not model or not model.strip():
        raise StoreBenchError("--model is empty: give the model name the endpoint serves")
    check_base_url(base_url)
    check_key_env(api_key_env)
    if max_turns < 1 or max_idle_turns < 1:
        raise StoreBenchError(f"--max-turns and --max-idle-turns must be 1 or more, not {max_turns} and "
                              f"{max_idle_turns}")
    if keep_turns < 0 or retries < 0:
        raise StoreBenchError(f"--keep-turns and --retries must be 0 or more, not {keep_turns} and {retries}")
    task_ids = expand_tasks(tasks)
    cells = run_cells(task_ids, seeds)  # unknown tasks, a task or seed named twice
    root = writable_folder(out, "--out").resolve()  # the last check: it creates the folder
    with transaction.atomic():
        job = Job.objects.create(kind=Job.Kind.BATCH, total=len(cells), params={
            "runner": RUNNER, "tasks": list(dict.fromkeys(t for t, _ in cells)), "seeds": [int(s) for s in seeds],
            "out": "", "model": model, "base_url": base_url, "api_key_env": api_key_env,
            "max_turns": max_turns, "keep_turns": keep_turns, "max_idle_turns": max_idle_turns,
            "temperature": temperature, "retries": retries})
        root = job_folder(root, job.pk)
        if root.exists():  # another database's job of the same number wrote here: the row is rolled back
            raise StoreBenchError(f"{root} already exists (a job of another database?); use a new --out")
        job.params["out"] = str(root)
        job.save(update_fields=["params"])
        JobItem.objects.bulk_create(
            JobItem(job=job, index=i, key=f"{t}:{s}",
                    params={"task": t, "seed": int(s), "out": str(item_folder(root, t, s))})
            for i, (t, s) in enumerate(cells))
    return job


# --- playing an item ------------------------------------------------------------------------------------------


def play_item(item: JobItem, owner: str) -> str:
    """Play the item's cell under ``owner``'s lease and publish it; its result as JSON text.

    Raises :class:`StoreBenchError` when the endpoint never answered (no trial), and
    :class:`LeaseLost` when another worker took the item over meanwhile."""
    params = item.job.params
    final = Path(item.params["out"])
    attempt = attempt_folder(final, owner)
    clear_leftovers(final)
    attempt.mkdir(parents=True)
    key_env = params.get("api_key_env") or DEFAULT_KEY_ENV
    api_key = os.environ.get(key_env) or None
    key_hint = f"${key_env} is not set on this worker"  # said when an endpoint refuses a request sent without a key
    try:
        with open(attempt / LOG_NAME, "w", encoding="utf-8") as log:
            run = asyncio.run(_leased_play(item, owner, attempt, api_key, key_hint, log))
        if run.result is None:
            missing = agent.no_key_note(run.endpoint_status, api_key, key_hint)
            raise StoreBenchError(f"{run.endpoint_error or 'the endpoint failed'}; it never answered a completion, "
                                  f"so no trial was written{missing}")
        session_folder = final / Path(str(run.result["out"])).name
        summary = run.summary()
        result = {"task": item.params["task"], "seed": int(item.params["seed"]), "model": params["model"],
                  "out": str(session_folder), "reward_composite": summary["reward_composite"],
                  "pass": summary["pass"], "ended_by": run.ended_by, "turns_taken": run.turns_taken,
                  "tool_calls": run.tool_calls, "metrics": run.all_metrics(),
                  **({"endpoint_error": run.endpoint_error} if run.endpoint_error else {})}
        text = json.dumps(result, sort_keys=True)
        publish(item.pk, owner, attempt, final, text)
        return text
    finally:
        if attempt.exists():  # not published: a refusal, a lost lease, a bug
            shutil.rmtree(attempt, ignore_errors=True)


async def _leased_play(item: JobItem, owner: str, attempt: Path, api_key: str | None, key_hint: str, log) -> Any:
    params = item.job.params
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    assert me is not None
    beat = Heartbeat(item.pk, owner, on_lost=lambda: loop.call_soon_threadsafe(me.cancel))
    beat.start()
    try:
        return await play(item.params["task"], int(item.params["seed"]), model=params["model"],
                          base_url=params["base_url"], api_key=api_key, trials=attempt,
                          max_turns=params["max_turns"], keep_turns=params["keep_turns"],
                          max_idle_turns=params["max_idle_turns"], temperature=params.get("temperature"), log=log,
                          retry=Retry(retries=params.get("retries", RETRIES)), key_hint=key_hint)
    except asyncio.CancelledError:
        if beat.lost:
            raise LeaseLost(owner) from None
        raise
    finally:
        beat.stop()


def summary(job: Job) -> dict:
    results = [json.loads(item.result_json) for item in job.items.filter(status=JobItem.Status.DONE)]
    totals = {key: sum(int(r.get("metrics", {}).get(key, 0)) for r in results) for key in agent.TOKEN_COUNTS}
    ended = dict(Counter(r["ended_by"] for r in results))
    return {**batch_summary(results), "model": job.params.get("model"), "tokens": totals, "ended_by": ended}


# --- how a job ends, and playing its failed cells again --------------------------------------------------------


def cell_name(item: JobItem) -> str:
    return f"{item.params['task']}/{item.params['seed']}"


def end_job(job_id: int | None) -> Job | None:
    """End the model-trial job once none of its items is pending or running (see the module
    docstring); a job already ended, or with an item still to play, is left as it is."""
    if job_id is None:
        return None
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.finished:
            return job
        items = list(job.items.order_by("index"))
        if any(item.status not in ENDED for item in items):
            return job
        failed = [item for item in items if item.status == JobItem.Status.FAILED]
        if not failed:
            return progress.finish(job.pk, path=job.params["out"], summary=summary(job))
        # job.done already counts the done cells: publish keeps it
        return progress.fail(job.pk, f"{len(failed)} of {len(items)} cells failed: " + failures_text(failed),
                             path=job.params["out"], summary={**summary(job), "failed": [
                                 {"task": item.params["task"], "seed": item.params["seed"], "error": item.error}
                                 for item in failed]})


def failures_text(failed: list[JobItem]) -> str:
    """The failed cells and why, cells failed for the same reason named together ("liquidity/7,
    liquidity/11: not played: ..."), so a job stopped by a bug says its reason once."""
    by_error: dict[str, list[str]] = {}
    for item in failed:
        by_error.setdefault(item.error, []).append(cell_name(item))
    return "; ".join(f"{', '.join(cells)}: {error}" for error, cells in by_error.items())


def stop_unplayed(job_id: int, reason: str) -> int:
    """Fail every item of the job not being played, with ``reason`` (after a bug): the pending
    ones and those whose player died (a lease that has expired); the number failed.  A message
    still queued for one of them then finds it failed and plays nothing."""
    unplayed = Q(status=JobItem.Status.PENDING) | Q(status=JobItem.Status.RUNNING, lease_until__lte=timezone.now())
    return JobItem.objects.filter(unplayed, job_id=job_id).update(
        status=JobItem.Status.FAILED, error=f"not played: {reason}", finished_at=timezone.now())


def reset_failed(job_id: int, *, api_key_env: str | None = None) -> tuple[Job, list[JobItem]]:
    """Make an ended model-trial job's failed cells pending again (error and lease cleared, attempts
    kept as a count of every delivery that started one) and the job running, to be played again
    in the same job folder; ``api_key_env`` replaces the variable the workers read the key from.
    Call inside a transaction and send the items' tasks on commit.  Refuses (``StoreBenchError``)
    an unknown job, one that is not a model-trial job, one still running, one with no failed cell."""
    if api_key_env is not None:
        check_key_env(api_key_env)
    job = Job.objects.select_for_update().filter(pk=job_id).first()
    if job is None:
        raise StoreBenchError(f"there is no job {job_id}: give the number `run_agents` printed (\"job N: ...\")")
    if job.kind != Job.Kind.BATCH or job.params.get("runner") != RUNNER:
        raise StoreBenchError(f"job {job_id} is not a model-trial job (it is a {job.get_kind_display().lower()} job "
                              "of another runner): --retry plays again the failed cells of a run_agents job only")
    items = list(job.items.select_for_update().order_by("index"))
    now = timezone.now()
    playing = [item for item in items if item.status == JobItem.Status.RUNNING
               and item.lease_until is not None and item.lease_until > now]
    if not job.finished or playing:
        raise StoreBenchError(f"job {job_id} is still running ({job.done}/{job.total} cells done): --retry plays "
                              "its failed cells once it has ended; wait for it, then run the command again")
    # Cells the job never played to the end: failed ones, and (a job failed before its cells were
    # played, by an older release that stopped at the first failure) pending ones and dead leases.
    again = [item for item in items if item.status != JobItem.Status.DONE]
    if not again:
        done = "its only cell is done" if job.total == 1 else f"all {job.total} of its cells are done"
        raise StoreBenchError(f"job {job_id} has no failed cell: {done}, so there is nothing to play again")
    JobItem.objects.filter(pk__in=[item.pk for item in again]).update(
        status=JobItem.Status.PENDING, error="", lease_owner="", lease_until=None, started_at=None,
        finished_at=None)
    if api_key_env is not None:
        job.params["api_key_env"] = api_key_env
    job.status = Job.Status.RUNNING
    job.error, job.summary, job.result_path, job.finished_at = "", {}, "", None
    job.done = len(items) - len(again)
    job.save()
    return job, again

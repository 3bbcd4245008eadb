"""Model-trial batches as a job: one item per task-seed cell, each played by an LLM.

Each item plays :func:`mcp_client.agent.play` (the function behind ``storebench agent``)
into a folder of its own, ``OUT/job-<id>/<task>-<seed>-agent``, which then holds play's session
folder (``<task>__s<seed>__<id>``) and ``agent.log`` (play's per-turn lines).  Every job has a
folder of its own under ``OUT``, so two jobs given one ``OUT`` (a command run again after its
wait timed out, while the first job still plays) never touch each other's cells.  The job is a
``Job.Kind.BATCH`` whose params say ``"runner": "agent"``; its summary is the scripted
batch's (trials, passed, mean_composite) with the token totals.

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
the item fails with the endpoint's message, and so does its job (as a scripted batch's
refused item does).  An endpoint that fails after some turns still gets a graded trial
(play ends the episode there): the item is done and its result says ``ended_by``.

Long items: a lease, not "run it again"
---------------------------------------
A model trial is not a pure function (the model samples), may run for an hour, and costs
money.  Item tasks acknowledge late, and the broker may deliver a message again while its
first delivery is still playing: Redis after its ``visibility_timeout`` (900 s,
``config/celery.py``), RabbitMQ when its ``consumer_timeout`` (30 min by default) closes
the slow consumer's channel; a killed pool process's message comes back at once.  So a
delivery of a RUNNING item cannot tell "the player died" from "the player is slow" by the
message alone, and ``progress.claim_item`` (which re-claims a RUNNING item: right for
calibration cells and scripted trials, which replay to the same bytes) is not used here.

* **Lease.**  Claiming an item (:func:`claim`) writes ``lease_owner`` (host, pid and a
  random part: unique per attempt) and ``lease_until`` (now + :data:`LEASE_SECONDS`).  The
  claim is one conditional UPDATE on the row as it was read (status, owner, attempts), so
  two deliveries racing for one item cannot both win, on PostgreSQL or SQLite.
* **Heartbeat.**  While play runs, a thread (:class:`Heartbeat`) pushes ``lease_until``
  forward every :data:`HEARTBEAT_SECONDS` (a fifth of the lease: 60 s of the default 300;
  ``STOREBENCH_AGENT_LEASE_SECONDS`` sets the lease on every worker), for its own owner only.  A thread rather than
  play's per-turn log, because one chat-completions request may itself take minutes.
* **A delivery that finds a live lease** plays nothing.  It does not just drop the message
  either: that message may be the only one left for the cell (on Redis the redelivered copy
  replaces the first delivery's, and an acknowledged copy is gone), so if the player died
  later the cell would be lost.  It sends the task again with a countdown running to just
  after the lease's end (at most :data:`RECHECK_MAX_SECONDS`, below Redis's visibility
  timeout), and that check repeats until the item is done or failed, or the lease has
  expired.
* **A delivery that finds an expired lease** (the player stopped refreshing it: its worker
  or host died) takes the item over: it removes what the dead attempt left (the item's
  folder, if it got that far, and every ``.attempt-*`` folder of the cell) and plays again.
* **Fencing: only the lease holder writes the item's folder.**  Every attempt plays into a
  private folder ``.<task>-<seed>-agent.attempt-<owner>`` beside it; when play returns, the item
  is published (:func:`publish`) under the item's row lock *only if the lease is still this
  attempt's*: the private folder is renamed to the item's folder and the item is
  marked done in the same transaction.  An attempt that lost its lease (it stalled past the
  lease, and another worker took over) publishes nothing and removes its private folder;
  its heartbeat also cancels its play as soon as it sees the lease gone, so it stops
  spending tokens.  Two concurrent plays of one cell therefore never both write the cell's
  folder or result, and a dead player's cell is not lost: until its item is done or failed
  there is a live lease (a player) or a message that will take it over once the lease has
  expired (as for every job task, a delivery that fails before it claims, say the database
  away, is acknowledged and lost).

Scripted batches and calibration keep their replay-on-redelivery behaviour (they never set
a lease).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import shutil
import socket
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.utils import timezone

from environment.cli import writable_folder
from environment.errors import StoreBenchError
from environment.orchestration import batch_summary, expand_tasks, run_cells
from mcp_client import agent
from mcp_client.agent import KEEP_TURNS, MAX_IDLE_TURNS, MAX_TURNS, RETRIES, Retry, play

from . import progress
from .models import Job, JobItem

logger = logging.getLogger(__name__)

RUNNER = "agent"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# How long a player's lease lasts (STOREBENCH_AGENT_LEASE_SECONDS, default 300 s): a dead player's cell
# is played again at most about this long after its last heartbeat; the heartbeat comes five times a lease.
LEASE_MIN_SECONDS = 10


def _lease_seconds(raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= LEASE_MIN_SECONDS or seconds == float("inf"):
        raise ImproperlyConfigured(f"STOREBENCH_AGENT_LEASE_SECONDS must be a number of seconds of at least "
                                   f"{LEASE_MIN_SECONDS}, not {raw!r} (unset, it is 300)")
    return seconds


LEASE_SECONDS = _lease_seconds(os.environ.get("STOREBENCH_AGENT_LEASE_SECONDS", "300"))
HEARTBEAT_SECONDS = LEASE_SECONDS / 5
RECHECK_MAX_SECONDS = 600  # a delayed check stays below Redis's visibility timeout (900 s)
LOG_NAME = "agent.log"
TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_base_url(base_url: str) -> None:
    """The runner's check (http(s) with a host), and no credentials in it: the URL is stored with the job."""
    agent.check_base_url(base_url)
    parts = urlsplit(base_url)
    if parts.username is not None or parts.password is not None:
        raise StoreBenchError("--base-url carries credentials (user:password@host); they would be stored with the "
                              "job: give the key through --api-key-env instead")


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


# --- the lease ------------------------------------------------------------------------------------------------


def new_owner() -> str:
    """Who plays one attempt: host, process and a random part (unique per attempt)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass(frozen=True)
class Claim:
    """What a delivery found: ``item`` to play (a claim); else ``recheck_in`` seconds until a live
    lease ends (play nothing, look again later); else nothing to do (done, failed, deleted)."""

    item: JobItem | None = None
    recheck_in: float | None = None
    took_over: str = ""  # the owner whose expired lease this claim replaced


def claim(item_id: int, owner: str) -> Claim:
    """Take the item's lease if it is free (pending, or running under an expired lease)."""
    while True:
        with transaction.atomic():
            item = JobItem.objects.select_for_update().select_related("job").filter(pk=item_id).first()
            if item is None or item.status in (JobItem.Status.DONE, JobItem.Status.FAILED) \
                    or item.job.status == Job.Status.FAILED:
                return Claim()
            now = timezone.now()
            if item.status == JobItem.Status.RUNNING and item.lease_until is not None and item.lease_until > now:
                return Claim(recheck_in=(item.lease_until - now).total_seconds())
            # compare-and-swap on the row as read: a racing claim makes this update match nothing
            won = JobItem.objects.filter(pk=item_id, status=item.status, lease_owner=item.lease_owner,
                                         attempts=item.attempts).update(
                status=JobItem.Status.RUNNING, attempts=F("attempts") + 1, started_at=now, lease_owner=owner,
                lease_until=now + timedelta(seconds=LEASE_SECONDS))
            if won:
                progress.start(item.job_id)
                previous = item.lease_owner if item.status == JobItem.Status.RUNNING else ""
                item.refresh_from_db()
                return Claim(item=item, took_over=previous or "")


def renew(item_id: int, owner: str) -> bool:
    """Push the lease forward; False when it is no longer ``owner``'s (taken over, or the item ended)."""
    return bool(JobItem.objects.filter(pk=item_id, lease_owner=owner, status=JobItem.Status.RUNNING)
                .update(lease_until=timezone.now() + timedelta(seconds=LEASE_SECONDS)))


class Heartbeat(threading.Thread):
    """Renews the lease every :data:`HEARTBEAT_SECONDS` until stopped; calls ``on_lost`` once if
    the lease is found gone.  Uses its own database connection and closes it when it ends."""

    def __init__(self, item_id: int, owner: str, on_lost) -> None:
        super().__init__(name=f"lease-{item_id}", daemon=True)
        self.item_id, self.owner, self.on_lost = item_id, owner, on_lost
        self.stopped = threading.Event()
        self.lost = False

    def run(self) -> None:
        try:
            while not self.stopped.wait(HEARTBEAT_SECONDS):
                try:
                    renewed = renew(self.item_id, self.owner)
                except DatabaseError as exc:  # the database is away: try again next beat (fencing stays safe)
                    logger.warning("item %s: lease not renewed: %s", self.item_id, exc)
                    connection.close()
                    continue
                if not renewed:
                    self.lost = True
                    logger.warning("item %s: lease of %s lost; stopping its play", self.item_id, self.owner)
                    self.on_lost()
                    return
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def attempt_folder(final: Path, owner: str) -> Path:
    return final.parent / f".{final.name}.attempt-{re.sub(r'[^A-Za-z0-9_.-]', '_', owner)}"


def clear_leftovers(final: Path) -> None:
    """What earlier attempts of the cell left: its folder (never published while not done) and
    every private attempt folder.  Called by the lease holder only."""
    for stale in [final, *final.parent.glob(f".{final.name}.attempt-*")]:
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()


class LeaseLost(Exception):
    """This attempt's lease was taken over: it must write nothing."""


def publish(item_id: int, owner: str, attempt: Path, final: Path, result_json: str) -> tuple[Job, bool]:
    """Under the item's row lock, if the lease is still ``owner``'s: rename the attempt's folder to
    the item's and mark the item done; returns the job and whether all its items are done.
    Raises :class:`LeaseLost` (having written nothing) otherwise."""
    with transaction.atomic():
        item = JobItem.objects.select_for_update().filter(pk=item_id).first()
        if item is None:
            raise LeaseLost("nobody: the job was deleted")
        job = progress.locked_job(item.job_id)
        if item.lease_owner != owner or item.status != JobItem.Status.RUNNING:
            raise LeaseLost(item.lease_owner)
        if final.exists():  # a leftover of a dead attempt that got this far (cleared at claim too)
            shutil.rmtree(final)
        attempt.rename(final)
        JobItem.objects.filter(pk=item_id, lease_owner=owner).update(
            status=JobItem.Status.DONE, result_json=result_json, error="", finished_at=timezone.now(),
            lease_until=None)
        job.done = job.items.filter(status=JobItem.Status.DONE).count()
        job.save(update_fields=["done", "updated_at"])
        return job, job.done == job.total


def fail_owned(item_id: int, owner: str, error: str) -> bool:
    """Fail the item and its job, if the lease is still ``owner``'s (a taken-over attempt's failure
    is not the item's); one conditional UPDATE, so a takeover cannot slip in between."""
    failed = JobItem.objects.filter(pk=item_id, lease_owner=owner, status=JobItem.Status.RUNNING).update(
        status=JobItem.Status.FAILED, error=error, finished_at=timezone.now(), lease_until=None)
    item = JobItem.objects.filter(pk=item_id).first() if failed else None
    if item is not None:
        progress.fail(item.job_id, f"{item.key}: {error}")
    return item is not None


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
    try:
        with open(attempt / LOG_NAME, "w", encoding="utf-8") as log:
            run = asyncio.run(_leased_play(item, owner, attempt, api_key, log))
        if run.result is None:
            refused = run.endpoint_status in (401, 403)
            missing = f" (no API key was sent: ${key_env} is not set on this worker)" if refused and not api_key else ""
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


async def _leased_play(item: JobItem, owner: str, attempt: Path, api_key: str | None, log) -> Any:
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
                          retry=Retry(retries=params.get("retries", RETRIES)))
    except asyncio.CancelledError:
        if beat.lost:
            raise LeaseLost(owner) from None
        raise
    finally:
        beat.stop()


def summary(job: Job) -> dict:
    results = [json.loads(item.result_json) for item in job.items.filter(status=JobItem.Status.DONE)]
    totals = {key: sum(int(r.get("metrics", {}).get(key, 0)) for r in results) for key in TOKEN_KEYS}
    ended = dict(Counter(r["ended_by"] for r in results))
    return {**batch_summary(results), "model": job.params.get("model"), "tokens": totals, "ended_by": ended}

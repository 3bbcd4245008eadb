"""The lease a model trial is played under (:mod:`jobs.agents`): who plays an item, until when,
and the fencing that lets only that player write the item's folder and result.

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

import logging
import os
import re
import secrets
import shutil
import socket
import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.utils import timezone

from . import progress
from .models import Job, JobItem

logger = logging.getLogger(__name__)

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
    """Fail the item (only the item: its job ends once every item has ended, :func:`jobs.agents.end_job`),
    if the lease is still ``owner``'s (a taken-over attempt's failure is not the item's); one
    conditional UPDATE, so a takeover cannot slip in between.  True if it failed the item."""
    return bool(JobItem.objects.filter(pk=item_id, lease_owner=owner, status=JobItem.Status.RUNNING).update(
        status=JobItem.Status.FAILED, error=error, finished_at=timezone.now(), lease_until=None))

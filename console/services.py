"""Shift services: the only place the console touches the environment.

Every tool call goes through an MCP client session connected in memory to an MCP server
built over the shift's live episode (``build_server(lambda: ep)``), so a participant sees
byte for byte what an agent sees.  The stored calls are the source of truth: the live
episode is a process-local cache, rebuilt on demand by replaying the calls that reached
the core (``play_actions(ep, actions, stop=False)``), which is deterministic.

The cache entry of a shift holds its episode, one MCP client session kept open for as
long as the entry lives (:class:`mcp_client.client.SyncEpisodeClient`; closed when the
entry is evicted or replaced), and a light record of every stored call, from which a
call's reply (header, inbox, cached views) is built without reading the calls back.

A per-shift lock serialises calls within a process.  Each call is one transaction: it
reads the shift (locking its row on PostgreSQL; SQLite takes its write lock at BEGIN),
counts the calls that reached the core in the same query that finds the next seq and a
repeated call id, makes the MCP call and stores it; the reply leaves only after the
commit.  A count that differs from the cache's (another process stored a call) replays
the cache afresh, under that lock, before the call is made, so two processes never act
on stale state.

Only :func:`end_shift` reaches the core directly: settlement and grading are not tools.

Gates and clocks: :func:`begin_shift` refuses to start a shift before the briefing is
acknowledged and, for a scored shift, before a practice shift has ended
(:mod:`console.briefing`).  A shift's 12-hour deadline is absolute; a pause refuses
tool calls and only splits the wall time into active and paused time.  Every access
checks the deadline, and :func:`enforce_deadlines` sweeps all open shifts (a
management command now, a periodic task later), so a shift left in a closed tab
still ends and is settled on time.  After every change the shift's channel group is
told (:mod:`console.live`), which pushes the header to open pages.
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from datetime import timedelta
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, F, TextField, Value, When
from django.utils import timezone

from environment.api import arm, cell_constants, grade
from environment.calibration import CalibrationError, cell_of, load_calibration
from environment.engine import Episode
from environment.tasks import get_task
from environment.tools import REGISTRY
from environment.trial import play_actions
from mcp_client.client import SyncEpisodeClient
from mcp_client.server import build_server

from .live import announce
from .briefing import StartRefused, start_refusal
from .models import SHIFT_LENGTH, Shift, ShiftCall, ShiftPause
from .timeline import series_of
from .workspace import CachedView, cached_views

__all__ = [
    "ShiftNotActive", "ShiftPaused", "StartRefused", "assign_shift", "begin_shift", "call_tool",
    "end_shift", "enforce_deadline", "enforce_deadlines", "pause_shift", "resume_shift",
    "shift_overview", "start_shift", "parse_result", "time_account",
]

logger = logging.getLogger(__name__)

OPENING_CALL_ID = "opening-store-status"
DEADLINE_REASON = "deadline"


class ShiftNotActive(Exception):
    """The shift cannot take a tool call (not started, or ended)."""


class ShiftPaused(ShiftNotActive):
    """The shift is paused: tool calls wait until it is resumed."""


PAUSED_MESSAGE = "The shift is paused: resume it before calling a tool."
PAUSE_REASON_MAX = 200


# --- results as the participant reads them ----------------------------------------------

HEADER_RE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d) UTC \| window (?P<window>\d+) of (?P<windows>\d+)"
    r" \| operations left (?P<ops_left>\d+) of (?P<ops_total>\d+) \| cash (?P<cash>\S+)"
    r" \| net assets (?P<net_assets>\S+) \| rating (?P<rating>[\d.]+)(?P<closed> \| store closed)?$",
    re.M,
)


@dataclass(frozen=True)
class Header:
    line: str
    time: str
    window: int
    windows: int
    ops_left: int
    ops_total: int
    cash: str
    net_assets: str
    rating: str
    closed: bool


def parse_header(text: str) -> Header | None:
    match = HEADER_RE.search(text or "")
    if match is None:
        return None
    g = match.groupdict()
    return Header(line=match.group(0), time=g["time"], window=int(g["window"]), windows=int(g["windows"]),
                  ops_left=int(g["ops_left"]), ops_total=int(g["ops_total"]), cash=g["cash"],
                  net_assets=g["net_assets"], rating=g["rating"], closed=bool(g["closed"]))


@dataclass(frozen=True)
class ParsedResult:
    header: Header | None
    message: str  # the refusal line(s) before the header, or the whole text without one
    data: Any  # the JSON body, or None
    pretty: str  # the body formatted for reading


def parse_result(text: str) -> ParsedResult:
    header = parse_header(text)
    if header is None:
        return ParsedResult(None, text, None, "")
    before, _, after = text.partition(header.line)
    body = after.strip()
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    pretty = json.dumps(data, indent=2, ensure_ascii=False) if data is not None else body
    return ParsedResult(header, before.strip(), data, pretty)


# --- the live episodes (process cache) --------------------------------------------------


@dataclass(frozen=True)
class _Record:
    """What the workspace needs of one stored call, kept beside the live episode so a
    call's reply is built without reading the shift's calls back.  ``result_text`` is
    kept for successful ``list_returns`` calls only (the inbox), and is "" otherwise."""

    seq: int
    tool: str
    arguments: dict
    is_error: bool
    reached_core: bool
    header: str
    result_text: str


def _keeps_text(tool: str, is_error: bool) -> bool:
    return tool == "list_returns" and not is_error


@dataclass
class _Live:
    episode: Episode
    session: SyncEpisodeClient  # one MCP client session for the shift's life in this process
    applied: int  # calls replayed or made through this cache that reached the core
    records: list[_Record]  # every stored call this cache knows, in order
    window: int | None  # window of the last stored header: the window the next call is made in


_cache: dict[int, _Live] = {}
_locks: dict[int, threading.RLock] = {}
_guard = threading.Lock()
# SQLite has one writer at a time: this process's writers of calls queue here, and the next
# one goes as soon as the last commits, instead of polling in SQLite's busy handler (sleeps
# of 1, 2, 5, 10, ... ms).  Other processes still wait in the busy handler.
_sqlite_writer = threading.Lock()


def _lock(shift_id: int) -> threading.RLock:
    with _guard:
        lock = _locks.get(shift_id)
        if lock is None:
            lock = _locks[shift_id] = threading.RLock()
        return lock


def _forget_after_fork() -> None:
    # A forked child has none of the parent's threads: the sessions' worker threads and any
    # lock a parent thread held are gone with them.  Start the child with an empty cache.
    global _guard, _sqlite_writer
    _cache.clear()
    _locks.clear()
    _guard, _sqlite_writer = threading.Lock(), threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def clear_cache() -> None:
    """Forget every live episode (what a server restart does), closing their sessions."""
    with _guard:
        ids = list(_cache)
    for shift_id in ids:
        _evict(shift_id)


def _evict(shift_id: int) -> None:
    with _lock(shift_id):
        with _guard:
            live = _cache.pop(shift_id, None)
        if live is not None:
            live.session.close()


def _replayable(shift: Shift) -> list[dict]:
    return [{"tool": tool, "arguments": arguments}
            for tool, arguments in shift.calls.filter(reached_core=True).order_by("seq")
            .values_list("tool", "arguments")]


def replay_episode(shift: Shift) -> Episode:
    """A fresh episode with the shift's stored calls replayed (the store as the participant left it)."""
    return play_actions(arm(shift.task_id, shift.seed), _replayable(shift), stop=False)


def _rebuild(shift: Shift) -> _Live:
    """Replay the shift's stored calls into a new live episode with its own session, and
    cache it (replacing, and closing, any previous one); call under the shift's lock."""
    inbox_text = Case(When(tool="list_returns", is_error=False, then=F("result_text")),
                      default=Value(""), output_field=TextField())
    records = [_Record(*row) for row in shift.calls.order_by("seq").annotate(inbox_text=inbox_text)
               .values_list("seq", "tool", "arguments", "is_error", "reached_core", "header", "inbox_text")]
    replayed = [{"tool": r.tool, "arguments": r.arguments} for r in records if r.reached_core]
    episode = play_actions(arm(shift.task_id, shift.seed), replayed, stop=False)
    window = next((h.window for h in (parse_header(r.header) for r in reversed(records) if r.header) if h), None)
    _evict(shift.pk)
    live = _Live(episode, SyncEpisodeClient(build_server(lambda: episode)), len(replayed), records, window)
    with _guard:
        _cache[shift.pk] = live
    return live


def _live(shift: Shift) -> _Live:
    """The shift's live episode, checked against the stored calls; call under the shift's lock."""
    live = _cache.get(shift.pk)
    if live is None or live.session.closed or live.applied != shift.calls.filter(reached_core=True).count():
        live = _rebuild(shift)
    return live


# --- shifts ---------------------------------------------------------------------------


def _release() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("storebench")
    except PackageNotFoundError:
        return ""


def assign_shift(user, task_id: str, seed: int, practice: bool = False) -> Shift:
    get_task(task_id)  # an unknown task fails here, not at the participant's first click
    return Shift.objects.create(participant=user, task_id=task_id, seed=int(seed), is_practice=practice)


def begin_shift(shift: Shift) -> Shift:
    """Start an assigned shift: the 12-hour clock starts and the store opens with a
    (free) ``store_status`` read, so the header is known before the first action.

    Raises :class:`StartRefused` before the briefing is acknowledged, or for a scored
    shift before a practice shift has ended.  A shift already started is returned as is.
    """
    with _lock(shift.pk):
        with transaction.atomic():
            shift = Shift.objects.select_for_update().get(pk=shift.pk)
            if shift.status != Shift.Status.ASSIGNED:
                return shift
            refusal = start_refusal(shift.participant, shift)
            if refusal is not None:
                raise StartRefused(refusal)
            now = timezone.now()
            shift.status = Shift.Status.ACTIVE
            shift.started_at = now
            shift.deadline = now + SHIFT_LENGTH
            shift.release = _release()
            shift.save(update_fields=["status", "started_at", "deadline", "release"])
        call_tool(shift, "store_status", {}, OPENING_CALL_ID)
        return shift


def start_shift(user, task_id: str, seed: int, practice: bool = False) -> Shift:
    """Assign a cell to ``user`` and start it at once."""
    return begin_shift(assign_shift(user, task_id, seed, practice))


def enforce_deadline(shift: Shift, now=None) -> bool:
    """End an open (active or paused) shift past its deadline, settled as played;
    True if it ended now."""
    now = now or timezone.now()
    if shift.is_open and shift.deadline is not None and now >= shift.deadline:
        end_shift(shift, DEADLINE_REASON, now=now)
        return True
    return False


def enforce_deadlines(now=None) -> list[int]:
    """End every open shift whose deadline has passed; the ids of those ended now.

    Needs no request and is idempotent: a shift already ended (by its participant, by
    another sweep, or by another process) is skipped.
    """
    now = now or timezone.now()
    ended = []
    due = Shift.objects.filter(status__in=[Shift.Status.ACTIVE, Shift.Status.PAUSED], deadline__lte=now)
    for shift in due.order_by("deadline", "pk"):
        with _lock(shift.pk):
            shift.refresh_from_db()
            try:
                if enforce_deadline(shift, now):
                    ended.append(shift.pk)
            except CalibrationError as exc:  # this shift stays open; the sweep goes on to the next
                logger.error("deadline sweep: shift %s not ended: %s", shift.pk, exc)
    return ended


# --- wall-clock accounting and pauses ----------------------------------------------------


@dataclass(frozen=True)
class TimeAccount:
    """A shift's wall-clock figures at one instant, in whole seconds."""

    wall: int
    active: int
    paused: int
    left: int  # until the deadline (0 once passed, or before the start)


def time_account(shift: Shift, now=None) -> TimeAccount:
    """Wall, active and paused seconds from the start to ``now`` (never past the
    deadline or the end), and the seconds left before the deadline."""
    if shift.started_at is None:
        return TimeAccount(0, 0, 0, 0)
    now = now or timezone.now()
    until = min(t for t in (now, shift.deadline, shift.ended_at) if t is not None)
    wall = max(0, int((until - shift.started_at).total_seconds()))
    paused = 0
    for pause in shift.pauses.all():
        end = min(pause.ended_at or until, until)
        paused += max(0, int((end - pause.started_at).total_seconds()))
    paused = min(paused, wall)
    left = 0 if shift.deadline is None or shift.status == Shift.Status.ENDED else \
        max(0, int((shift.deadline - now).total_seconds()))
    return TimeAccount(wall=wall, active=wall - paused, paused=paused, left=left)


def _store_account(shift: Shift, now) -> None:
    account = time_account(shift, now)
    shift.wall_seconds, shift.active_seconds, shift.paused_seconds = account.wall, account.active, account.paused


def pause_shift(shift: Shift, reason: str) -> Shift:
    """Pause an active shift for ``reason``: tool calls are refused until it resumes.
    The deadline keeps running (it is wall-clock, breaks included)."""
    reason = (reason or "").strip()
    if not reason:
        raise ValueError("A reason for the pause is required.")
    if len(reason) > PAUSE_REASON_MAX:
        raise ValueError(f"The reason is {len(reason)} characters long; at most {PAUSE_REASON_MAX} are allowed.")
    with _lock(shift.pk):
        shift.refresh_from_db()
        enforce_deadline(shift)
        shift.refresh_from_db()
        if shift.status == Shift.Status.PAUSED:
            raise ShiftNotActive("The shift is already paused.")
        if shift.status != Shift.Status.ACTIVE:
            raise ShiftNotActive(f"Only an active shift can be paused; this one is {shift.get_status_display().lower()}.")
        now = timezone.now()
        with transaction.atomic():
            ShiftPause.objects.create(shift=shift, reason=reason, started_at=now)
            shift.status = Shift.Status.PAUSED
            _store_account(shift, now)
            shift.save(update_fields=["status", "wall_seconds", "active_seconds", "paused_seconds"])
    announce(shift.pk)
    return shift


def resume_shift(shift: Shift) -> Shift:
    """End the shift's current pause."""
    with _lock(shift.pk):
        shift.refresh_from_db()
        enforce_deadline(shift)
        shift.refresh_from_db()
        if shift.status != Shift.Status.PAUSED:
            raise ShiftNotActive(f"The shift is not paused; it is {shift.get_status_display().lower()}.")
        now = timezone.now()
        with transaction.atomic():
            shift.pauses.filter(ended_at__isnull=True).update(ended_at=now)
            shift.status = Shift.Status.ACTIVE
            _store_account(shift, now)
            shift.save(update_fields=["status", "wall_seconds", "active_seconds", "paused_seconds"])
    announce(shift.pk)
    return shift


def call_tool(shift: Shift, tool: str, arguments: dict, call_id: str) -> ShiftCall:
    """Make one tool call through MCP and store it; idempotent per ``call_id``.

    A ``call_id`` already stored returns that call unchanged: nothing is sent, no
    operation is spent.  The call is saved (in a transaction) before it is returned.
    """
    return _call(shift, tool, arguments, call_id)[0]


def _call(shift: Shift, tool: str, arguments: dict, call_id: str) -> tuple[ShiftCall, bool, list[_Record] | None]:
    """:func:`call_tool`, also saying whether the call is new and, when it is, the shift's
    calls as this process knows them right after it (for the reply).

    One transaction checks, calls and stores: it reads the shift (locking its row on
    PostgreSQL; SQLite's write lock is taken at BEGIN), then in the same query the last
    seq, the number of calls that reached the core and the seq of ``call_id`` if it is
    already stored.  A count that differs from the cache's means another process stored a
    call: the cache is replayed afresh there and then, under the lock, so nothing can be
    stored meanwhile.  The MCP call is made inside the transaction, so no other process
    can store a call on this shift between the check and the store.  If anything fails
    after the episode took the call but before the commit, the cache is dropped: the next
    call replays what is stored.
    """
    if tool not in REGISTRY:
        raise ValueError(f"unknown tool {tool!r}")
    with _lock(shift.pk):
        live = _cache.get(shift.pk)
        if live is None or live.session.closed:
            live = _rebuild(shift)  # before the transaction: a restart's replay holds no lock
        writer = _sqlite_writer if connection.vendor == "sqlite" else nullcontext()
        sent = stored = due = False
        try:
            with writer, transaction.atomic():
                known = _read_locked(shift, call_id)
                if known["mine"] is not None:
                    return ShiftCall.objects.get(shift=shift, seq=known["mine"]), False, None
                if shift.is_open and shift.deadline is not None and timezone.now() >= shift.deadline:
                    due = True
                else:
                    if shift.status == Shift.Status.PAUSED:
                        raise ShiftPaused(PAUSED_MESSAGE)
                    if shift.status != Shift.Status.ACTIVE:
                        raise ShiftNotActive(f"The shift is {shift.get_status_display().lower()}:"
                                             " it takes no tool calls.")
                    if known["applied"] != live.applied:
                        live = _rebuild(shift)  # another process stored calls this cache has not seen
                    sent = True
                    call = _send_and_store(shift, live, tool, arguments, call_id, (known["last"] or 0) + 1)
            stored = sent
        except IntegrityError:
            # Stored concurrently by a writer that bypassed the lock: the stored call (if it
            # is ours) wins.
            existing = ShiftCall.objects.filter(shift=shift, call_id=call_id).first()
            if existing is None:
                raise
            return existing, False, None
        finally:
            if sent and not stored:
                _evict(shift.pk)
        if due:
            enforce_deadline(shift)
            raise ShiftNotActive(f"The shift is {shift.get_status_display().lower()}: it takes no tool calls.")
        records = list(live.records)
        if live.episode.over:
            end_shift(shift, f"store closed: {live.episode.end_reason}")
        else:
            announce(shift.pk)
        return call, True, records


@cache
def _locked_read_sql(vendor: str) -> tuple[str, str]:
    """The statement that locks the shift's row ("" where there is no row lock) and the
    one that then reads it with its calls' figures."""
    q = connection.ops.quote_name
    shifts, calls = q(Shift._meta.db_table), q(ShiftCall._meta.db_table)
    lock = f"SELECT 1 FROM {shifts} WHERE id = %s FOR UPDATE" if connection.features.has_select_for_update else ""
    read = (f"SELECT s.*,"
            f" (SELECT MAX(c.seq) FROM {calls} c WHERE c.shift_id = s.id) AS known_last,"
            f" (SELECT c.seq FROM {calls} c WHERE c.shift_id = s.id AND c.call_id = %s) AS known_mine,"
            f" (SELECT COUNT(*) FROM {calls} c WHERE c.shift_id = s.id AND c.reached_core) AS known_applied"
            f" FROM {shifts} s WHERE s.id = %s")
    return lock, read


def _read_locked(shift: Shift, call_id: str) -> dict:
    """Lock the shift's row (PostgreSQL) until the transaction ends, then bring ``shift`` up
    to date from it and read in the same query its calls' last seq, the seq of ``call_id``
    if it is stored, and how many calls reached the core.

    The lock is a statement of its own: under READ COMMITTED a statement that waited for
    a row lock re-reads the locked row, but its subqueries still see the snapshot from
    before the wait, which would miss the calls the lock holder just stored.  On SQLite
    the transaction began with the database's write lock, so one statement does.

    Raw SQL (through ``Shift.objects.raw``, which still converts the row's values) because
    this runs on every call: the ORM takes about ten times longer to build the query with
    its three correlated subqueries than SQLite takes to answer it."""
    lock, read = _locked_read_sql(connection.vendor)
    if lock:
        with connection.cursor() as cursor:
            cursor.execute(lock, [shift.pk])
    rows = list(Shift.objects.raw(read, [call_id, shift.pk]))
    if not rows:
        raise Shift.DoesNotExist(f"shift {shift.pk} no longer exists")
    row = rows[0]
    for field in Shift._meta.concrete_fields:
        setattr(shift, field.attname, getattr(row, field.attname))
    return {"last": row.known_last, "mine": row.known_mine, "applied": row.known_applied}


def _send_and_store(shift: Shift, live: _Live, tool: str, arguments: dict, call_id: str, seq: int) -> ShiftCall:
    """Send the call over the live session and store it; inside the call's transaction."""
    before = len(live.episode.action_log)
    outcome = live.session.call(tool, arguments)
    reached = len(live.episode.action_log) > before
    header = parse_header(outcome.text)
    call = ShiftCall.objects.create(
        shift=shift, seq=seq, call_id=call_id, tool=tool, arguments=arguments,
        result_text=outcome.text, is_error=outcome.is_error, reached_core=reached,
        header=header.line if header else "",
        window=live.window if live.window is not None else (header.window if header else None),
    )
    live.applied += reached
    live.records.append(_Record(seq, tool, arguments, call.is_error, reached, call.header,
                                call.result_text if _keeps_text(tool, call.is_error) else ""))
    if header is not None:
        live.window = header.window
    return call


@cache
def _calibration() -> tuple[dict, str] | None:
    path = Path(getattr(settings, "STOREBENCH_CALIBRATION", settings.BASE_DIR / "calibration" / "public.json"))
    return load_calibration(path) if path.exists() else None


def _grading_cell(task_id: str, seed: int) -> tuple[dict, str, str]:
    calibration = _calibration()
    if calibration is not None:
        doc, digest = calibration
        cell = cell_of(doc, task_id, seed)
        if cell is not None:
            return cell, "calibration file", digest
    cell, source = cell_constants(get_task(task_id), seed, None)
    return cell, source, ""


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def move_deadline(shift: Shift, minutes: int) -> Shift:
    """Move a shift's wall-clock deadline by ``minutes`` (a coordinator's decision)."""
    shift.deadline = shift.deadline + timedelta(minutes=minutes)
    Shift.objects.filter(pk=shift.pk).update(deadline=shift.deadline)
    return shift


def close_unstarted(shift_id: int, reason: str) -> bool:
    """End a shift that was never started, unplayed and ungraded; False if it had started."""
    return bool(Shift.objects.filter(pk=shift_id, status=Shift.Status.ASSIGNED).update(
        status=Shift.Status.ENDED, ended_at=timezone.now(), end_reason=reason))


def end_shift(shift: Shift, reason: str, now=None) -> Shift:
    """Stop the shift's episode (settlement), grade it, and store the score, the
    wall-clock accounting and the per-window timeline (from a fresh replay)."""
    with _lock(shift.pk):
        shift.refresh_from_db()
        if shift.status == Shift.Status.ENDED:
            return shift
        if not shift.is_open:
            raise ShiftNotActive("Only a started shift can be ended.")
        now = now or timezone.now()
        episode = _live(shift).episode
        cell, source, digest = _grading_cell(shift.task_id, shift.seed)
        result = grade(episode, cell)  # stops the episode if it is still open
        components = {k: _plain(v) for k, v in asdict(result).items()}
        components["threshold"] = str(cell["threshold"])
        timeline = series_of(replay_episode(shift))
        with transaction.atomic():
            _store_account(shift, now)
            pause_end = min(now, shift.deadline) if shift.deadline else now
            shift.pauses.filter(ended_at__isnull=True).update(ended_at=pause_end)
            shift.status = Shift.Status.ENDED
            shift.ended_at = now
            shift.timeline = timeline
            shift.end_reason = reason
            shift.score_composite = result.reward_composite
            shift.passed = result.reward_composite >= Decimal(str(cell["threshold"]))
            shift.score_components = components
            shift.calibration_source = source
            shift.calibration_hash = digest
            shift.save()
        _evict(shift.pk)
    announce(shift.pk)
    return shift


@dataclass(frozen=True)
class LiveState:
    """What open pages refresh live: the last store header and the wall clock."""

    header: Header | None
    clock: TimeAccount


def live_state(shift: Shift) -> LiveState:
    last = shift.calls.exclude(header="").order_by("-seq").values_list("header", flat=True).first()
    return LiveState(header=parse_header(last or ""), clock=time_account(shift))


# --- what the workspace shows ----------------------------------------------------------


@dataclass(frozen=True)
class Inbox:
    read_at: str  # simulated time the list was read
    window: int
    status_filter: str
    rows: list  # sorted by escalation deadline, soonest first
    total: int
    refunded: dict  # return id -> seq of a successful refund_return made after the read


def _inbox(calls: list[ShiftCall]) -> Inbox | None:
    """The returns inbox: the last successful ``list_returns``, with the refunds made since."""
    for index in range(len(calls) - 1, -1, -1):
        call = calls[index]
        if call.tool != "list_returns" or call.is_error:
            continue
        parsed = parse_result(call.result_text)
        if parsed.header is None or not isinstance(parsed.data, dict):
            continue
        rows = sorted(parsed.data.get("rows", []),
                      key=lambda r: (r.get("escalates_at") or "9999", str(r.get("return_id"))))
        refunded = {str(c.arguments.get("return_id")): c.seq for c in calls[index + 1:]
                    if c.tool == "refund_return" and not c.is_error}
        return Inbox(read_at=parsed.header.time, window=parsed.header.window,
                     status_filter=str(call.arguments.get("status", "open")), rows=rows,
                     total=int(parsed.data.get("total", 0)), refunded=refunded)
    return None


@dataclass(frozen=True)
class Overview:
    shift: Shift
    calls: list[ShiftCall]
    header: Header | None
    shown: ShiftCall | None
    inbox: Inbox | None
    cached: list[CachedView]
    clock: TimeAccount
    pause: ShiftPause | None  # the pause in progress


def _last_header(calls: list[ShiftCall]) -> Header | None:
    return next((parse_header(c.header) for c in reversed(calls) if c.header), None)


def _stored_calls(shift: Shift) -> list[ShiftCall]:
    """The shift's calls in order, without their result text (read on access, for the
    one or two calls a page shows), so a long shift's page stays cheap."""
    return list(shift.calls.order_by("seq").defer("result_text"))


def shift_overview(shift: Shift, show_seq: int | None = None) -> Overview:
    """The workspace's content: enforces the deadline first; reads only stored calls."""
    enforce_deadline(shift)
    shift.refresh_from_db()
    calls = _stored_calls(shift)
    shown = None
    if show_seq is not None:
        shown = next((c for c in calls if c.seq == show_seq), None)
    elif calls:
        shown = calls[-1]
    pause = shift.pauses.filter(ended_at__isnull=True).first() if shift.status == Shift.Status.PAUSED else None
    return Overview(shift=shift, calls=calls, header=_last_header(calls), shown=shown, inbox=_inbox(calls),
                    cached=cached_views(calls), clock=time_account(shift), pause=pause)


@dataclass(frozen=True)
class CallDone:
    """What the workspace updates after one call: not the whole history (it only grows)."""

    shift: Shift
    call: ShiftCall
    fresh: bool  # False when the call_id was already stored (a double submit)
    header: Header | None
    inbox: Inbox | None
    cached: list[CachedView]


def perform_call(shift: Shift, tool: str, arguments: dict, call_id: str) -> CallDone:
    """:func:`call_tool`, then the parts of the workspace that change with it.

    For a new call they are computed from the calls the live cache holds (they are the
    stored ones: the call's transaction checked the count); a repeated call id reads the
    stored calls instead.  ``shift`` is brought up to date either way."""
    call, fresh, records = _call(shift, tool, arguments, call_id)
    calls = records if records is not None else _stored_calls(shift)
    return CallDone(shift=shift, call=call, fresh=fresh, header=_last_header(calls),
                    inbox=_inbox(calls), cached=cached_views(calls))


def start_assigned(shift: Shift) -> Overview:
    """Start an assigned shift (no-op if already started) and return its workspace;
    raises :class:`StartRefused` with the reason when it may not start yet."""
    return shift_overview(begin_shift(shift))


def end_by_participant(shift: Shift) -> Overview:
    enforce_deadline(shift)
    shift.refresh_from_db()
    if shift.is_open:
        end_shift(shift, "ended by the participant")
    return shift_overview(shift)


def participant_shifts(user) -> list[Shift]:
    """The user's shifts, each checked against its deadline first."""
    shifts = list(Shift.objects.filter(participant=user))
    for shift in shifts:
        enforce_deadline(shift)
    return list(Shift.objects.filter(participant=user))


@dataclass(frozen=True)
class Home:
    """A participant's home page: their shifts and how far through the gates they are."""

    shifts: list[Shift]
    acknowledgement: Any  # BriefingAcknowledgement of the current briefing, or None
    practice_done: bool
    locks: dict[int, str]  # assigned shift id -> why it may not start yet


def participant_home(user) -> Home:
    from .briefing import acknowledgement, practice_completed

    shifts = participant_shifts(user)
    locks = {}
    for shift in shifts:
        if shift.status == Shift.Status.ASSIGNED:
            refusal = start_refusal(user, shift)
            if refusal is not None:
                locks[shift.pk] = refusal
    return Home(shifts=shifts, acknowledgement=acknowledgement(user), practice_done=practice_completed(user),
                locks=locks)


def shift_timeline(shift: Shift) -> list[dict]:
    """The ended shift's per-window series, computed by replay once and cached."""
    if shift.status != Shift.Status.ENDED:
        return []
    if not shift.timeline:
        shift.timeline = series_of(replay_episode(shift))
        shift.save(update_fields=["timeline"])
    return shift.timeline


@dataclass(frozen=True)
class History:
    calls: list[ShiftCall]
    text: str
    tool: str
    total: int  # calls in the shift


HISTORY_QUERY_MAX = 200


def search_history(shift: Shift, text: str = "", tool: str = "") -> History:
    """The shift's calls, newest first, whose tool, arguments or result contain
    ``text`` (case-insensitive), optionally of one ``tool``; free (nothing is sent)."""
    text, tool = (text or "").strip(), (tool or "").strip()
    if len(text) > HISTORY_QUERY_MAX:
        raise ValueError(f"The search text is {len(text)} characters long; at most {HISTORY_QUERY_MAX} are allowed.")
    if tool and tool not in REGISTRY:
        raise ValueError(f"There is no tool {tool!r}: pick one of the 29 tools or leave the tool blank.")
    calls = list(shift.calls.order_by("-seq"))
    total = len(calls)
    if tool:
        calls = [c for c in calls if c.tool == tool]
    if text:
        needle = text.lower()
        calls = [c for c in calls if needle in c.tool.lower()
                 or needle in json.dumps(c.arguments, ensure_ascii=False).lower()
                 or needle in c.result_text.lower()]
    return History(calls=calls, text=text, tool=tool, total=total)

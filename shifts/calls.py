"""The call transaction: one tool call through MCP, checked and stored atomically.

Every tool call goes through an MCP client session connected in memory to an MCP server
built over the shift's live episode (:mod:`shifts.cache`), so a participant sees byte
for byte what an agent sees.  The typed store header stored with a call is read from
the episode after the call (:func:`environment.tools.format.store_header`), never
parsed out of the result text, which may echo what the caller typed.

Each call is one transaction: it locks the shift's row (PostgreSQL; SQLite takes its
write lock at BEGIN), then reads the shift with, in the same query, the last seq and the
seq of a repeated call id.  A last seq that differs from the cache's last call (another
process stored a call) brings the cache up to date (:func:`shifts.cache.catch_up`, which
checks it against the number of calls that reached the core), under the lock, before the
call is made, so two processes never act on stale state.
The reply leaves only after the commit; a failure after the episode took the call but
before the commit drops the cache, so the next call replays what is stored.

On PostgreSQL, when the call's transaction is not inside another one, the call's row is
stored and the transaction committed in one round trip (``INSERT ...; COMMIT``): the
insert is the transaction's last statement (the shift's event is registered before it),
only the cache's own bookkeeping follows it, and Django's commit at the block's end then
finds the transaction over and sends nothing (psycopg's ``commit()`` on an idle
connection).  Inside an enclosing transaction (a test's, ``ATOMIC_REQUESTS``, autocommit
turned off) the block is a savepoint and the commit is left to whoever opened it.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache as memo
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models import signals
from django.utils import timezone

from environment.tools import REGISTRY
from environment.tools.format import store_header

from . import cache
from .ending import STORE_CLOSED, end_if_due, end_shift, is_due
from .errors import ShiftNotActive, ShiftPaused
from .events import announce_call
from .models import Shift, ShiftCall

PAUSED_MESSAGE = "The shift is paused: resume it before calling a tool."


def _not_active(shift: Shift) -> ShiftNotActive:
    return ShiftNotActive(f"The shift is {shift.get_status_display().lower()}: it takes no tool calls.")


@dataclass(frozen=True)
class Called:
    """The outcome of :func:`make_call`."""

    call: ShiftCall
    fresh: bool  # False when the call id was already stored (a double submit): nothing was sent
    records: list[cache.Record] | None  # the shift's calls as this process knows them, when fresh


def call_tool(shift: Shift, tool: str, arguments: dict, call_id: str) -> ShiftCall:
    """Make one tool call through MCP and store it; idempotent per ``call_id``.

    A ``call_id`` already stored returns that call unchanged: nothing is sent, no
    operation is spent.  The call is saved (in a transaction) before it is returned.
    """
    return make_call(shift, tool, arguments, call_id).call


def make_call(shift: Shift, tool: str, arguments: dict, call_id: str, owner: int | None = None) -> Called:
    """:func:`call_tool`, also saying whether the call is new and, when it is, the shift's
    calls as this process knows them right after it (for the reply).  ``shift`` is
    brought up to date from the database (only its ``pk`` needs to be set).

    With ``owner``, the shift must be that user's (checked in the call's own read, so a
    page needs no query of its own first): anyone else's raises ``Shift.DoesNotExist``."""
    if tool not in REGISTRY:
        raise ValueError(f"unknown tool {tool!r}")
    with cache.lock(shift.pk):
        live = cache.cached(shift.pk)
        if live is None:
            mine = None if owner is None else Shift.objects.filter(participant_id=owner)
            try:
                shift.refresh_from_db(from_queryset=mine)  # and the owner's check, in one read
            except Shift.DoesNotExist:
                raise Shift.DoesNotExist(f"shift {shift.pk} does not exist or is not yours") from None
            if shift.status == Shift.Status.ACTIVE:  # a call to any other shift is refused: no replay
                live = cache.rebuild(shift)  # before the transaction: a restart's replay holds no lock
        db = connections[DEFAULT_DB_ALIAS]  # ``connection``, looked up once (each use of the proxy is a lookup)
        writer = cache.sqlite_writer if db.vendor == "sqlite" else nullcontext()
        sent = stored = due = False
        # The call's block opens the transaction only outside any other (in one, or with
        # autocommit off, it is a savepoint of the caller's transaction, which is not its to commit).
        outermost = db.get_autocommit() and not db.in_atomic_block
        try:
            with writer, transaction.atomic():
                known = _read_locked(shift, call_id, owner)
                if known["mine"] is not None:
                    return Called(ShiftCall.objects.get(shift=shift, seq=known["mine"]), False, None)
                if is_due(shift, timezone.now()):
                    due = True
                else:
                    if shift.status == Shift.Status.PAUSED:
                        raise ShiftPaused(PAUSED_MESSAGE)
                    if shift.status != Shift.Status.ACTIVE:
                        raise _not_active(shift)
                    if live is None:  # resumed by another process since the read above
                        live = cache.rebuild(shift)
                    last = known["last"] or 0
                    if last != live.last_seq:  # another process stored calls
                        live = cache.catch_up(shift, live, last, shift.calls.filter(reached_core=True).count())
                    sent = True
                    call = _send_and_store(shift, live, tool, arguments, call_id, last + 1, commit=outermost)
            stored = sent
        except IntegrityError:
            # Stored concurrently by a writer that bypassed the lock: the stored call (if it
            # is ours) wins.
            existing = ShiftCall.objects.filter(shift=shift, call_id=call_id).first()
            if existing is None:
                raise
            return Called(existing, False, None)
        finally:
            if sent and not stored:
                cache.evict(shift.pk)
        if due:
            end_if_due(shift)
            raise _not_active(shift)
        assert live is not None  # the call was sent: every other path has returned or raised
        records = list(live.records)
        call.is_latest = True  # nothing was stored after it when its transaction committed
        if live.episode.over:
            end_shift(shift, f"{STORE_CLOSED}{live.episode.end_reason}")
        return Called(call, True, records)


@memo
def _locked_read_sql(vendor: str) -> tuple[str, str]:
    """The statement that locks the shift's row ("" where there is no row lock) and the
    one that then reads it with its calls' figures."""
    q = connection.ops.quote_name
    shifts, calls = q(Shift._meta.db_table), q(ShiftCall._meta.db_table)
    lock = f"SELECT 1 FROM {shifts} WHERE id = %s FOR UPDATE" if connection.features.has_select_for_update else ""
    columns = ", ".join(f"s.{q(str(field.column))}" for field in Shift._meta.concrete_fields)
    read = (f"SELECT {columns},"
            f" (SELECT MAX(c.seq) FROM {calls} c WHERE c.shift_id = s.id) AS known_last,"
            f" (SELECT c.seq FROM {calls} c WHERE c.shift_id = s.id AND c.call_id = %s) AS known_mine"
            f" FROM {shifts} s WHERE s.id = %s")
    return lock, read


@memo
def _row_plan(vendor: str) -> tuple[tuple[tuple[str, Any, tuple], ...], int]:
    """How the read's row (the shift's columns in field order, then the two ``known_*``)
    becomes the shift: each field's attribute, column expression and the converters the
    ORM applies to it (a JSON field's text, SQLite's dates and decimals); and the owner's place."""
    fields = []
    for field in Shift._meta.concrete_fields:
        col = field.get_col(Shift._meta.db_table)
        fields.append((field.attname, col,
                       tuple(connection.ops.get_db_converters(col) + field.get_db_converters(connection))))
    return tuple(fields), Shift._meta.concrete_fields.index(Shift._meta.get_field("participant"))


def _read_locked(shift: Shift, call_id: str, owner: int | None = None) -> dict:
    """Lock the shift's row (PostgreSQL) until the transaction ends, then bring ``shift`` up
    to date from it and read in the same query its calls' last seq and the seq of
    ``call_id`` if it is stored (each one index lookup, however long the shift; counting
    the calls that reached the core here read all of them on every call).

    The lock is a statement of its own: under READ COMMITTED a statement that waited for
    a row lock re-reads the locked row, but its subqueries still see the snapshot from
    before the wait, which would miss the calls the lock holder just stored.  The two
    statements are sent together, in one round trip (the read, a statement of its own,
    takes its snapshot after the lock is held).  Raw SQL, converted as the ORM converts
    each column, because this runs on every call and the ORM is slow to build
    correlated subqueries (and a model instance for a row that is copied onto ``shift``)."""
    db = connections[DEFAULT_DB_ALIAS]
    lock, read = _locked_read_sql(db.vendor)
    with db.cursor() as cursor:
        if lock:
            cursor.execute(f"{lock}; {read}", [shift.pk, call_id, shift.pk])
            cursor.nextset()
        else:
            cursor.execute(read, [call_id, shift.pk])
        row = cursor.fetchone()
    fields, owner_place = _row_plan(db.vendor)
    if row is None or (owner is not None and row[owner_place] != owner):
        raise Shift.DoesNotExist(f"shift {shift.pk} does not exist or is not yours")
    for value, (attname, col, converters) in zip(row, fields, strict=False):
        for converter in converters:
            value = converter(value, col, db)
        setattr(shift, attname, value)
    last, mine = row[len(fields):]
    return {"last": last, "mine": mine}


@memo
def _insert_sql(vendor: str, commit: bool) -> tuple[str, tuple]:
    meta = ShiftCall._meta
    fields = tuple(f for f in meta.concrete_fields if not f.primary_key)
    q = connection.ops.quote_name
    columns = ", ".join(q(str(f.column)) for f in fields)
    sql = (f"INSERT INTO {q(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(fields))})"
           f" RETURNING {q(str(meta.pk.column))}{'; COMMIT' if commit else ''}")
    return sql, fields


def _insert(call: ShiftCall, commit: bool = False) -> None:
    """``call.save()`` of a new call: the same row (each value prepared by its field, the
    creation time set by ``auto_now_add``), one statement built once per process instead
    of the ORM's insert compiled on every call.  The ORM's own save where it would do more
    (a receiver of the model's save signals, a database that cannot return the new id).

    With ``commit`` (the caller's outermost transaction, nothing after this insert to
    write), PostgreSQL also commits in the same round trip (see the module)."""
    db = connections[DEFAULT_DB_ALIAS]
    if (not db.features.can_return_columns_from_insert
            or signals.pre_save.has_listeners(ShiftCall) or signals.post_save.has_listeners(ShiftCall)):
        call.save(force_insert=True)
        return
    sql, fields = _insert_sql(db.vendor, commit and db.vendor == "postgresql")
    values = [field.get_db_prep_save(field.pre_save(call, True), db) for field in fields]
    with db.cursor() as cursor:
        cursor.execute(sql, values)
        call.pk = cursor.fetchone()[0]
    call._state.adding = False
    call._state.db = db.alias


def _send_and_store(shift: Shift, live: cache.Live, tool: str, arguments: dict, call_id: str,
                    seq: int, commit: bool = False) -> ShiftCall:
    """Send the call over the live session and store it; inside the call's transaction,
    which the store commits with ``commit`` (see :func:`_insert`)."""
    before = len(live.episode.action_log)
    outcome = live.session.call(tool, arguments)
    reached = len(live.episode.action_log) > before
    header = store_header(live.episode) if reached else None
    call = ShiftCall(
        shift=shift, seq=seq, call_id=call_id, tool=tool, arguments=arguments,
        result_text=outcome.text, is_error=outcome.is_error, reached_core=reached,
        header=header.line if header else "", store_header=header.as_dict() if header else None,
        window=live.window if live.window is not None else (header.window if header else None),
    )
    if not live.episode.over:
        announce_call(shift.pk, seq, call.store_header)  # before the insert, which may end the transaction
    _insert(call, commit)  # the last statement of the call's transaction (see the module)
    live.applied += reached
    live.records.append(cache.Record(seq, tool, arguments, call.is_error, reached, header,
                                     call.result_text if cache.keeps_text(tool, call.is_error) else "",
                                     call.window))
    if header is not None:
        live.window = header.window
    return call

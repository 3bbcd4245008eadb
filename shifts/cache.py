"""The live episodes: a per-process cache of each shift's episode, rebuilt by replay.

A shift's stored calls are the source of truth.  The live episode is a process-local
cache, rebuilt on demand by replaying the calls that reached the core
(``play_actions(ep, actions, stop=False)``, which is deterministic).

A cache entry holds the episode, one MCP client session over it kept open for as long
as the entry lives (:class:`mcp_client.client.SyncEpisodeClient`; closed when the entry
is evicted or replaced), and a light record of every stored call, from which a call's
reply (header, inbox, cached views) is built without reading the calls back.

When another process stored calls on the shift, :func:`catch_up` applies just those
to the cached episode (replay is deterministic, so this equals a full replay).

A per-shift re-entrant lock serialises the actions on one shift within a process; the
database row lock (see :mod:`shifts.calls`) serialises them across processes.  A forked
child starts with an empty cache and fresh locks (the parent's threads are gone).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from django.db.models import Case, F, TextField, Value, When

from environment.engine import Episode
from environment.tools.format import StoreHeader
from environment.trial import play_actions
from mcp_client.client import SyncEpisodeClient
from mcp_client.server import build_server

from .installed import armed
from .models import Shift


@dataclass(frozen=True)
class Record:
    """What the workspace needs of one stored call, kept beside the live episode.
    ``result_text`` is kept for the successful calls of :data:`KEPT_TEXT` only (the inbox)."""

    seq: int
    tool: str
    arguments: dict
    is_error: bool
    reached_core: bool
    typed_header: StoreHeader | None  # named as ShiftCall's property, so both read alike
    result_text: str
    window: int | None  # the window the call was made in, as ShiftCall.window


# The tools whose result text a record keeps: the returns inbox reads the last list of
# returns and whether each refund since closed its return.
KEPT_TEXT = ("list_returns", "refund_return")


def keeps_text(tool: str, is_error: bool) -> bool:
    return tool in KEPT_TEXT and not is_error


@dataclass
class Live:
    episode: Episode
    session: SyncEpisodeClient  # one MCP client session for the shift's life in this process
    applied: int  # calls replayed or made through this cache that reached the core
    records: list[Record]  # every stored call this cache knows, in order
    window: int | None  # window of the last stored header: the window the next call is made in

    @property
    def last_seq(self) -> int:
        """The seq of the last stored call this cache knows (0 before any)."""
        return self.records[-1].seq if self.records else 0


_cache: dict[int, Live] = {}
_locks: dict[int, threading.RLock] = {}
_guard = threading.Lock()
# SQLite has one writer at a time: this process's writers of calls queue here, and the next
# one goes as soon as the last commits, instead of polling in SQLite's busy handler.
sqlite_writer = threading.Lock()


def lock(shift_id: int) -> threading.RLock:
    """The shift's lock in this process (re-entrant)."""
    with _guard:
        found = _locks.get(shift_id)
        if found is None:
            found = _locks[shift_id] = threading.RLock()
        return found


def _forget_after_fork() -> None:
    global _guard, sqlite_writer
    _cache.clear()
    _locks.clear()
    _guard, sqlite_writer = threading.Lock(), threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def cached(shift_id: int) -> Live | None:
    """The shift's live entry if this process has an open one."""
    live = _cache.get(shift_id)
    return None if live is None or live.session.closed else live


def clear_cache() -> None:
    """Forget every live episode (what a server restart does), closing their sessions."""
    with _guard:
        ids = list(_cache)
    for shift_id in ids:
        evict(shift_id)


def evict(shift_id: int) -> None:
    with lock(shift_id):
        with _guard:
            live = _cache.pop(shift_id, None)
        if live is not None:
            live.session.close()


def replayable(shift: Shift) -> list[dict]:
    return [{"tool": tool, "arguments": arguments}
            for tool, arguments in shift.calls.filter(reached_core=True).order_by("seq")
            .values_list("tool", "arguments")]


def replay_episode(shift: Shift) -> Episode:
    """A fresh episode with the shift's stored calls replayed (the store as the participant left it)."""
    return play_actions(armed(shift.task_id, shift.seed), replayable(shift), stop=False)


def _records(rows) -> list[Record]:
    return [Record(seq, tool, arguments, is_error, reached, StoreHeader.from_dict(head) if head else None, text,
                   window) for seq, tool, arguments, is_error, reached, head, text, window in rows]


def _rows(shift: Shift, after: int = 0):
    inbox_text = Case(When(tool__in=KEPT_TEXT, is_error=False, then=F("result_text")),
                      default=Value(""), output_field=TextField())
    return (shift.calls.filter(seq__gt=after).order_by("seq").annotate(inbox_text=inbox_text)
            .values_list("seq", "tool", "arguments", "is_error", "reached_core", "store_header", "inbox_text",
                         "window"))


def catch_up(shift: Shift, live: Live, last: int, applied: int) -> Live:
    """Bring ``live`` up to the calls stored, the last numbered ``last``, ``applied`` of them
    reaching the core (another process stored the rest): the calls after the last one this
    cache knows are applied to its episode, in order, exactly as a replay would apply them;
    anything else (the cache knows a call that is not stored, or the counts disagree)
    rebuilds.  Call under the shift's lock, inside the call's transaction."""
    if last < live.last_seq:
        return rebuild(shift)
    new = _records(_rows(shift, live.last_seq))
    reached = [{"tool": r.tool, "arguments": r.arguments} for r in new if r.reached_core]
    if live.applied + len(reached) != applied:
        return rebuild(shift)
    play_actions(live.episode, reached, stop=False)
    live.applied += len(reached)
    live.records.extend(new)
    window = next((r.typed_header.window for r in reversed(new) if r.typed_header is not None), None)
    if window is not None:
        live.window = window
    return live


def rebuild(shift: Shift) -> Live:
    """Replay the shift's stored calls into a new live episode with its own session, and
    cache it (replacing, and closing, any previous one); call under the shift's lock."""
    records = _records(_rows(shift))
    replayed = [{"tool": r.tool, "arguments": r.arguments} for r in records if r.reached_core]
    episode = play_actions(armed(shift.task_id, shift.seed), replayed, stop=False)
    window = next((r.typed_header.window for r in reversed(records) if r.typed_header is not None), None)
    evict(shift.pk)
    # The session's loop serves this one episode: calls run on it, with no hop to a worker
    # thread, and nobody traces it (no OpenTelemetry span per call).
    live = Live(episode, SyncEpisodeClient(build_server(lambda: episode, inline_calls=True, traced=False)),
                len(replayed), records, window)
    with _guard:
        _cache[shift.pk] = live
    return live


def live_entry(shift: Shift) -> Live:
    """The shift's live episode, checked against the stored calls; call under the shift's lock."""
    live = cached(shift.pk)
    if live is None or live.applied != shift.calls.filter(reached_core=True).count():
        live = rebuild(shift)
    return live

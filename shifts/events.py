"""Events other processes see: "this shift changed", sent once the change is committed.

Every page showing a shift joins the channel group :func:`group_name` (the console's
websocket consumer); :func:`announce` tells the group after a tool call, pause, resume
or end.  It is deferred with ``transaction.on_commit``, so a page never re-reads a
shift before the change it is told about is visible; outside a transaction it is sent
at once.

In the server (``config.asgi``), a request runs on a worker thread of the ASGI
server's event loop with an :data:`outbox`: its events are put there, and the loop,
where the channel layer lives, sends them (each shift once) after the response
(:func:`deliver`).  On another thread marked as working for a running loop (asgiref's
``sync_to_async``) an event is handed to that loop at once.  Either way the request
does not wait for a round trip through the loop (``async_to_sync`` blocked the thread
on one: a good part of a millisecond of CPU on every tool call), and a failure to send
is logged: the change is committed by then, and a page without the event still
catches up (htmx polling, the next push).  Anywhere else (a management command, a
Celery task, the test client) the event is sent as before, with ``async_to_sync``.

A tool call's event carries what the call changed: its seq and the store header stored
with it (``{"type": CHANGED, "seq": 12, "header": {...}}``, the header None for a call
that did not reach the store).  A page can then push the new state without reading the
shift back (the console's consumer): every other change (pause, resume, end) is sent
bare, and a page re-reads the shift.  Several events of one request for one shift are
sent as one: bare if any was bare, else the newest call's with the newest header.
"""
from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from concurrent.futures import Future
from contextvars import ContextVar
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

CHANGED = "shift.changed"

logger = logging.getLogger(__name__)

Event = dict[str, Any]  # a channel layer message: {"type": CHANGED} or a call's, with "seq" and "header"

# The events the current request raised, by shift, for its server to send (config.asgi).
outbox: ContextVar[list[tuple[int, Event]] | None] = ContextVar("shift_events_outbox", default=None)


def group_name(shift_id: int) -> str:
    return f"shift-{shift_id}"


def _server_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop this thread works for (recorded by ``sync_to_async``), if any."""
    local = SyncToAsync.threadlocal
    if getattr(local, "main_event_loop_pid", None) != os.getpid():
        return None
    loop = getattr(local, "main_event_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) and loop.is_running() else None


def _log_failure(sent: Future | asyncio.Future) -> None:
    if not sent.cancelled() and sent.exception() is not None:
        logger.error("a shift event was not sent", exc_info=sent.exception())


def merged(events: Iterable[tuple[int, Event]]) -> list[tuple[int, Event]]:
    """One event per shift, in the order the shifts first appear: a bare one if any of the
    shift's was bare (the page re-reads everything), else its newest call's, with the
    newest header of them (a newest call that did not reach the store left it as it was)."""
    by_shift: dict[int, Event] = {}
    header_seq: dict[int, int] = {}  # the seq of the call whose header a shift's kept event carries
    for shift_id, event in events:
        kept = by_shift.get(shift_id)
        if kept is not None and "seq" not in kept:
            continue  # bare: the page re-reads everything
        if "seq" not in event:
            by_shift[shift_id] = event
            continue
        header, seq = kept["header"] if kept else None, header_seq.get(shift_id, -1)
        if event["header"] is not None and event["seq"] > seq:
            header, seq = event["header"], event["seq"]
        newest = event if kept is None or event["seq"] > kept["seq"] else kept
        by_shift[shift_id], header_seq[shift_id] = {**newest, "header": header}, seq
    return list(by_shift.items())


async def _send_all(layer, events: list[tuple[int, Event]]) -> None:
    for shift_id, event in events:
        await layer.group_send(group_name(shift_id), event)


def deliver(events: Iterable[tuple[int, Event]], loop: asyncio.AbstractEventLoop) -> None:
    """Send ``events`` (each shift once, as :func:`merged`, in order) from ``loop``, the
    running loop of the calling task, without waiting for them (a failure is logged)."""
    layer = get_channel_layer()
    if layer is not None:
        loop.create_task(_send_all(layer, merged(events))).add_done_callback(_log_failure)


def _send(shift_id: int, message: Event) -> None:
    box = outbox.get()
    if box is not None:
        box.append((shift_id, message))
        return
    layer = get_channel_layer()
    if layer is None:
        return
    loop = _server_loop()
    if loop is None:
        async_to_sync(layer.group_send)(group_name(shift_id), message)
        return
    asyncio.run_coroutine_threadsafe(layer.group_send(group_name(shift_id), message), loop).add_done_callback(
        _log_failure)


def announce(shift_id: int) -> None:
    """Tell the shift's open pages that it changed, after the current transaction commits."""
    message = {"type": CHANGED}
    transaction.on_commit(lambda: _send(shift_id, message))


def announce_call(shift_id: int, seq: int, header: dict[str, Any] | None) -> None:
    """Tell the shift's open pages, after the current transaction commits, that call ``seq``
    was stored, with the store header stored with it (None: it did not reach the store)."""
    message = {"type": CHANGED, "seq": seq, "header": header}
    transaction.on_commit(lambda: _send(shift_id, message))

"""Events other processes see: "this shift changed", sent once the change is committed.

Every page showing a shift joins the channel group :func:`group_name` (the console's
websocket consumer); :func:`announce` tells the group after a tool call, pause, resume
or end.  It is deferred with ``transaction.on_commit``, so a page never re-reads a
shift before the change it is told about is visible; outside a transaction it is sent
at once.

In the server, a request runs on a worker thread of the ASGI server's event loop
(asgiref's ``sync_to_async``, which records that loop for the thread): the event is
handed to that loop, where the channel layer lives, and the request goes on without
waiting for it (``async_to_sync`` would block the thread on a round trip through the
loop, a good part of a millisecond of CPU on every tool call).  A failure to send is
logged: the change is committed by then, and a page without the event still catches
up (htmx polling, the next push).  Anywhere else (a management command, a Celery
task, the test client) the event is sent as before, with ``async_to_sync``.
"""
from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import Future

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

CHANGED = "shift.changed"

logger = logging.getLogger(__name__)


def group_name(shift_id: int) -> str:
    return f"shift-{shift_id}"


def _server_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop this thread works for (recorded by ``sync_to_async``), if any."""
    local = SyncToAsync.threadlocal
    if getattr(local, "main_event_loop_pid", None) != os.getpid():
        return None
    loop = getattr(local, "main_event_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) and loop.is_running() else None


def _log_failure(sent: Future) -> None:
    if not sent.cancelled() and sent.exception() is not None:
        logger.error("a shift event was not sent", exc_info=sent.exception())


def _send(shift_id: int) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": CHANGED}
    loop = _server_loop()
    if loop is None:
        async_to_sync(layer.group_send)(group_name(shift_id), message)
        return
    asyncio.run_coroutine_threadsafe(layer.group_send(group_name(shift_id), message), loop).add_done_callback(
        _log_failure)


def announce(shift_id: int) -> None:
    """Tell the shift's open pages that it changed, after the current transaction commits."""
    transaction.on_commit(lambda: _send(shift_id))

"""Events other processes see: "this shift changed", sent once the change is committed.

Every page showing a shift joins the channel group :func:`group_name` (the console's
websocket consumer); :func:`announce` tells the group after a tool call, pause, resume
or end.  It is deferred with ``transaction.on_commit``, so a page never re-reads a
shift before the change it is told about is visible; outside a transaction it is sent
at once.
"""
from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

CHANGED = "shift.changed"


def group_name(shift_id: int) -> str:
    return f"shift-{shift_id}"


def _send(shift_id: int) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group_name(shift_id), {"type": CHANGED})


def announce(shift_id: int) -> None:
    """Tell the shift's open pages that it changed, after the current transaction commits."""
    transaction.on_commit(lambda: _send(shift_id))

"""Live pushes: tell a shift's open pages that the shift changed.

Every page showing a shift joins the channel group :func:`group_name` through its
websocket (:mod:`console.consumers`); the services call :func:`announce` after each
tool call, pause, resume and end, and each consumer re-reads the shift and pushes
the new header and countdown. With the in-memory channel layer this reaches pages
served by the same process; with Redis, every process.
"""
from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

CHANGED = "shift.changed"


def group_name(shift_id: int) -> str:
    return f"shift-{shift_id}"


def announce(shift_id: int) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group_name(shift_id), {"type": CHANGED})

"""The shift websocket: pushes the store header, the deadline countdown and the last call.

A page showing a shift opens ``/ws/shifts/<pk>/``. Only the shift's participant is
accepted (anyone else is refused before the handshake completes), and only while their
sign-in lasts: a push finds the session gone (signed out, or ended by a revoked
invitation) and closes the socket instead. The consumer
sends the shift's state on connect, whenever the shift actions announce a change
(:mod:`shifts.events`), and every :attr:`ShiftConsumer.tick_seconds` so the
countdown stays true; each push checks the deadline first, so an open page is
told at once when its shift ended. Each push carries ``last_seq``, the shift's newest
call: a page that has not seen that call (another tab made it) fetches its side panels
(history, inbox, cached views) from ``/shifts/<pk>/panels/?after=<seq>``. Pages work
without it: htmx swaps the header after each call and polls the shift bar (see
``templates/console/shift.html``).
"""
from __future__ import annotations

import asyncio
import contextlib

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.template.loader import render_to_string
from django.urls import reverse

from shifts.ending import is_due
from shifts.events import group_name
from shifts.models import Shift

from .workspace import live_state

REFUSED = 4403


def shift_state(shift_id: int) -> dict:
    """What a page shows live: status, seconds to the deadline, and the header markup.  Read
    only: a shift past its deadline is sent as ``due`` (its page then loads again, and ends it)."""
    shift = Shift.objects.get(pk=shift_id)
    state = live_state(shift)
    return {
        "type": "state",
        "status": shift.status,
        "due": is_due(shift),
        "seconds_left": state.clock.left,
        "active_seconds": state.clock.active,
        "paused_seconds": state.clock.paused,
        "header_html": render_to_string("console/_header.html", {"header": state.header}),
        "url": reverse("console:shift", args=[shift.pk]),
        "last_seq": shift.calls.order_by("-seq").values_list("seq", flat=True).first() or 0,
    }


def _owns(user, shift_id: int) -> bool:
    return Shift.objects.filter(pk=shift_id, participant=user).exists()


def _session_lives(session) -> bool:
    """Whether the sign-in the socket was opened with still exists: a sign-out, or a revoked
    invitation ending the sessions it signed in, must also stop the pushes to open pages."""
    key = getattr(session, "session_key", None)
    return bool(key) and session.exists(key)


class ShiftConsumer(AsyncJsonWebsocketConsumer):
    tick_seconds = 15

    async def connect(self) -> None:
        self.shift_id = int(self.scope["url_route"]["kwargs"]["pk"])
        self.ticker = None
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await database_sync_to_async(_owns)(user, self.shift_id):
            await self.close(code=REFUSED)
            return
        await self.channel_layer.group_add(group_name(self.shift_id), self.channel_name)
        await self.accept()
        await self.push_state()
        self.ticker = asyncio.ensure_future(self._tick())

    async def disconnect(self, code) -> None:
        if self.ticker is not None:
            self.ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.ticker  # the tick ends quietly when the page went away first (see _tick)
        await self.channel_layer.group_discard(group_name(self.shift_id), self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        if content == {"type": "refresh"}:
            await self.push_state()

    async def shift_changed(self, event) -> None:
        await self.push_state()

    async def push_state(self) -> bool:
        """Send the shift's state; False when the page is gone (the server refused the
        send: uvicorn's ``ClientDisconnected`` is an ``OSError``), which is no error."""
        if not await database_sync_to_async(_session_lives)(self.scope.get("session")):
            await self.close(code=REFUSED)
            return False
        state = await database_sync_to_async(shift_state)(self.shift_id)
        try:
            await self.send_json(state)
        except OSError:
            return False
        return True

    async def _tick(self) -> None:
        """Push the state every ``tick_seconds`` until the page goes away (a send the
        server refuses) or :meth:`disconnect` cancels it."""
        while True:
            await asyncio.sleep(self.tick_seconds)
            if not await self.push_state():
                return

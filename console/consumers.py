"""The shift websocket: pushes the store header, the deadline countdown and the last call.

A page showing a shift opens ``/ws/shifts/<pk>/``. Only the shift's participant is
accepted (anyone else is refused before the handshake completes), and only while their
sign-in lasts: a push finds the session gone (signed out, or ended by a revoked
invitation) and closes the socket instead. The consumer
sends the shift's state on connect, whenever the shift actions announce a change
(:mod:`shifts.events`), and every :attr:`ShiftConsumer.tick_seconds` so the
countdown stays true; each push checks the deadline first, so an open page is
told at once when its shift ended. A full read's push and a new call's carry
``last_seq``, the shift's newest call: a page that has not seen that call (another tab
made it) fetches its side panels (history, inbox, cached views) from
``/shifts/<pk>/panels/?after=<seq>``. Pages work
without it: htmx swaps the header after each call and polls the shift bar (see
``templates/console/shift.html``).

The shift is read in full (its row, pauses, newest header and call) on connect, on a
bare event (a pause, resume or end) and on every :attr:`ShiftConsumer.reread_ticks`-th
tick.  A tool call's event carries the call's seq and store header, and a tick needs
only the clock: while the shift is active those pushes are worked out from what the
last full read kept (a pause cannot start without a bare event, so the paused seconds
stand) with no query but the sign-in's.  Such a tick carries the clock and status only,
never the header it kept: that may be older than the one the page shows after a call of
its own whose event this socket missed.  An open page used to cost the server a full
read and render on every call, as much CPU again as the call itself.
"""
from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.urls import reverse
from django.utils import timezone

from environment.tools.format import StoreHeader
from shifts.clock import TimeAccount, account
from shifts.ending import is_due
from shifts.events import group_name
from shifts.models import Shift

from .reply import header_html
from .workspace import live_state

REFUSED = 4403
STORE_KEYS = ("header_html", "last_seq")  # what only a full read or a newer call's event may push


@dataclass
class Known:
    """What the last full read of the shift found, for the pushes worked out without one."""

    shift: Shift
    paused: int  # seconds paused in all, every pause closed (the shift was active)
    state: dict


def _state(shift: Shift, clock: TimeAccount, due: bool, header_markup: str, last_seq: int) -> dict:
    return {
        "type": "state",
        "status": shift.status,
        "due": due,
        "seconds_left": clock.left,
        "active_seconds": clock.active,
        "paused_seconds": clock.paused,
        "header_html": header_markup,
        "url": reverse("console:shift", args=[shift.pk]),
        "last_seq": last_seq,
    }


def read_state(shift_id: int) -> Known:
    """What a page shows live: status, seconds to the deadline, and the header markup, with
    the shift as read.  Read only: a shift past its deadline is sent as ``due`` (its page
    then loads again, and ends it)."""
    shift = Shift.objects.get(pk=shift_id)
    last_seq = shift.calls.order_by("-seq").values_list("seq", flat=True).first() or 0
    live = live_state(shift, upto=last_seq)  # the header as of that call, even if another is stored meanwhile
    state = _state(shift, live.clock, is_due(shift), header_html(live.header), last_seq)
    return Known(shift, live.clock.paused, state)


def shift_state(shift_id: int) -> dict:
    """The state :func:`read_state` reads."""
    return read_state(shift_id).state


def worked_out(known: Known, seq: int | None = None, header: dict | None = None) -> dict | None:
    """The state to push now from ``known`` (a call ``seq`` with its stored ``header``, or
    only the clock's passing), kept in ``known``; or None when the shift must be read
    again: it was not active when read, or its deadline has passed since.  Only a call
    newer than any known brings ``last_seq``, and the header when it has one; other pushes
    carry the clock and status alone."""
    shift, now = known.shift, timezone.now()
    if shift.status != Shift.Status.ACTIVE or is_due(shift, now):
        return None
    clock = account(shift, known.paused, now)
    state = {**known.state, "seconds_left": clock.left, "active_seconds": clock.active,
             "paused_seconds": clock.paused}
    news = seq is not None and seq > state["last_seq"]
    if news:
        state["last_seq"] = seq
        if header is not None:
            state["header_html"] = header_html(StoreHeader.from_dict(header))
    known.state = state
    # Only a header this event brought is pushed: the one kept may be older than the page's
    # own (the page made a call whose event this socket missed).
    if news and header is not None:
        return state
    if news:  # a call that did not reach the store: the page fetches the panels it has not seen
        return {key: value for key, value in state.items() if key != "header_html"}
    return {key: value for key, value in state.items() if key not in STORE_KEYS}


def _owns(user, shift_id: int) -> bool:
    return Shift.objects.filter(pk=shift_id, participant=user).exists()


def _session_lives(session) -> bool:
    """Whether the sign-in the socket was opened with still exists: a sign-out, or a revoked
    invitation ending the sessions it signed in, must also stop the pushes to open pages."""
    key = getattr(session, "session_key", None)
    return bool(key) and session.exists(key)


class ShiftConsumer(AsyncJsonWebsocketConsumer):
    tick_seconds = 15
    reread_ticks = 4  # a full read on every 4th tick: a page that missed an event is right within a minute

    async def connect(self) -> None:
        self.shift_id = int(self.scope["url_route"]["kwargs"]["pk"])
        self.ticker = None
        self.known: Known | None = None
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
        if "seq" in event:
            await self.push_state(event["seq"], event.get("header"))
        else:
            await self.push_state(reread=True)

    async def push_state(self, seq: int | None = None, header: dict | None = None, reread: bool = True) -> bool:
        """Send the shift's state, read in full when ``reread`` or when it cannot be worked
        out from the last read (see the module); False when the page is gone (the server
        refused the send: uvicorn's ``ClientDisconnected`` is an ``OSError``), which is no error."""
        if not await database_sync_to_async(_session_lives)(self.scope.get("session")):
            await self.close(code=REFUSED)
            return False
        known, state = self.known, None
        if known is not None and (seq is not None or not reread):
            state = worked_out(known, seq, header)
        if known is None or state is None:
            self.known = await database_sync_to_async(read_state)(self.shift_id)
            state = self.known.state
        try:
            await self.send_json(state)
        except OSError:
            return False
        return True

    async def _tick(self) -> None:
        """Push the state every ``tick_seconds`` until the page goes away (a send the
        server refuses) or :meth:`disconnect` cancels it."""
        ticks = 0
        while True:
            await asyncio.sleep(self.tick_seconds)
            ticks += 1
            if not await self.push_state(reread=ticks % self.reread_ticks == 0):
                return

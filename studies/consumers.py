"""The live monitor over a websocket: the rows' HTML, pushed every few seconds.

The console has no hook that tells the studies app about a call, and signals are not
used, so the consumer re-reads the stored calls on a timer; the page falls back to
htmx polling of the same partial when the socket is closed.
"""
from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.template.loader import render_to_string

from .errors import StudyPermissionDenied
from .models import Study
from .monitor import monitor_rows

PUSH_SECONDS = 5


@database_sync_to_async
def _render(user, study_id: int, session=None) -> str | None:
    """The rows' HTML, or None when the viewer may not see them: no role that may monitor
    the study, or the sign-in the socket was opened with has ended (signed out)."""
    key = getattr(session, "session_key", None)
    if not key or not session.exists(key):
        return None
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return None
    try:
        rows = monitor_rows(user, study)
    except StudyPermissionDenied:
        return None
    return render_to_string("studies/_monitor_rows.html", {"rows": rows, "study": study})


class MonitorConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.study_id = int(self.scope["url_route"]["kwargs"]["pk"])
        html = await _render(self.scope.get("user"), self.study_id, self.scope.get("session"))
        if html is None:
            await self.close(code=4403)
            return
        await self.accept()
        await self.send_json({"html": html})
        self.pusher = asyncio.ensure_future(self._push())

    async def _push(self):
        while True:
            await asyncio.sleep(PUSH_SECONDS)
            html = await _render(self.scope.get("user"), self.study_id, self.scope.get("session"))
            if html is None:
                await self.close(code=4403)
                return
            await self.send_json({"html": html})

    async def disconnect(self, code):
        pusher = getattr(self, "pusher", None)
        if pusher is not None:
            pusher.cancel()

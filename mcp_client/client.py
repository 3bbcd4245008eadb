"""A small MCP client for tests and, later, the console: results as ``(is_error, text)``.

    async with episode_client(build_server(lambda: ep)) as client:
        names = await client.tool_names()
        is_error, text = await client.call("list_orders", {"page_size": 20})

``server`` is whatever :class:`mcp.Client` accepts: an ``MCPServer`` (connected in
memory), ``StdioServerParameters`` (a subprocess on stdio), a URL (streamable HTTP) or a
``Transport``.  With a URL, ``token=`` sends ``Authorization: Bearer <token>`` on every
request (the episode server of :mod:`mcp_client.http`):

    async with episode_client("http://127.0.0.1:8765/mcp", token=token) as client: ...

:class:`SyncEpisodeClient` keeps one session open across calls for synchronous code (the
console): a fresh session per call pays the ``initialize`` handshake and the ``tools/list``
the SDK sends to check a tool's results, several times the cost of the call itself.

    session = SyncEpisodeClient(build_server(lambda: ep))
    is_error, text = session.call("list_orders", {"page_size": 20})
    session.close()

Its event loop is private and runs only inside ``call`` and ``close``, on the calling
thread; between calls the session's tasks (the client's and, for an in-memory server, the
server's) stay suspended on that loop, waiting for the next message.  It needs no thread
of its own, so a call costs no hop to another thread beyond the one the server makes
for the core.  Each call runs in a task of its own, awaited through a plain future: the
task that holds the session open is then the root of the session's task tree, so the
worker thread the server's ``anyio.to_thread`` starts lives as long as the session
instead of one call.  Calls are serialised (one loop run at a time), and ``call`` must
not be made from a thread that is already running an event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import anyio.to_thread
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, Tool

__all__ = ["CallOutcome", "EpisodeClient", "SessionClosed", "SyncEpisodeClient", "episode_client", "outcome"]

logger = logging.getLogger(__name__)


class CallOutcome(NamedTuple):
    """One tool call as an agent reads it: whether it was refused, and the text."""

    is_error: bool
    text: str


def outcome(result: CallToolResult) -> CallOutcome:
    """The text blocks of ``result`` joined by newlines, with its ``is_error`` flag."""
    text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
    return CallOutcome(bool(result.is_error), text)


class EpisodeClient:
    """A connected :class:`mcp.Client`, narrowed to what a merchant needs."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def list_tools(self) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            page = await self.client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def tool_names(self) -> list[str]:
        return [tool.name for tool in await self.list_tools()]

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> CallOutcome:
        return outcome(await self.client.call_tool(name, dict(arguments or {})))


# The SDK's own defaults for its HTTP client (mcp.shared._httpx_utils.create_mcp_http_client):
# 30 s to connect, write or wait for the pool, 300 s to read (a response may be a long SSE stream).
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


@asynccontextmanager
async def episode_client(server: MCPServer | StdioServerParameters | Transport | str, *,
                         mode: str = "auto", token: str | None = None) -> AsyncIterator[EpisodeClient]:
    """Connect to ``server``; ``mode`` is :class:`mcp.Client`'s (``"auto"`` or ``"legacy"``).

    ``token`` (a URL only) is sent as a bearer token on every HTTP request.
    """
    if token is None:
        async with Client(server, mode=mode) as client:
            yield EpisodeClient(client)
        return
    if not isinstance(server, str):
        raise TypeError("token= applies to a streamable HTTP URL only")
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=HTTP_TIMEOUT) as http:
        async with Client(streamable_http_client(server, http_client=http), mode=mode) as client:
            yield EpisodeClient(client)


def _nothing() -> None:
    pass


class SessionClosed(RuntimeError):
    """The session was closed, or its connection ended."""


class SyncEpisodeClient:
    """One MCP client session, opened once and called from synchronous code (see the module)."""

    def __init__(self, server: MCPServer | StdioServerParameters | Transport | str, *, mode: str = "auto") -> None:
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._requests: asyncio.Queue[tuple[str, Any, asyncio.Future] | None] = asyncio.Queue()
        ready: asyncio.Future[None] = self._loop.create_future()
        self._owner = self._loop.create_task(self._hold(server, mode, ready))
        # The session opens on a daemon thread: the worker thread it starts for the server's
        # core calls inherits that, and never holds up the interpreter's exit.
        opener = threading.Thread(target=self._run, args=(ready,), name="mcp-session-open", daemon=True)
        opener.start()
        opener.join()
        self._outcome(ready)

    async def _hold(self, server: Any, mode: str, ready: asyncio.Future) -> None:
        # Every call is made in this task: an in-memory server answers in the caller's task,
        # and anyio keys its worker threads to the root of that task's tree, this task.  The
        # worker is started here, before the first call, so that it is the opener's (daemon)
        # child; anyio then reuses it for every call.  An exception from a call ends this
        # task, and with it the session; the caller raises it.
        async with episode_client(server, mode=mode) as client:
            await anyio.to_thread.run_sync(_nothing)
            ready.set_result(None)
            while (request := await self._requests.get()) is not None:
                name, arguments, reply = request
                reply.set_result(await client.call(name, arguments))

    def _run(self, target: asyncio.Future) -> None:
        """Run the loop until ``target`` is done or the session ends."""
        woken = self._loop.create_future()

        def wake(_: asyncio.Future) -> None:
            if not woken.done():
                woken.set_result(None)

        target.add_done_callback(wake)
        self._owner.add_done_callback(wake)
        try:
            self._loop.run_until_complete(woken)
        finally:
            self._owner.remove_done_callback(wake)

    def _outcome(self, target: asyncio.Future) -> Any:
        """``target``'s result, or the error that ended the session before it was done."""
        if target.done():
            return target.result()
        target.cancel()
        self._owner.result()  # the session's own error, if it failed
        raise SessionClosed("the MCP session ended during the call")

    @property
    def closed(self) -> bool:
        return self._loop.is_closed() or self._owner.done()

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> CallOutcome:
        with self._lock:
            if self.closed:
                raise SessionClosed("the MCP session is closed")
            reply: asyncio.Future[CallOutcome] = self._loop.create_future()
            self._requests.put_nowait((name, arguments, reply))
            self._run(reply)
            return self._outcome(reply)

    def close(self) -> None:
        """End the session and its loop; a second close does nothing.  An error while the
        session shuts down is logged, not raised: the caller is discarding it."""
        with self._lock:
            if self._loop.is_closed():
                return
            try:
                self._requests.put_nowait(None)
                self._loop.run_until_complete(asyncio.wait([self._owner]))
                if not self._owner.cancelled() and self._owner.exception() is not None:
                    logger.warning("MCP session ended with an error", exc_info=self._owner.exception())
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                self._loop.close()

    def __enter__(self) -> SyncEpisodeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

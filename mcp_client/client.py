"""A small MCP client for tests and, later, the console: results as ``(is_error, text)``.

    async with episode_client(build_server(lambda: ep)) as client:
        names = await client.tool_names()
        is_error, text = await client.call("list_orders", {"page_size": 20})

``server`` is whatever :class:`mcp.Client` accepts: an ``MCPServer`` (connected in
memory), ``StdioServerParameters`` (a subprocess on stdio), a URL (streamable HTTP) or a
``Transport``.  With a URL, ``token=`` sends ``Authorization: Bearer <token>`` on every
request (the episode server of :mod:`mcp_client.http`):

    async with episode_client("http://127.0.0.1:8765/mcp", token=token) as client: ...

A URL the client cannot use raises a plain-worded error instead of the SDK's transport
errors (an ``ExceptionGroup`` around an ``MCPError`` or an httpx ``ConnectError``), on
connecting or on any later call: :class:`TokenRefused` when the server answered 401 (no
token, a token it never issued, or the token of an episode that has ended), naming the
URL and where the right token comes from; :class:`ServerUnreachable` when nothing
answers at the URL (connection refused, an unknown host), saying to start the server.

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
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, NamedTuple, TypeVar

import anyio.to_thread
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, Tool

__all__ = ["CallOutcome", "EpisodeClient", "EpisodeServerError", "ServerUnreachable", "SessionClosed",
           "SyncEpisodeClient", "TokenRefused", "episode_client", "outcome"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class CallOutcome(NamedTuple):
    """One tool call as an agent reads it: whether it was refused, and the text."""

    is_error: bool
    text: str


def outcome(result: CallToolResult) -> CallOutcome:
    """The text blocks of ``result`` joined by newlines, with its ``is_error`` flag."""
    text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
    return CallOutcome(bool(result.is_error), text)


class EpisodeServerError(RuntimeError):
    """An HTTP episode server could not be used: see :class:`TokenRefused` and :class:`ServerUnreachable`."""


class TokenRefused(EpisodeServerError):
    """The episode server answered 401: no token, a token it does not know, or an ended episode's."""


class ServerUnreachable(EpisodeServerError):
    """Nothing answered at the episode server's URL (connection refused, unknown host)."""


WHERE_TOKENS_COME_FROM = ("the token `storebench mcp --http` printed beside the episode's URL "
                          "(\"Authorization: Bearer ...\"), or the \"token\" the operator API answered when it "
                          "opened the session")


class _HttpWatch:
    """What the HTTP client saw of the episode server, to explain the SDK's generic errors."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.token = token
        self.refusals: list[str] = []  # the server's error_description of each 401, in order

    async def on_response(self, response: httpx2.Response) -> None:
        if response.status_code == 401:
            await response.aread()
            try:
                description = response.json().get("error_description") or ""
            except (ValueError, AttributeError):
                description = ""
            self.refusals.append(str(description))

    def explain(self, exc: BaseException, refusals_before: int = 0) -> EpisodeServerError | None:
        """The clear error for ``exc`` (an SDK or httpx error, maybe in a group), or None if it is not one."""
        leaves = list(_leaves(exc))
        if len(self.refusals) > refusals_before and all(isinstance(e, (MCPError, httpx2.HTTPError)) for e in leaves):
            return TokenRefused(self._refused(self.refusals[-1]))
        if any(isinstance(e, httpx2.TransportError) and not isinstance(e, httpx2.TimeoutException) for e in leaves):
            return ServerUnreachable(
                f"cannot reach the MCP server at {self.url} ({_reason(leaves)}): is it running? Start it with "
                "`storebench mcp --http --port PORT ...` (it prints each episode's URL and token), or check the "
                "URL's host and port")
        return None

    def _refused(self, description: str) -> str:
        head = f"the MCP server at {self.url} refused "
        if self.token is None:
            return (head + "the request (401 Unauthorized): no bearer token was sent. Pass the episode's token, "
                    f"episode_client(url, token=...): {WHERE_TOKENS_COME_FROM}")
        if description and description != "Authentication required":  # the server's own reason (an ended episode)
            return head + f"the token (401 Unauthorized): {description}"
        return (head + "the token (401 Unauthorized): it is not the token of a live episode on that server. Check "
                f"the token you passed: use {WHERE_TOKENS_COME_FROM}; a server restarted without --state has "
                "forgotten the tokens it issued before")


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _reason(leaves: list[BaseException]) -> str:
    """Why nothing answered, from the OS error under httpx's ``ConnectError`` when there is one."""
    for leaf in leaves:
        cause: BaseException | None = leaf
        for _ in range(10):  # httpx2 -> httpcore2 -> OSError -> ConnectionRefusedError
            if cause is None:
                break
            if isinstance(cause, ConnectionRefusedError):
                return "connection refused"
            cause = cause.__cause__ or cause.__context__
    return next((str(leaf) for leaf in leaves if str(leaf)), "no answer")


class EpisodeClient:
    """A connected :class:`mcp.Client`, narrowed to what a merchant needs."""

    def __init__(self, client: Client, watch: _HttpWatch | None = None) -> None:
        self.client = client
        self._watch = watch

    async def list_tools(self) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            page = await self._explained(self.client.list_tools(cursor=cursor))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def tool_names(self) -> list[str]:
        return [tool.name for tool in await self.list_tools()]

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> CallOutcome:
        """The call's outcome.  A call the server refuses as malformed before any tool runs (a
        tool name or arguments over the size limits: a protocol error, ``invalid params``) is
        an error outcome with the server's reason, as a tool's refusal is, so that an agent
        loop answers its model and plays on; any other protocol error is raised."""
        try:
            result = await self._explained(self.client.call_tool(name, dict(arguments or {})))
        except MCPError as refused:
            if refused.error.code != INVALID_PARAMS:
                raise
            return CallOutcome(True, f"Error: {refused.error.message}")
        return outcome(result)

    async def _explained(self, request: Awaitable[T]) -> T:
        """``request``'s result; over HTTP, a refusal it met is raised as :class:`TokenRefused` and the like."""
        if self._watch is None:
            return await request
        before = len(self._watch.refusals)
        try:
            return await request
        except Exception as exc:
            clear = self._watch.explain(exc, before)
            if clear is None:
                raise
            raise clear from exc


# The SDK's own defaults for its HTTP client (mcp.shared._httpx_utils.create_mcp_http_client):
# 30 s to connect, write or wait for the pool, 300 s to read (a response may be a long SSE stream).
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


@asynccontextmanager
async def episode_client(server: MCPServer | StdioServerParameters | Transport | str, *,
                         mode: str = "auto", token: str | None = None) -> AsyncIterator[EpisodeClient]:
    """Connect to ``server``; ``mode`` is :class:`mcp.Client`'s (``"auto"`` or ``"legacy"``).

    ``token`` (a URL only) is sent as a bearer token on every HTTP request.  With a URL, a
    401 raises :class:`TokenRefused` and an unreachable server :class:`ServerUnreachable`
    (see the module docstring), whether on connecting or on a later call.
    """
    if not isinstance(server, str):
        if token is not None:
            raise TypeError("token= applies to a streamable HTTP URL only")
        async with Client(server, mode=mode) as client:
            yield EpisodeClient(client)
        return
    watch = _HttpWatch(server, token)
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    connected = False
    try:
        async with httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT,
                                      event_hooks={"response": [watch.on_response]}) as http:
            async with Client(streamable_http_client(server, http_client=http), mode=mode) as client:
                connected = True
                yield EpisodeClient(client, watch)
    except Exception as exc:
        # A call's clear error (EpisodeClient._explained) comes back wrapped in the SDK's task
        # groups: unwrap it.  Otherwise only the transport's own failures are explained: an
        # error the caller's code raised inside the block passes through unchanged.
        already = next((e for e in _leaves(exc) if isinstance(e, EpisodeServerError)), None)
        if already is not None:
            raise already from already.__cause__
        clear = watch.explain(exc) if not connected or _is_transport_failure(exc) else None
        if clear is None:
            raise
        raise clear from exc


def _is_transport_failure(exc: BaseException) -> bool:
    return all(isinstance(e, (MCPError, httpx2.HTTPError)) for e in _leaves(exc))


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

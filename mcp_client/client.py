"""A small MCP client for tests and, later, the console: results as ``(is_error, text)``.

    async with episode_client(build_server(lambda: ep)) as client:
        names = await client.tool_names()
        is_error, text = await client.call("list_orders", {"page_size": 20})

``server`` is whatever :class:`mcp.Client` accepts: an ``MCPServer`` (connected in
memory), ``StdioServerParameters`` (a subprocess on stdio), a URL (streamable HTTP) or a
``Transport``.  With a URL, ``token=`` sends ``Authorization: Bearer <token>`` on every
request (the episode server of :mod:`mcp_client.http`):

    async with episode_client("http://127.0.0.1:8765/mcp", token=token) as client: ...
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, Tool

__all__ = ["CallOutcome", "EpisodeClient", "episode_client", "outcome"]


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

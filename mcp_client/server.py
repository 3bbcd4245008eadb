"""The MCP server: the 29 merchant tools of :data:`environment.tools.REGISTRY`, over MCP.

This module declares no tool.  :func:`build_server` walks the core's registry and, for
each :class:`~environment.tools.registry.ToolSpec`, registers one generated async function
with the SDK.  The tool's published input schema is the core's own, ``spec.input_schema()``
(names, types, enums, bounds, defaults, descriptions, and ``additionalProperties: false``
for the core's ``extra="forbid"``), set on the SDK's tool by :func:`published_schema`
with its top-level keys in the order a schema the SDK generates has them; a test checks
it for all 29 tools.  Title, description and annotations (read-only, destructive, idempotent;
never open-world) come from the spec too.  Grading and calibration are not tools and are
never exposed.

Validation is the core's alone.  The SDK validates a call's arguments against the
function's signature before the function runs, and answers what fails with pydantic's text:
no store header, no error code, no operation spent, nothing in the action log, so whether a
refusal cost an operation would depend on which layer refused it.  The generated function
therefore declares no argument (the SDK's argument model is then empty, and it accepts any
object: it ignores what it does not declare), and the core sees every call.  The
``arguments`` object is handed to ``Episode.call`` exactly as it arrived:
:class:`_StoreServer` overrides ``MCPServer.call_tool``, through which both a wire request
and an in-process ``server.call_tool()`` pass, and puts the object in a context variable
for the function of the same call.  ``Episode.call`` validates strictly (``"7"`` is not an
int; an unknown argument, a missing required one, a value out of bounds are refused),
meters the call (a refused call spends an operation like any other; ``store_status`` is
free), logs it and answers with the store header, including once the store has closed.  A
tool name the registry does not have reaches the core too (:class:`_StoreServer` answers
it before the SDK's bare ``Unknown tool``): the core refuses it as ``unknown_tool``, naming
the tools there are, spends no operation and logs it, as the Python API does.

Results.  A successful call returns ``ToolResult.text()``, the store header line then
compact JSON, as a single text content block (``structured_output=False``: no
``structuredContent`` copy doubling the bytes).  A refusal raises the SDK's
:class:`~mcp.server.mcpserver.exceptions.ToolError`, so the client sees ``isError: true``
with the text ``Error executing tool <name>: <code>: <message>``, then the header line and
the same ``{"error": {...}}`` JSON the core returns.  Anything else that escapes the core is
a bug; the SDK reports it as ``Error executing tool <name>`` and withholds the details.

Episodes.  ``episode_provider`` is a zero-argument callable that returns the Episode the
current request acts on.  It is called on the event loop at the start of every call, so a
later HTTP front end can read the caller's token from a context variable and return that
token's episode; :func:`serve_stdio` serves one armed episode.  The core call itself runs
on a worker thread (``sales_report`` or closing a window takes milliseconds; the event
loop stays free for other sessions) under a per-episode lock, so calls on one episode are
serialised exactly as the core expects.  A free call (``store_status``, or a tool name that
does not exist; a few tens of microseconds) runs on the event loop itself when the
episode's lock is free at once, and on a worker thread otherwise.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, cast

import anyio.to_thread
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources.types import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult, ToolAnnotations

from environment.engine import Episode
from environment.engine.episode import ToolResult
from environment.tools import REGISTRY, ToolSpec

from .sessions import Session

__all__ = ["SERVER_NAME", "build_server", "published_schema", "serve_stdio", "tool_function"]

SERVER_NAME = "storebench"

EpisodeProvider = Callable[[], Episode]
BriefProvider = Callable[[], str]
BRIEF_PROMPT = "brief"
BRIEF_URI = "storebench://brief"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


# --- serialising calls per episode -------------------------------------------------------

_locks: weakref.WeakKeyDictionary[Episode, threading.RLock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def lock_for(episode: Episode) -> threading.RLock:
    """The lock every call on ``episode`` holds (also taken to end a session)."""
    with _locks_guard:
        lock = _locks.get(episode)
        if lock is None:
            lock = _locks[episode] = threading.RLock()
        return lock


AfterCall = Callable[[Episode], None]


def _call_locked(episode: Episode, name: str, arguments: Any, after: AfterCall | None = None) -> ToolResult:
    with lock_for(episode):
        result = episode.call(name, arguments)
        if after is not None:
            after(episode)
        return result


# --- the core answers every call ------------------------------------------------------------

# The ``arguments`` object of the call being answered, exactly as it arrived (set by
# _StoreServer.call_tool, read by the generated function of the same call).
_SENT: ContextVar[Mapping[str, Any] | None] = ContextVar("storebench_sent_arguments", default=None)


class _Core:
    """How a call reaches ``Episode.call``: the current episode, its lock, the after-call hook."""

    def __init__(self, episode_provider: EpisodeProvider, after_call: AfterCall | None, inline: bool) -> None:
        self.episode_provider = episode_provider
        self.after_call = after_call
        self.inline = inline

    async def answer(self, name: str, arguments: Mapping[str, Any], *, free: bool) -> ToolResult:
        """The core's result for ``name`` called with ``arguments``.  A free call (or, with
        ``inline``, any call) runs on the event loop when the episode's lock is free at once."""
        episode = self.episode_provider()
        lock = lock_for(episode)
        if (free or self.inline) and lock.acquire(blocking=False):
            # A free call takes well under a millisecond: answered on the event loop when
            # nobody holds the episode, sparing the hop to a worker thread.
            try:
                return _call_locked(episode, name, arguments, self.after_call)
            finally:
                lock.release()
        return await anyio.to_thread.run_sync(_call_locked, episode, name, arguments, self.after_call)


def _refusal(result: ToolResult) -> str:
    """A refusal's text after the SDK's ``Error executing tool <name>: `` prefix."""
    error = result.error or {}
    return f"{error.get('code', 'error')}: {error.get('message', '')}\n{result.text()}"


def _sent_arguments(name: str) -> Mapping[str, Any]:
    sent = _SENT.get()
    if sent is None:
        raise RuntimeError(f"tool {name!r} was called without going through the store's server (_StoreServer)")
    return sent


# --- one generated function per tool --------------------------------------------------------


def tool_function(spec: ToolSpec, episode_provider: EpisodeProvider,
                  after_call: AfterCall | None = None, *, inline: bool = False) -> Callable[..., Any]:
    """The async function the SDK registers for ``spec``.  It declares no argument, so the
    SDK's own validation accepts any arguments object; it hands the object as sent (see
    :class:`_StoreServer`) to the core.  With ``inline``, every call (not only the free
    probe) runs on the event loop when the episode's lock is free at once (see
    :func:`build_server`)."""
    core = _Core(episode_provider, after_call, inline)

    async def call_tool() -> str:
        result = await core.answer(spec.name, _sent_arguments(spec.name), free=spec.free)
        if not result.ok:
            raise ToolError(_refusal(result))
        return result.text()

    call_tool.__name__ = call_tool.__qualname__ = spec.name
    call_tool.__doc__ = spec.description
    return call_tool


def published_schema(spec: ToolSpec) -> dict[str, Any]:
    """The input schema a client sees for ``spec``: the core's ``spec.input_schema()``, its keys
    in the order the SDK gives a schema generated from a signature (``properties``,
    ``required``, ``type``, then ``additionalProperties``)."""
    schema = spec.input_schema()
    closed = schema.pop("additionalProperties")
    schema["additionalProperties"] = closed
    return schema


def _tool(spec: ToolSpec, episode_provider: EpisodeProvider, after_call: AfterCall | None = None,
          inline: bool = False) -> Tool:
    tool = Tool.from_function(
        tool_function(spec, episode_provider, after_call, inline=inline),
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent_hint,
            open_world_hint=False,
        ),
        structured_output=False,
    )
    if tool.fn_metadata.arg_model.model_fields or tool.context_kwarg is not None:
        raise RuntimeError(f"the SDK found arguments in the generated function of {spec.name!r}")
    # The function declares no argument; what a client is told to send is the core's schema.
    tool.parameters = published_schema(spec)
    return tool


class _BriefedServer(Server):
    """The SDK's low-level server whose ``instructions`` are read from a provider at each use.

    The SDK reads ``server.instructions`` when it answers ``initialize`` (handshake era) and
    ``server/discover`` (2026-07-28 era), inside the request's context, so an HTTP front end
    serving several tasks hands each token its own episode's brief.
    """

    _brief: BriefProvider | None = None

    @property  # type: ignore[override]
    def instructions(self) -> str | None:
        return None if self._brief is None else self._brief()

    @instructions.setter
    def instructions(self, value: str | None) -> None:  # the SDK's constructor assigns it once
        pass


# A call's size limits, a transport's as the SDK's 4 MiB body is: no tool needs more, and a
# call the store answers is logged (and, over HTTP with --state, kept on disk) as sent, a free
# one included.  A call over them is refused before the store: nothing spent or logged.
MAX_ARGUMENT_BYTES = 64 * 1024
MAX_TOOL_NAME = 128


def oversized(name: str, arguments: Any) -> str:
    """Why a call is over the size limits ("" when it is not)."""
    if len(name) > MAX_TOOL_NAME:
        return (f"a tool name of {len(name):,} characters; names are at most {MAX_TOOL_NAME} (the tools are listed "
                "by tools/list): nothing was sent to the store")
    size = len(json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, default=str).encode())
    if size > MAX_ARGUMENT_BYTES:
        return (f"the arguments of {name!r} take {size:,} bytes; a call's arguments may take at most "
                f"{MAX_ARGUMENT_BYTES:,} (no tool needs more): nothing was sent to the store")
    return ""


class _StoreServer(MCPServer):
    """The SDK's server, with three answers of its own.

    ``call_tool`` (every ``tools/call`` of every transport and era passes through it, and so
    does an in-process ``server.call_tool()``) keeps the arguments object as sent for the
    tool's generated function, and hands a tool name the registry does not have to the core,
    whose refusal (``unknown_tool``, naming the tools, with the store header) is raised like
    any other: ``Error executing tool <name>: unknown_tool: ...``.  The core spends no
    operation on it and logs it, as the Python API does.

    ``get_prompt`` answers a prompt it does not have as the client's mistake (invalid params,
    naming the prompts it has), as the SDK answers an unknown resource, instead of an
    internal error with a traceback in the server's log.
    """

    def __init__(self, core: _Core, **settings: Any) -> None:
        super().__init__(**settings)
        self._core = core

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context | None = None) -> CallToolResult | InputRequiredResult:
        too_large = oversized(name, arguments)
        if too_large:
            raise MCPError(INVALID_PARAMS, too_large)
        sent = _SENT.set(arguments)
        try:
            if name not in REGISTRY:
                result = await self._core.answer(name, arguments, free=True)
                raise ToolError(f"Error executing tool {name}: {_refusal(result)}")
            return await super().call_tool(name, arguments, context)
        finally:
            _SENT.reset(sent)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context | None = None) -> Any:
        have = sorted(prompt.name for prompt in await self.list_prompts())
        if name not in have:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name!r}; this server has: {', '.join(have)}")
        return await super().get_prompt(name, arguments, context)


def _default_brief(episode_provider: EpisodeProvider) -> BriefProvider:
    from environment.brief import brief

    def current_brief() -> str:
        return brief(episode_provider().task)

    return current_brief


def build_server(episode_provider: EpisodeProvider, *, log_level: LogLevel = "WARNING",
                 brief_provider: BriefProvider | None = None, after_call: AfterCall | None = None,
                 inline_calls: bool = False, traced: bool = True) -> MCPServer:
    """An MCP server exposing the 29 merchant tools, each acting on ``episode_provider()``.

    The merchant's brief (:func:`environment.brief.brief` of the current episode's task,
    or ``brief_provider()``) is the server's ``instructions``, the prompt ``brief`` and the
    resource ``storebench://brief``, so every MCP host can show it to its agent.
    ``after_call(episode)`` runs after every tool call, under the episode's lock (a graded
    session logs the call and settles at the horizon: :mod:`mcp_client.sessions`).

    Tools are built with ``Tool.from_function``, exactly what ``MCPServer.add_tool`` does
    internally, and handed to the constructor, so the published schema can be set to the
    core's.  ``log_level`` is the SDK's: at ``INFO`` it logs every refused call, with its
    text, to stderr.

    ``inline_calls=True`` runs every tool call on the server's event loop (when the
    episode's lock is free at once) instead of a worker thread: for a loop that serves one
    episode and nothing else (the console's private session per shift,
    :class:`mcp_client.client.SyncEpisodeClient`), where no other session waits on the
    loop and the hop to a worker thread is pure cost.  The core and its lock are the same.

    ``traced=False`` leaves out the SDK's OpenTelemetry middleware, which opens a span
    around every request (a tenth of an in-memory round trip's CPU, with or without a
    tracer installed: this project installs none, so the spans record nothing).  For a
    server nobody traces, such as the console's private session per shift; what a
    client is sent is the same.
    """
    tools = [_tool(spec, episode_provider, after_call, inline_calls) for spec in REGISTRY.values()]
    if len({t.name for t in tools}) != len(tools):
        raise RuntimeError("a tool is declared twice")
    current_brief = brief_provider or _default_brief(episode_provider)
    server = _StoreServer(_Core(episode_provider, after_call, inline_calls), name=SERVER_NAME,
                          version=_version(), tools=tools, log_level=log_level)
    lowlevel = server._lowlevel_server  # the SDK keeps no public handle on it
    if type(lowlevel) is not Server:
        raise RuntimeError("the MCP SDK's low-level server is not the class this adapter extends")
    lowlevel.__class__ = _BriefedServer
    cast(_BriefedServer, lowlevel)._brief = current_brief  # the class swap above is invisible to mypy
    if not traced:
        lowlevel.middleware = [m for m in lowlevel.middleware if not isinstance(m, OpenTelemetryMiddleware)]

    async def brief_prompt() -> str:
        return current_brief()

    async def brief_resource() -> str:
        return current_brief()

    server.add_prompt(Prompt.from_function(
        brief_prompt, name=BRIEF_PROMPT, title="The merchant's brief",
        description="Your assignment for this shift: horizon, windows, operations, money and what is graded."))
    server.add_resource(FunctionResource.from_function(
        brief_resource, uri=BRIEF_URI, name=BRIEF_PROMPT, title="The merchant's brief",
        description="The same brief as the server's instructions and the prompt 'brief'.",
        mime_type="text/plain"))
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("storebench")
    except PackageNotFoundError:
        return ""


# --- stdio ---------------------------------------------------------------------------------


def serve_stdio(task_id: str, seed: int, *, trials: str | Path | None = None,
                labels: dict | None = None, settle_at_horizon: bool = True) -> Session:
    """Arm ``task_id`` at ``seed`` as a graded session and serve it on stdin/stdout until the
    client hangs up; return the session (settled if the horizon was reached and
    ``settle_at_horizon``, else still open: the caller ends it, which writes its trial folder
    under ``trials``; a caller with labels to add at hang-up passes ``settle_at_horizon=False``)."""
    from environment.suite import public_calibration

    calibration, calibration_hash = public_calibration()
    session = Session.open(task_id, seed, out=None if trials is None else Path(trials), state_root=None,
                           labels=labels, calibration=calibration, calibration_hash=calibration_hash)
    session.auto_settle = settle_at_horizon
    build_server(lambda: session.episode, after_call=lambda _ep: session.record()).run("stdio")
    return session

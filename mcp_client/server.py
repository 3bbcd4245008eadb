"""The MCP server: the 29 merchant tools of :data:`environment.tools.REGISTRY`, over MCP.

This module declares no tool.  :func:`build_server` walks the core's registry and, for
each :class:`~environment.tools.registry.ToolSpec`, generates one async function whose
signature is derived from ``spec.args.model_fields``: each field becomes a keyword-only
parameter annotated ``Annotated[<field annotation>, *<field metadata>, Field(description=...)]``
with the field's default.  The SDK turns that signature into the tool's input schema, so
the schema an MCP client sees is the core's own pydantic fields (names, types, enums,
bounds, defaults, descriptions); the one thing a signature cannot say, that unknown
arguments are refused (the core's ``extra="forbid"``), is added as
``additionalProperties: false``.  A test checks the published schema equals
``spec.input_schema()`` for all 29 tools.  Title, description and annotations
(read-only, destructive, idempotent; never open-world) come from the spec too.  Grading
and calibration are not tools and are never exposed.

Validation.  The SDK validates arguments against the signature before the function runs,
and it is lenient: unknown arguments are dropped, ``"7"`` passes as an int, JSON inside a
string is parsed.  The core is the authority and is strict, so the generated function does
not use the values the SDK hands it: it forwards the ``arguments`` object exactly as it
arrived on the wire (``ctx.request_context.params["arguments"]``, a public field of the
SDK's request context) to ``Episode.call``, which validates strictly, meters the call (a
refused call spends an operation, like any other), logs it, and answers.  What the SDK
itself rejects (a value no lax coercion can fix: ``"abc"`` for an int, an enum value not in
the list, a number out of bounds, a string over its ``maxLength``, a price with fractional
cents, a missing required argument) never reaches the core: the client gets the SDK's
``isError`` result (pydantic's text, no store header), no operation is spent and the
action log does not see it.  The schema and the SDK's check
are one and the same: carrying the fields' bounds and validators (``Money``) into the
signature is what makes the published schema the core's, and it is also why the SDK
refuses what that schema rules out.  ``tests/test_mcp_server.py`` pins down which layer
answers what.

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
serialised exactly as the core expects.  The free ``store_status`` (a few tens of
microseconds) runs on the event loop itself when the episode's lock is free at once, and
on a worker thread otherwise.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import anyio.to_thread
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources.types import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ToolAnnotations
from pydantic import Field

from environment.engine import Episode
from environment.engine.episode import ToolResult
from environment.tools import REGISTRY, ToolSpec

from .sessions import Session

__all__ = ["SERVER_NAME", "build_server", "serve_stdio", "tool_function"]

SERVER_NAME = "storebench"
_CTX = "ctx"  # name of the Context parameter of every generated function (not in any schema)

EpisodeProvider = Callable[[], Episode]
BriefProvider = Callable[[], str]
BRIEF_PROMPT = "brief"
BRIEF_URI = "storebench://brief"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
# Parameter annotations are built at run time from the registry's fields; through this
# alias mypy does not read them as static type expressions.
_Annotated: Any = Annotated


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


# --- the arguments as sent ----------------------------------------------------------------


def _wire_arguments(ctx: Context, validated: dict[str, Any], spec: ToolSpec) -> Any:
    """The ``arguments`` object exactly as the client sent it.

    Read from the request context the SDK hands the tool.  Without a request (an
    in-process ``MCPServer.call_tool()``, which has no wire), fall back to what the SDK
    validated, minus optional arguments left at a ``None`` default: the only case where
    the SDK's coercions can reach the core.
    """
    try:
        params = ctx.request_context.params
    except ValueError:  # "Context is not available outside of a request"
        params = None
    if isinstance(params, Mapping):
        arguments = params.get("arguments")
        return {} if arguments is None else arguments
    fields = spec.args.model_fields
    return {k: v for k, v in validated.items()
            if not (v is None and k in fields and not fields[k].is_required() and fields[k].default is None)}


# --- one generated function per tool --------------------------------------------------------


def _error_text(result: ToolResult) -> str:
    error = result.error or {}
    return f"{error.get('code', 'error')}: {error.get('message', '')}\n{result.text()}"


def tool_function(spec: ToolSpec, episode_provider: EpisodeProvider,
                  after_call: AfterCall | None = None, *, inline: bool = False) -> Callable[..., Any]:
    """The async function the SDK registers for ``spec``: its signature is ``spec.args``.
    With ``inline``, every call (not only the free probe) runs on the event loop when the
    episode's lock is free at once (see :func:`build_server`)."""
    on_loop = spec.free or inline
    fields = spec.args.model_fields
    if _CTX in fields:
        raise RuntimeError(f"tool {spec.name!r} has an argument named {_CTX!r}, reserved for the MCP context")

    async def call_tool(**kwargs: Any) -> str:
        ctx = kwargs.pop(_CTX)
        arguments = _wire_arguments(ctx, kwargs, spec)
        episode = episode_provider()
        lock = lock_for(episode)
        if on_loop and lock.acquire(blocking=False):
            # The free status probe takes well under a millisecond: answered on the event loop
            # when nobody holds the episode, sparing the hop to a worker thread.
            try:
                result = _call_locked(episode, spec.name, arguments, after_call)
            finally:
                lock.release()
        else:
            result = await anyio.to_thread.run_sync(_call_locked, episode, spec.name, arguments, after_call)
        if not result.ok:
            raise ToolError(_error_text(result))
        return result.text()

    parameters: list[inspect.Parameter] = []
    annotations: dict[str, Any] = {}
    for name, field in fields.items():
        annotation = _Annotated[(field.annotation, *field.metadata,
                                 Field(description=field.description, json_schema_extra=field.json_schema_extra))]
        default = inspect.Parameter.empty if field.is_required() else field.default
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=annotation))
        annotations[name] = annotation
    parameters.append(inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=Context))
    annotations[_CTX] = Context
    annotations["return"] = str

    call_tool.__name__ = call_tool.__qualname__ = spec.name
    call_tool.__doc__ = spec.description
    call_tool.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call_tool.__annotations__ = annotations
    return call_tool


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
    if tool.context_kwarg != _CTX:
        raise RuntimeError(f"the SDK did not recognise the context parameter of {spec.name!r}")
    # The core refuses unknown arguments (extra="forbid"); say so in the published schema,
    # as spec.input_schema() does, and drop the SDK's generated model title ("<name>Arguments"),
    # which spec.input_schema() drops too.  Everything else comes from the signature.
    tool.parameters["additionalProperties"] = False
    tool.parameters.pop("title", None)
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


class _StoreServer(MCPServer):
    """The SDK's server, answering ``prompts/get`` for a prompt it does not have as the
    client's mistake (invalid params, naming the prompts it has), as it answers an unknown
    resource, instead of an internal error with a traceback in the server's log."""

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
                 inline_calls: bool = False) -> MCPServer:
    """An MCP server exposing the 29 merchant tools, each acting on ``episode_provider()``.

    The merchant's brief (:func:`environment.brief.brief` of the current episode's task,
    or ``brief_provider()``) is the server's ``instructions``, the prompt ``brief`` and the
    resource ``storebench://brief``, so every MCP host can show it to its agent.
    ``after_call(episode)`` runs after every tool call, under the episode's lock (a graded
    session logs the call and settles at the horizon: :mod:`mcp_client.sessions`).

    Tools are built with ``Tool.from_function``, exactly what ``MCPServer.add_tool`` does
    internally, and handed to the constructor, so the published schema can also carry
    ``additionalProperties: false``.  ``log_level`` is the SDK's: at ``INFO`` it logs every
    refused call, with its text, to stderr.

    ``inline_calls=True`` runs every tool call on the server's event loop (when the
    episode's lock is free at once) instead of a worker thread: for a loop that serves one
    episode and nothing else (the console's private session per shift,
    :class:`mcp_client.client.SyncEpisodeClient`), where no other session waits on the
    loop and the hop to a worker thread is pure cost.  The core and its lock are the same.
    """
    tools = [_tool(spec, episode_provider, after_call, inline_calls) for spec in REGISTRY.values()]
    if len({t.name for t in tools}) != len(tools):
        raise RuntimeError("a tool is declared twice")
    current_brief = brief_provider or _default_brief(episode_provider)
    server = _StoreServer(name=SERVER_NAME, version=_version(), tools=tools, log_level=log_level)
    lowlevel = server._lowlevel_server  # the SDK keeps no public handle on it
    if type(lowlevel) is not Server:
        raise RuntimeError("the MCP SDK's low-level server is not the class this adapter extends")
    lowlevel.__class__ = _BriefedServer
    cast(_BriefedServer, lowlevel)._brief = current_brief  # the class swap above is invisible to mypy

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
                labels: dict | None = None) -> Session:
    """Arm ``task_id`` at ``seed`` as a graded session and serve it on stdin/stdout until the
    client hangs up; return the session (settled if the horizon was reached, else still
    open: the caller ends it, which writes its trial folder under ``trials``)."""
    from environment.suite import public_calibration

    calibration, calibration_hash = public_calibration()
    session = Session.open(task_id, seed, out=None if trials is None else Path(trials), state_root=None,
                           labels=labels, calibration=calibration, calibration_hash=calibration_hash)
    build_server(lambda: session.episode, after_call=lambda _ep: session.record()).run("stdio")
    return session

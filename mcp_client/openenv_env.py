"""The store as an OpenEnv environment (meta-pytorch OpenEnv; PyPI ``openenv-core``).

Why OpenEnv rather than ``verifiers``
    Both are LLM post-training environment interfaces with multi-turn tool calling.
    OpenEnv is the one built for an *external* environment: the environment is a
    Gym-style server (``reset`` / ``step`` / ``state``) that trainers (TRL, torchforge,
    SkyRL, ...) drive over HTTP/WebSocket or in-process, and its tool-calling
    convention (RFC 003) is exactly ours: tools are discovered with ``ListToolsAction``
    and called with ``CallToolAction(tool_name, arguments)``, and the infrastructure
    verbs (``reset``, ``step``, ``state``, ``close``) are reserved and can never be tools.
    ``verifiers`` could not be installed here beside the project: every release pins an
    MCP SDK the project cannot use (0.4.0 ``mcp==2.0.0``; 0.2.1-0.3.1 ``mcp<2``; the
    project needs ``mcp>=2.3``), and pip's only way out is to fall back to 0.2.0, an
    older API with an unbounded ``mcp>=1.14.1`` written against the 1.x SDK.
    ``openenv-core`` 0.3.0 resolves cleanly against ``mcp`` 2.3 (through ``fastmcp`` 4)
    and pulls no torch.  (``openenv`` 0.10.0, the package's newer name, pins
    ``fastmcp<4`` and so ``mcp<2``: not installable here either.)

The interface followed (openenv-core 0.3.0, paths in site-packages)
    - ``openenv/core/env_server/interfaces.py``: ``Environment`` with ``reset(seed,
      episode_id, **kwargs)``, ``step(action, timeout_s, **kwargs)``, the ``state``
      property, ``close()``, ``get_metadata()``, ``SUPPORTS_CONCURRENT_SESSIONS``.
    - ``openenv/core/env_server/mcp_types.py``: ``ListToolsAction`` ->
      ``ListToolsObservation(tools=[Tool(name, description, input_schema)])``;
      ``CallToolAction(tool_name, arguments)`` -> ``CallToolObservation(tool_name,
      result, error)``, where a tool's own refusal goes in ``result`` and a framework
      error (no such tool, a malformed call) in ``error`` as ``ToolError(error_type,
      message)``; ``RESERVED_TOOL_NAMES``.
    - ``openenv/core/env_server/serialization.py``: with ``action_cls=CallToolAction``
      the server routes ``{"type": "list_tools"}`` / ``{"type": "call_tool", ...}``
      payloads to those two actions, so OpenEnv's stock ``MCPToolClient``
      (``openenv/core/mcp_client.py``), which speaks them over the WebSocket session,
      drives this environment unchanged.
    - ``openenv/core/env_server/http_server.py``: ``create_app(env_factory,
      action_cls, observation_cls)``.  Plain HTTP ``/reset`` and ``/step`` build a new
      environment per request (stateless); an episode lives in a WebSocket session
      (``/ws``), one environment instance per session.

What this adapter does
    :class:`StoreBenchEnvironment` plays one store per episode through the shared
    :class:`~environment.rl.session.Session` (seeding, malformed actions, ending and
    rewards are stated once, in :mod:`environment.rl.session`).  ``list_tools`` answers
    the 29 tools of :data:`~environment.tools.registry.REGISTRY` with their JSON schemas
    (free: it is discovery, not a store call).  ``call_tool`` is one
    :meth:`Episode.call`; its ``result`` is ``{"data": TEXT, "is_error": bool}`` where
    TEXT is what an agent reads over MCP (header line, then JSON), so
    ``MCPToolClient.call_tool`` returns that text.  ``reset``, ``score``, ``stop`` are
    not tools, and calling them is an ``unknown_tool`` (charged one operation).

    Actions: OpenEnv's ``CallToolAction`` / ``ListToolsAction`` (what the server builds
    from ``{"type": "call_tool", ...}`` / ``{"type": "list_tools"}``), and, in process, the
    shapes Gymnasium takes, parsed by the same rules: ``{"tool": NAME, "arguments":
    {...}}`` as a dict or its JSON text, or a ``(name, arguments)`` pair.  Anything else is
    a malformed action, answered with an error and charged one operation, as in Gymnasium.

    Reward: ``reward="dense-relative"`` (default, as for Gymnasium) pays per window the
    dense channel minus the idle store's (idling earns 0); ``reward="composite"`` is 0 on
    every step and, on the step that ends the episode (horizon, suspension, or the ``max_steps`` cap), the official
    composite; ``reward="shaped"`` is the business term clipped to [-2, 1] there
    instead; ``reward="dense"`` is the per-window dense channel in dollars.  The ending
    observation also carries the official score (``score``), whatever the mode.  A cell
    missing from the calibration file is calibrated on the spot by default
    (``calibrate_missing=True``, as for Gymnasium: about a second at the first reset of
    each new cell, once per process), since every mode but ``dense`` needs its
    constants.  OpenEnv's
    ``Rubric`` (``openenv/core/rubrics``) is not used: a rubric scores (action,
    observation) pairs, while this reward is read off the settled store.

    Reset keywords (``reset(seed=..., task=..., task_seed=..., reward=...)``, also
    accepted as extra fields of the server's reset request) follow the session's
    seeding rule; OpenEnv's ``seed`` seeds the draws of whatever is not given (the task,
    the task seed, or both), and is held to the task seed's rule
    (:func:`environment.errors.check_seed`).  A reset that
    cannot be played (a seed that is no task seed, an unknown task, reward mode or
    keyword) raises the core's error (:class:`~environment.errors.StoreBenchError`: an
    ``InvalidSeed``, a ``TaskFileError``, an :class:`~environment.rl.session.RLConfigError`);
    the server answers it with HTTP 422 and ``{"detail": MESSAGE, "code": CODE}`` (the
    error's code: ``invalid_seed``, ``task_file_invalid``, ``invalid_config``) on
    ``POST /reset``, and with an error message (``{"type": "error", "data": {"message":
    MESSAGE, ...}}``, OpenEnv's own) in a WebSocket session.

OpenEnv imports ``fastmcp``, the MCP SDK, FastAPI and Gradio when it is imported
(about 3 s).  So that ``environment`` never loads them by being imported, OpenEnv is
imported only when this adapter is first used: the classes are built on first access
(``from mcp_client.openenv_env import StoreBenchEnvironment`` triggers it; so
does :func:`classes`).  Serve it with ``python -m mcp_client.openenv_env``.
"""

from __future__ import annotations

import argparse
import random
from typing import TYPE_CHECKING, Any

from environment.errors import StoreBenchError, check_seed
from environment.rl.session import DEFAULT_REWARD, REWARD_MODES, Malformed, RLConfigError, Session, tool_specs

__all__ = ["StoreBenchClient", "StoreBenchEnvironment", "StoreBenchObservation", "StoreBenchState",
           "classes", "create_app"]

_built: dict[str, Any] = {}

if TYPE_CHECKING:  # built on first access by the module ``__getattr__`` below
    StoreBenchClient: type[Any]
    StoreBenchEnvironment: type[Any]
    StoreBenchObservation: type[Any]
    StoreBenchState: type[Any]


class _Draws:
    """The session draws cells with ``rng.integers(n)``; OpenEnv's seed makes this one."""

    def __init__(self, seed: int | None) -> None:
        self._r = random.Random(None if seed is None else check_seed(seed))

    def integers(self, n: int) -> int:
        return self._r.randrange(n)


def classes() -> dict[str, Any]:
    """Import OpenEnv and build the adapter's classes (once)."""
    if _built:
        return _built
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.mcp_types import (
        RESERVED_TOOL_NAMES,
        CallToolAction,
        CallToolObservation,
        ListToolsAction,
        ListToolsObservation,
        Tool,
        ToolError,
        ToolErrorType,
    )
    from openenv.core.env_server.types import EnvironmentMetadata, State
    from openenv.core.mcp_client import MCPToolClient
    from pydantic import Field

    specs = tool_specs()
    clash = {t["name"] for t in specs} & set(RESERVED_TOOL_NAMES)
    if clash:  # pragma: no cover - the registry is fixed
        raise RuntimeError(f"tools use OpenEnv's reserved names: {sorted(clash)}")

    class StoreBenchObservation(CallToolObservation):
        """A tool result.  ``result`` is ``{"data": TEXT, "is_error": bool}``; TEXT is the
        store header line, then JSON, as over MCP."""

        prompt: str | None = Field(default=None, description="The task prompt (first observation only)")
        dense_reward: float = Field(default=0.0, description="Dense channel change this step closed, dollars")
        score: dict | None = Field(default=None, description="The official score, on the step that ends")

    class StoreBenchState(State):
        task: str | None = None
        task_seed: int | None = None
        window: int | None = None
        windows_total: int | None = None
        operations_left: int | None = None
        over: bool = False
        end_reason: str | None = None
        reward_mode: str | None = None
        score: dict | None = None

    class StoreBenchEnvironment(Environment):
        """One StoreBench store per episode, driven with ListToolsAction / CallToolAction."""

        SUPPORTS_CONCURRENT_SESSIONS = True  # each instance owns its store; the world is read-only

        def __init__(self, task: str | None = None, task_seed: int | None = None, *,
                     reward: str = DEFAULT_REWARD, calibration: Any = "public", calibrate_missing: bool = True,
                     max_steps: int | None = None, seeds: Any = None, tasks: Any = None) -> None:
            super().__init__()
            kw = {} if seeds is None else {"seeds": seeds}
            self.session = Session(task, task_seed, reward=reward, calibration=calibration,
                                   calibrate_missing=calibrate_missing, max_steps=max_steps, tasks=tasks, **kw)
            self._episode_id: str | None = None
            self._episodes = 0  # this environment's resets: episode ids stay apart when none is given
            self._tools = [Tool(name=t["name"], description=t["description"], input_schema=t["input_schema"])
                           for t in specs]

        def get_metadata(self) -> EnvironmentMetadata:
            return EnvironmentMetadata(
                name="StoreBench", version="0.1.0",
                description="A live online apparel store behind 29 metered merchant tools; the reward is "
                            "the settled business outcome with order and return reliability.")

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any):
            options: dict[str, Any] = {k: kwargs.pop(k) for k in ("task", "task_seed", "reward") if k in kwargs}
            if kwargs:
                raise RLConfigError(f"unknown reset keywords {sorted(kwargs)}; they are task, task_seed, reward "
                                    "(besides OpenEnv's seed and episode_id)")
            task, task_seed = self.session.resolve(_Draws(seed), options)
            text = self.session.start(task, task_seed, options.get("reward"))
            ep = self.session.ep
            assert ep is not None, "start() opens an episode"
            self._episodes += 1
            self._episode_id = episode_id or f"{task}-{task_seed}-{self._episodes}"
            return StoreBenchObservation(tool_name="store_status", result={"data": text, "is_error": False},
                                         prompt=ep.task.prompt.strip(), done=False, reward=None)

        def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any):
            if isinstance(action, ListToolsAction):
                over = self.session.ep is not None and self.session.ep.over
                return ListToolsObservation(tools=[t.model_copy() for t in self._tools], done=over, reward=0.0)
            if self.session.ep is None:  # no store: nothing to call or charge
                return StoreBenchObservation(
                    tool_name=getattr(action, "tool_name", "?"), done=True, reward=0.0,
                    error=ToolError(error_type=ToolErrorType.EXECUTION_ERROR,
                                    message="no episode: reset first (a plain HTTP /step is stateless; "
                                            "play an episode in a WebSocket session)"))
            # Any: environment.rl.session.Step fills its slots in a loop, so mypy sees none of them.
            step: Any
            if isinstance(action, CallToolAction):
                step = self.session.act({"tool": action.tool_name, "arguments": action.arguments})
            elif isinstance(action, dict | str | bytes | tuple):  # Gymnasium's shapes, parsed by its rules
                step = self.session.act(action)
            else:
                step = self.session.act(action, Malformed(
                    "malformed_action", f"an action is a CallToolAction or ListToolsAction (OpenEnv's MCP "
                    "actions), or, as for Gymnasium, {\"tool\": NAME, \"arguments\": {...}} as a dict or JSON "
                    f"text; not {type(action).__name__}; e.g. CallToolAction(tool_name=\"store_status\", "
                    "arguments={})"))
            name = action.tool_name if isinstance(action, CallToolAction) else step.tool or "?"
            error = None
            if step.malformed:
                kind = ToolErrorType.TOOL_NOT_FOUND if step.error_code == "unknown_tool" else ToolErrorType.INVALID_ARGS
                error = ToolError(error_type=kind, message=step.body["error"]["message"])
            score = None
            if step.ended:  # only the step that ended the store carries the score
                final = self.session.final_info()
                score = final["score"] if final["score"] is not None else {"business_raw": final["business_raw"]}
            return StoreBenchObservation(
                tool_name=name, result={"data": step.text, "is_error": not step.ok}, error=error,
                dense_reward=step.dense_cents / 100, score=score, done=bool(step.terminated or step.truncated),
                reward=float(step.reward),
                metadata={"header": step.header, "error_code": step.error_code, "truncated": step.truncated})

        @property
        def state(self):
            ep = self.session.ep
            if ep is None:
                return StoreBenchState(episode_id=self._episode_id, step_count=0)
            final = self.session.final_info() if ep.over else None
            return StoreBenchState(
                episode_id=self._episode_id, step_count=self.session.steps, task=ep.task.id, task_seed=ep.seed,
                window=min(ep.window + 1, ep.n_windows), windows_total=ep.n_windows,
                operations_left=0 if ep.over else ep.ops_left, over=ep.over, end_reason=ep.end_reason or None,
                reward_mode=self.session.reward_mode, score=final["score"] if final else None)

        def settle(self) -> dict:
            """Settle now, for a harness whose agent stopped calling tools (never a tool)."""
            return self.session.settle()

        def close(self) -> None:
            self.session.ep = None

    class StoreBenchClient(MCPToolClient):
        """OpenEnv's MCP tool client, keeping StoreBench's observation fields and state."""

        def _parse_result(self, payload: dict):
            result = super()._parse_result(payload)
            obs = payload.get("observation", {})
            if "tool_name" in obs:
                result.observation = StoreBenchObservation(
                    tool_name=obs.get("tool_name", ""), result=obs.get("result"),
                    error=ToolError(**obs["error"]) if obs.get("error") else None,
                    prompt=obs.get("prompt"), dense_reward=obs.get("dense_reward", 0.0), score=obs.get("score"),
                    done=payload.get("done", False), reward=payload.get("reward"))
            return result

        def _parse_state(self, payload: dict):
            return StoreBenchState(**payload)

    _built.update(StoreBenchObservation=StoreBenchObservation, StoreBenchState=StoreBenchState,
                  StoreBenchEnvironment=StoreBenchEnvironment, StoreBenchClient=StoreBenchClient,
                  CallToolAction=CallToolAction, ListToolsAction=ListToolsAction)
    return _built


def create_app(*, max_concurrent_envs: int = 8, **env_kwargs: Any):
    """A FastAPI app serving :class:`StoreBenchEnvironment` (one instance per WebSocket session).

    ``env_kwargs`` go to every instance; one instance is built here first, so a bad one (an
    unknown task, a seed that is no task seed, an unknown reward mode) raises now, as the
    core's :class:`~environment.errors.StoreBenchError`, rather than on every reset.  A reset
    the core refuses is answered with HTTP 422 and ``{"detail": MESSAGE, "code": CODE}``."""
    import functools

    from fastapi import Request
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.http_server import create_fastapi_app

    c = classes()
    factory = functools.partial(c["StoreBenchEnvironment"], **env_kwargs)
    factory().close()  # checks env_kwargs once, at start-up
    app = create_fastapi_app(factory, c["CallToolAction"], c["StoreBenchObservation"],
                             max_concurrent_envs=max_concurrent_envs)

    async def refused(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StoreBenchError), "registered for StoreBenchError only"
        return JSONResponse(status_code=422, content={"detail": exc.message, "code": str(exc.code)})

    app.add_exception_handler(StoreBenchError, refused)
    return app


def __getattr__(name: str) -> Any:
    if name in ("StoreBenchEnvironment", "StoreBenchObservation", "StoreBenchState", "StoreBenchClient"):
        return classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PROG = "python -m mcp_client.openenv_env"
DEFAULT_PORT = 8766  # beside the MCP server's 8765; 8000 is the console's (make run) and many LLM servers'


def build_parser() -> argparse.ArgumentParser:
    """The server's command line (``python -m mcp_client.openenv_env --help``)."""
    from environment.cli import positive_int, seed_arg
    from environment.tasks import PUBLIC_SEEDS

    from .cli import port_arg

    seeds = ", ".join(str(s) for s in PUBLIC_SEEDS)
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Serve StoreBench as an OpenEnv environment: an episode is a WebSocket session on /ws "
                    "(reset, then step with list_tools / call_tool actions).  Plain HTTP keeps no episode "
                    "between requests: POST /reset answers a new store's first observation and then drops "
                    "the store, and POST /step has no episode to act on (list_tools answers the tools; a "
                    "call_tool answers done: true with the error \"no episode: reset first\").  A reset may "
                    "name its own task, task_seed and reward, overriding the options below for that episode.  "
                    "A refused reset is answered with HTTP 422 and its message.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for all)")
    parser.add_argument("--port", type=port_arg, default=DEFAULT_PORT,
                        help=f"TCP port to listen on (default {DEFAULT_PORT}: the console's `make run` takes "
                             "8000 and `storebench mcp --http` 8765)")
    parser.add_argument("--task", default=None,
                        help="task every episode plays unless its reset names one (default: each reset draws "
                             "one of the training tasks; `storebench tasks list` lists them)")
    parser.add_argument("--task-seed", type=seed_arg, default=None,
                        help=f"task seed every episode plays unless its reset names one (default: each reset "
                             f"draws one of the public seeds {seeds}, chosen by the reset's seed); a seed outside "
                             "the calibration file is calibrated at its first reset, about a second")
    parser.add_argument("--reward", default=DEFAULT_REWARD, choices=REWARD_MODES,
                        help=f"reward mode (default {DEFAULT_REWARD}, as for Gymnasium and the in-process class): "
                             "dense-relative pays per window the dense channel minus the idle store's; dense the "
                             "dense channel in dollars; shaped and composite pay once, at the end, the clipped "
                             "business term or the official composite")
    parser.add_argument("--max-steps", type=positive_int, default=None,
                        help="actions per episode before it is cut short and settled (default: twice the task's "
                             "operations)")
    parser.add_argument("--max-concurrent-envs", type=positive_int, default=8,
                        help="WebSocket sessions (episodes) served at once (default 8); a further session is "
                             "refused until one closes")
    return parser


def main(argv: list[str] | None = None) -> int:
    import sys

    from environment.tasks import get_task

    args = build_parser().parse_args(argv)
    if args.task is not None:
        try:
            get_task(args.task)  # before OpenEnv's import (3 s), so a typo is answered at once
        except StoreBenchError as exc:
            print(f"{PROG}: --task: {exc.message}", file=sys.stderr)
            return 2
    try:
        app = create_app(max_concurrent_envs=args.max_concurrent_envs, task=args.task, task_seed=args.task_seed,
                         reward=args.reward, max_steps=args.max_steps)
    except StoreBenchError as exc:
        print(f"{PROG}: {exc.message}", file=sys.stderr)
        return 2
    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

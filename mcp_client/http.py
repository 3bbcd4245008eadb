"""Many live episodes over streamable HTTP, one bearer token each.

    hub = EpisodeHub()
    token, episode = hub.open("short-runway", 7)
    app = create_app(hub)                       # a Starlette app; /mcp is the only route
    # or: serve_http("127.0.0.1", 8765, [("short-runway", 7), ("steady", 3)])

Design
------
One :class:`EpisodeHub` holds every live episode, each behind its own bearer token
(``secrets.token_urlsafe(32)``, 256 random bits).  The hub keeps the SHA-256 digest of each
token, never the token itself: a lookup compares digests, so its timing says nothing
about the token, and a dump of the hub's memory holds nothing a client could present.
``hub.open`` arms an episode and hands back its token, once; ``hub.close`` revokes it.

One :class:`~mcp.server.mcpserver.MCPServer`, built by :func:`mcp_client.server.build_server`
exactly as for stdio (the same 29 generated tools, the same per-episode lock), serves
every episode.  What differs is its episode provider: instead of a fixed episode it
reads the access token the SDK's auth middleware put in the request's context
(:func:`mcp.server.auth.middleware.auth_context.get_access_token`) and asks the hub
for that token's episode.  No tool takes an episode, a token or a session argument, so
nothing a client writes in a call can point it at another episode: a token for
episode A can only ever reach A.  (The SDK carries the request's context variables to
the task that runs the tool, per message, in both protocol eras.)

Authentication is the SDK's own bearer stack, assembled here around the SDK's
streamable HTTP app: Starlette's ``AuthenticationMiddleware`` with the SDK's
``BearerAuthBackend`` over :class:`HubTokenVerifier` (which accepts only the hub's live
tokens), the SDK's ``AuthContextMiddleware`` (which sets the context variable the
provider reads) and ``RequireAuthMiddleware`` on ``/mcp`` (401 with a
``WWW-Authenticate: Bearer error="invalid_token"`` header for a missing, made-up or
revoked token; nothing behind it runs).  This is exactly what
``MCPServer.streamable_http_app()`` assembles when the server is constructed with
``token_verifier=`` and ``auth=AuthSettings(...)``; it is done here instead because
:func:`build_server` constructs the server without those arguments, and because
``AuthSettings`` would also publish OAuth protected-resource metadata naming an
authorization server that does not exist (the hub issues tokens out of band).  Each
token's ``client_id`` is unique (``episode-<n>``), and the SDK binds a handshake-era
session (``Mcp-Session-Id``) to the credential that opened it, so a session opened
with token A answers 404 to token B.

The app is a Starlette app whose lifespan enters ``server.session_manager.run()``
(the SDK app's own lifespan does not run once it is wrapped).  Its only route is
``/mcp``: grading, calibration, settling and resetting are not tools and have no route,
so nothing a client sends can reach them.  With a loopback host the SDK's DNS-rebinding
protection accepts only local ``Host`` headers; a real host name needs
``transport_security``.

:func:`serve_http` is the entry point for the CLI: it binds the socket first (so port 0
works and the printed URL is the real one), opens the listed episodes, prints one line
per episode with its URL and token, and runs uvicorn until interrupted.
:func:`bench` measures a store call against a no-op tool over streamable HTTP and over
stdio, side by side in one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import secrets
import socket
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from environment.engine import Episode
from environment.tasks import Task

from .server import LogLevel, build_server

__all__ = ["MCP_PATH", "EpisodeHub", "HubTokenVerifier", "UnknownToken", "authenticated_app", "bench",
           "create_app", "episode_provider", "mcp_url", "running", "serve_http"]

MCP_PATH = "/mcp"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


# --- the hub ----------------------------------------------------------------------------------------


class UnknownToken(KeyError):
    """No live episode has this token (never issued, or closed).  The message never holds it."""

    def __init__(self) -> None:
        super().__init__("no live episode has this token")


@dataclass(frozen=True)
class _Entry:
    episode: Episode
    access: AccessToken = field(repr=False)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class EpisodeHub:
    """Live episodes, each behind its own bearer token.  Safe to use from several threads."""

    def __init__(self) -> None:
        self._entries: dict[bytes, _Entry] = {}
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def open(self, task: str | Task, seed: int) -> tuple[str, Episode]:
        """Arm ``task`` at ``seed``; return a fresh token for it, and the episode."""
        from environment.api import arm

        episode = arm(task, seed)
        return self.add(episode), episode

    def add(self, episode: Episode) -> str:
        """Put an episode already armed (or restored) behind a fresh token; return the token."""
        token = secrets.token_urlsafe(32)
        number = next(self._numbers)
        access = AccessToken(
            token=token,
            # Unique per token: the SDK binds a handshake-era session to (client_id, issuer,
            # subject), so a session opened with one token is refused to every other token.
            client_id=f"episode-{number}",
            scopes=[],
            claims={"task": episode.task.id, "seed": episode.seed},
        )
        with self._lock:
            self._entries[_digest(token)] = _Entry(episode, access)
        return token

    def close(self, token: str) -> Episode:
        """Revoke ``token`` (its next request gets 401); return its episode, as played."""
        with self._lock:
            entry = self._entries.pop(_digest(token), None)
        if entry is None:
            raise UnknownToken()
        return entry.episode

    def episode_for(self, token: str) -> Episode:
        """The live episode behind ``token``; :class:`UnknownToken` if there is none."""
        return self._entry(token).episode

    def access_token(self, token: str) -> AccessToken | None:
        """What the verifier hands the SDK for ``token``, or ``None`` if it is not live."""
        try:
            return self._entry(token).access
        except UnknownToken:
            return None

    def episodes(self) -> list[Episode]:
        with self._lock:
            return [entry.episode for entry in self._entries.values()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _entry(self, token: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(_digest(token))
        if entry is None:
            raise UnknownToken()
        return entry


class HubTokenVerifier:
    """The SDK's ``TokenVerifier``: accepts exactly the hub's live tokens."""

    def __init__(self, hub: EpisodeHub) -> None:
        self.hub = hub

    async def verify_token(self, token: str) -> AccessToken | None:
        return self.hub.access_token(token)


def episode_provider(hub: EpisodeHub) -> Callable[[], Episode]:
    """The episode of the current request, read from its access token (never from arguments).

    Behind :class:`RequireAuthMiddleware` a tool only runs for a live token, so the two
    refusals below are a second line: a request that somehow arrives without a token, or
    whose token was closed between the middleware and the call.
    """

    def current_episode() -> Episode:
        access = get_access_token()
        if access is None:
            raise ToolError("unauthenticated: this request carries no bearer token")
        try:
            return hub.episode_for(access.token)
        except UnknownToken:
            raise ToolError("episode_closed: this token's episode is closed") from None

    return current_episode


# --- the ASGI app --------------------------------------------------------------------------------------


def _transport_security(host: str, port: int | None) -> TransportSecuritySettings | None:
    if host in _LOOPBACK:
        return None  # the SDK's default for a loopback host: local Host and Origin headers only
    hostport = f"[{host}]" if ":" in host else host
    hosts = [hostport] if port is None else [hostport, f"{hostport}:{port}"]
    origins = [f"http://{h}" for h in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def authenticated_app(server: MCPServer, verifier: Any, *, host: str = "127.0.0.1", port: int | None = None,
                      json_response: bool = False,
                      transport_security: TransportSecuritySettings | None = None) -> Starlette:
    """``server`` over streamable HTTP at ``/mcp``, behind the SDK's bearer-token stack.

    The same wiring ``MCPServer.streamable_http_app()`` does for a server constructed with
    ``token_verifier=`` and ``auth=``, without the OAuth metadata routes.  Used for the
    store (:func:`create_app`) and for the benchmark's no-op server.
    """
    mcp_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=json_response,
        transport_security=transport_security or _transport_security(host, port),
        host=host,
    )
    session_manager = server.session_manager  # exists once streamable_http_app() was called

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with session_manager.run():
            yield

    return Starlette(
        routes=[Route(MCP_PATH, endpoint=RequireAuthMiddleware(mcp_app, required_scopes=[]))],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )


def create_app(hub: EpisodeHub, *, host: str = "127.0.0.1", port: int | None = None,
               json_response: bool = False, transport_security: TransportSecuritySettings | None = None,
               log_level: LogLevel = "WARNING") -> Starlette:
    """The ASGI app serving every episode of ``hub`` at ``/mcp``, one token per episode.

    ``host`` and ``port`` are where clients reach the app; they only decide which ``Host``
    headers are accepted (loopback: the SDK's local-only default).  An app can be served
    once: its lifespan enters the SDK's session manager, which runs only once.
    """
    server = build_server(episode_provider(hub), log_level=log_level)
    return authenticated_app(server, HubTokenVerifier(hub), host=host, port=port,
                             json_response=json_response, transport_security=transport_security)


def mcp_url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{MCP_PATH}"


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: any free port), bound before uvicorn starts.

    Created with ``proto=IPPROTO_TCP`` on purpose: asyncio sets ``TCP_NODELAY`` on an accepted
    connection only when the socket says it is TCP (``asyncio.base_events._set_nodelay``), and
    ``socket.create_server`` leaves ``proto`` at 0.  Without it Nagle's algorithm meets the
    client's delayed ACK and every request takes about 44 ms on loopback instead of 1 to 2.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _uvicorn_server(app: Any, log_level: str) -> Any:
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level=log_level, access_log=False,
                                         timeout_graceful_shutdown=2))


@contextlib.contextmanager
def running(app: Any, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning",
            startup_timeout: float = 10.0) -> Iterator[int]:
    """Serve ``app`` with uvicorn on a background thread; yield the bound port; stop on exit."""
    sock = _bind(host, port)
    server = _uvicorn_server(app, log_level)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="uvicorn")
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def serve_http(host: str, port: int, episodes: Iterable[tuple[str | Task, int]], *,
               out: IO[str] | None = None, log_level: str = "warning",
               json_response: bool = False) -> EpisodeHub:
    """Open ``episodes`` (``(task, seed)`` pairs), print each one's URL and token, serve until
    interrupted (Ctrl-C); return the hub, whose episodes are as played.

    One line per episode on ``out`` (stdout by default)::

        short-runway seed 7  http://127.0.0.1:8765/mcp  Authorization: Bearer <token>
    """
    out = out or sys.stdout
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    hub = EpisodeHub()
    app = create_app(hub, host=host, port=bound, json_response=json_response)
    url = mcp_url(host, bound)
    for task, seed in episodes:
        token, episode = hub.open(task, seed)
        print(f"{episode.task.id} seed {seed}  {url}  Authorization: Bearer {token}", file=out, flush=True)
    try:
        _uvicorn_server(app, log_level).run(sockets=[sock])
    finally:
        sock.close()
    return hub


# --- benchmark (measured and printed, never asserted) ---------------------------------------------------------


_NOOP_STDIO = textwrap.dedent("""\
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="noop", log_level="WARNING")

    async def noop() -> str:
        return "ok"

    server.add_tool(noop, name="noop", structured_output=False)
    server.run("stdio")
    """)


class _AnyToken:
    """The no-op server's verifier: any bearer token passes (the middleware still runs)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="noop", scopes=[])


def _noop_server() -> MCPServer:
    server = MCPServer(name="noop", log_level="WARNING")

    async def noop() -> str:
        return "ok"

    server.add_tool(noop, name="noop", structured_output=False)
    return server


def _serve_noop_http(host: str = "127.0.0.1", port: int = 0) -> None:
    """The benchmark's no-op server over streamable HTTP, behind the same bearer middleware as
    the store (any token passes); prints ``noop <url>`` once the socket is bound."""
    sock = _bind(host, port)
    print(f"noop {mcp_url(host, sock.getsockname()[1])}", flush=True)
    try:
        _uvicorn_server(authenticated_app(_noop_server(), _AnyToken(), host=host), "warning").run(sockets=[sock])
    finally:
        sock.close()


@contextlib.contextmanager
def _spawned(code: str, cwd: str, env: dict[str, str]) -> Iterator[str]:
    """Run ``python -c code``; yield its first line of output; terminate it on exit."""
    import subprocess

    process = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line:
            raise RuntimeError(f"the benchmark server did not start: {code}")
        yield line
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


async def _timed_calls(target: Any, name: str, n: int, *, token: str | None = None, mode: str = "auto",
                       warmup: int = 20) -> list[float]:
    from .client import episode_client

    async with episode_client(target, token=token, mode=mode) as client:
        for _ in range(warmup):
            await client.call(name)
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            is_error, text = await client.call(name)
            samples.append(time.perf_counter() - t)
            if is_error:
                raise RuntimeError(f"{name} failed during the benchmark: {text[:200]}")
        return samples


def bench(task: str = "short-runway", seed: int = 7, n: int = 300, *, mode: str = "auto",
          out: IO[str] | None = None) -> dict[str, float]:
    """Median round trip (ms) of ``n`` ``store_status`` calls against ``n`` calls of a no-op tool
    on a separate MCPServer, over streamable HTTP and over stdio, all in this one run.

    Every server is its own process, as in real use: over HTTP, :func:`serve_http` with one
    episode and a no-op server behind the same bearer middleware, both on loopback; over
    stdio, ``python -m mcp_client TASK SEED`` and a tiny no-op script.  One client per
    server, ``mode`` as :class:`mcp.Client` takes it (``"auto"`` negotiates 2026-07-28 over
    both transports; ``"legacy"`` forces the handshake and, over HTTP, a session), 20 calls
    of warm-up each.  Returns the medians and the ratios store/no-op per transport; prints a
    small table on ``out``.
    """
    from mcp import StdioServerParameters

    out = out or sys.stdout
    repo = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    medians: dict[str, float] = {}

    store_code = f"from mcp_client.http import serve_http; serve_http('127.0.0.1', 0, [({task!r}, {seed})])"
    noop_code = "from mcp_client.http import _serve_noop_http; _serve_noop_http()"
    with _spawned(store_code, repo, env) as store_line, _spawned(noop_code, repo, env) as noop_line:
        store_url, token = store_line.split()[-4], store_line.split()[-1]
        noop_url = noop_line.split()[-1]
        store = asyncio.run(_timed_calls(store_url, "store_status", n, token=token, mode=mode))
        noop = asyncio.run(_timed_calls(noop_url, "noop", n, token="any", mode=mode))
    medians["http_store_status_ms"] = statistics.median(store) * 1000
    medians["http_noop_ms"] = statistics.median(noop) * 1000

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp, "noop_stdio.py")
        script.write_text(_NOOP_STDIO)
        store_params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_client", task, str(seed)],
                                             cwd=repo, env=env)
        noop_params = StdioServerParameters(command=sys.executable, args=[str(script)], cwd=repo, env=env)
        store = asyncio.run(_timed_calls(store_params, "store_status", n, mode=mode))
        noop = asyncio.run(_timed_calls(noop_params, "noop", n, mode=mode))
    medians["stdio_store_status_ms"] = statistics.median(store) * 1000
    medians["stdio_noop_ms"] = statistics.median(noop) * 1000

    result = dict(medians)
    result["http_ratio"] = medians["http_store_status_ms"] / medians["http_noop_ms"]
    result["stdio_ratio"] = medians["stdio_store_status_ms"] / medians["stdio_noop_ms"]
    result["http_over_stdio_store"] = medians["http_store_status_ms"] / medians["stdio_store_status_ms"]
    result["n"] = n
    print(f"median of {n} calls, mode={mode}", file=out)
    for transport in ("http", "stdio"):
        print(f"  {transport:5}  store_status {result[f'{transport}_store_status_ms']:.3f} ms"
              f"  no-op {result[f'{transport}_noop_ms']:.3f} ms  ratio {result[f'{transport}_ratio']:.2f}",
              file=out)
    return result


if __name__ == "__main__":  # python -m mcp_client.http [auto|legacy]: the benchmark
    bench(mode=sys.argv[1] if len(sys.argv) > 1 else "auto")

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
per episode with its URL and token, and runs uvicorn until interrupted (Ctrl-C or SIGTERM);
:func:`settle_at_exit` then settles what is open (without ``--state``) and names each
trial folder written, as the stdio server does.

The benchmark (a store call against a no-op tool over both transports) is in
:mod:`benchmarks.mcp`.

Stopping with ``--state``.  The state folder's lock (:func:`_held_state`) must not go while
anything of this server may still write into the folder: a second server taking it then
would resume, or settle, a session whose last call is still being written.  And uvicorn
returning does not mean nothing writes any more: a tool call's store work, its log line and
a settlement run on a worker thread (``anyio.to_thread``, :mod:`mcp_client.server`), as do
the operator API's open, labels and end (:mod:`mcp_client.operator`), and a thread cannot be
stopped.  A stopping uvicorn cancels a request still running after ``timeout_graceful_shutdown``
(2 s): an operator request, or a 2026-era call (answered within its request), stops waiting
for its thread then, and uvicorn returns while the thread goes on (a handshake-era call runs
in the SDK's session task, which the app's shutdown waits for, without a bound).  So every
write into the hub's folders goes through the hub (:meth:`EpisodeHub.after_call`,
:meth:`~EpisodeHub.open_session`, :meth:`~EpisodeHub.set_labels`, :meth:`~EpisodeHub.end`),
which counts those in progress; once uvicorn has returned, :meth:`EpisodeHub.stop_writing`
refuses any new one and waits for those running, up to :data:`WRITES_GRACE` seconds, and the
lock is released only when the last has finished: at once, or, when the wait gives up (a line
on the log says so), by the thread that finishes the last write, or with the process (an
``flock`` goes with it; the CLI's worker threads are not daemons, so it waits for them first).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
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
from starlette.responses import JSONResponse
from starlette.routing import Route

from environment.engine import Episode
from environment.errors import StoreBenchError
from environment.suite import public_calibration
from environment.tasks import Task

from .codes import ServerErrorCode
from .limits import ServerLimits, limit_sessions_per_token
from .operator import OPERATOR_PATH, operator_routes
from .server import LogLevel, build_server, lock_for
from .sessions import (
    ENDED,
    ENDED_BY_OPERATOR,
    ENDED_BY_SERVER,
    Session,
    SessionError,
    SettledSession,
    read_meta,
    read_settled,
    restore_session,
    write_ended,
)

__all__ = ["MCP_PATH", "EpisodeHub", "HubTokenVerifier", "UnknownSession", "UnknownToken", "authenticated_app",
           "create_app", "episode_provider", "mcp_url", "running", "serve_http", "settle_at_exit"]

MCP_PATH = "/mcp"
WRITES_GRACE = 30.0  # seconds a stopping server waits for writes in progress (see the module docstring)
logger = logging.getLogger(__name__)
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_WILDCARD = ("0.0.0.0", "::", "")


# --- the hub ----------------------------------------------------------------------------------------


class UnknownToken(KeyError):
    """No live episode has this token (never issued, or closed).  The message never holds it."""

    def __init__(self) -> None:
        super().__init__("no live episode has this token")


class UnknownSession(SessionError):
    code = ServerErrorCode.UNKNOWN_SESSION


@dataclass(frozen=True)
class _Entry:
    session: Session
    client_id: str


def _token_digest(meta: dict) -> bytes | None:
    """The token digest a session's meta.json keeps, if it holds one (a SHA-256 in hex)."""
    digest = meta.get("token_sha256")
    if not isinstance(digest, str) or len(digest) != 64:
        return None
    try:
        return bytes.fromhex(digest)
    except ValueError:
        return None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class _Writes:
    """The hub's writes into its folders in progress, counted so that a stopping server can
    wait for them before it lets go of its state folder (see the module docstring)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._stopped = False
        self._when_done: list[Callable[[], None]] = []

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        """Around one write; refused (:class:`SessionError`) once :meth:`stop` was called."""
        with self._changed:
            if self._stopped:
                raise SessionError("the server is stopping and writes nothing more: this may not be kept; send it "
                                   "again once the server is back if it is not")
            self._running += 1
        try:
            yield
        finally:
            done: list[Callable[[], None]] = []
            with self._changed:
                self._running -= 1
                if not self._running:
                    done, self._when_done = self._when_done, []
                self._changed.notify_all()
            for callback in done:
                callback()

    def stop(self, timeout: float, then: Callable[[], None]) -> int:
        """Refuse new writes; wait up to ``timeout`` seconds for those running; run ``then`` once
        none runs (here, or in the thread that finishes the last).  How many still run."""
        with self._changed:
            self._stopped = True
            self._changed.wait_for(lambda: not self._running, timeout)
            left = self._running
            if left:
                self._when_done.append(then)
        if not left:
            then()
        return left


class EpisodeHub:
    """Live episodes, each behind its own bearer token.  Safe to use from several threads.

    ``state``: a folder where each session keeps its calls (see :mod:`mcp_client.sessions`);
    a hub created on a folder that already holds sessions resumes them, tokens included
    (the folder keeps each token's SHA-256, never the token); a session settled before
    it started is not replayed, only listed (a :class:`~mcp_client.sessions.SettledSession`)
    and its token refused saying its episode ended; one that settles while it runs is
    swapped for that record too.  ``out``: where settled
    sessions write their trial folders.  Without either, sessions live in memory only and
    settle without writing (a throwaway hub for tests and benchmarks).  ``calibration``
    grades settled sessions (default: the bundled public calibration, else each cell is
    calibrated on the spot).
    """

    def __init__(self, *, state: str | Path | None = None, out: str | Path | None = None,
                 calibration: tuple[dict[str, Any] | None, str | None] | None = None, fsync: bool = True,
                 write_trials: bool = True) -> None:
        self._entries: dict[bytes, _Entry] = {}
        # Tokens whose episode ended (at the horizon, or by the operator): refused like any other,
        # but the refusal says the episode is over instead of asking for authentication.
        self._ended: set[bytes] = set()
        self._sessions: dict[str, Session | SettledSession] = {}
        self._by_episode: dict[int, Session] = {}
        self.set_aside: dict[Path, str] = {}  # session folders not resumed, and why (see _restore)
        self._set_aside_tokens: set[bytes] = set()
        self._lock = threading.Lock()
        self._writes = _Writes()
        self._numbers = itertools.count(1)
        self.state = None if state is None else Path(state)
        self.out = None if out is None else Path(out)
        self.fsync = fsync
        if self.out is None and self.state is not None and write_trials:
            self.out = self.state / "trials"
        self.calibration, self.calibration_hash = calibration if calibration is not None else public_calibration()
        if self.state is not None:
            (self.state / "sessions").mkdir(parents=True, exist_ok=True)
            self._restore()
        # Sessions a previous server settled: their folders were not written by this one.
        self.settled_at_start = frozenset(s.id for s in self._sessions.values() if s.settled)

    # --- opening and restoring ---

    def _restore(self) -> None:
        """Resume every live session of the state folder; list the settled ones without
        replaying them.  One that cannot be resumed (its task file changed or was removed,
        its log or its trial folder is unreadable) is set aside, named in :attr:`set_aside`
        with why, and not served (its token is refused saying so): the others are served as ever."""
        assert self.state is not None
        for folder in sorted((self.state / "sessions").iterdir()):
            if not (folder / "meta.json").is_file():
                continue
            digest = None
            try:
                meta = read_meta(folder)
                digest = _token_digest(meta)
                kept: Session | SettledSession | None = read_settled(folder, meta)
                if kept is None:
                    kept = self._replay(folder, meta)
            except (StoreBenchError, ValueError, OSError) as exc:  # a refusal, bad JSON, an unreadable file
                reason = exc.message if isinstance(exc, StoreBenchError) else f"{type(exc).__name__}: {exc}"
                self.set_aside[folder] = reason
                logger.error("session %s not resumed: %s", folder.name, reason)
                if digest is not None:
                    with self._lock:
                        self._set_aside_tokens.add(digest)
                continue
            with self._lock:
                if isinstance(kept, SettledSession):
                    self._sessions[kept.id] = kept
                else:
                    self._track(kept)
                if digest is None:
                    continue
                if isinstance(kept, Session) and not (folder / "revoked").exists():
                    self._entries[digest] = _Entry(kept, f"episode-{kept.id}")
                else:
                    self._ended.add(digest)

    def _replay(self, folder: Path, meta: dict) -> Session | SettledSession:
        """A session rebuilt from its log: live, or settled now if it ended just before the
        restart, or settled by a server from before ``ended.json`` (which is written now, so
        the next start does not replay it); a settled one is kept as its record only."""
        session, _digest = restore_session(folder, out=self.out, calibration=self.calibration,
                                           calibration_hash=self.calibration_hash, fsync=self.fsync, meta=meta)
        if session.episode.over and not session.settled:
            session.end()  # reached its horizon, or was stopped, just before the restart: settle now
        if not session.settled:
            return session
        if not (folder / ENDED).exists():
            try:
                write_ended(session)
            except OSError as exc:  # served all the same; the next start replays it again
                logger.warning("session %s: %s could not be written (%s); the next start replays it again",
                               folder.name, ENDED, exc.strerror or exc)
        return session.settled_record()

    def _track(self, session: Session) -> None:
        self._sessions[session.id] = session
        self._by_episode[id(session.episode)] = session

    def open_session(self, task: str | Task, seed: int, *, labels: dict | None = None) -> tuple[str, Session]:
        """Arm ``task`` at ``seed`` as a graded session; return a fresh token for it, and the session."""
        task_id = task if isinstance(task, str) else task.id
        token = secrets.token_urlsafe(32)
        with self._writes.one():
            session = Session.open(task_id, seed, out=self.out,
                                   state_root=None if self.state is None else self.state / "sessions",
                                   labels=labels, calibration=self.calibration,
                                   calibration_hash=self.calibration_hash, token_digest=_digest(token).hex(),
                                   fsync=self.fsync)
        with self._lock:
            self._track(session)
            self._entries[_digest(token)] = _Entry(session, f"episode-{session.id}")
        return token, session

    def open(self, task: str | Task, seed: int) -> tuple[str, Episode]:
        """Arm ``task`` at ``seed``; return a fresh token for it, and the episode."""
        if isinstance(task, str):
            token, session = self.open_session(task, seed)
            return token, session.episode
        from environment.api import arm

        episode = arm(task, seed, record=True)
        return self.add(episode), episode

    def add(self, episode: Episode) -> str:
        """Put an episode already armed behind a fresh token (in memory only); return the token."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            session = self._by_episode.get(id(episode))
            if session is None:
                session = Session(f"m{next(self._numbers)}", episode, None)
                self._track(session)
            self._entries[_digest(token)] = _Entry(session, f"episode-{session.id}-{next(self._numbers)}")
        return token

    # --- tokens ---

    def close(self, token: str) -> Episode:
        """Revoke ``token`` (its next request gets 401); return its episode, as played."""
        with self._lock:
            entry = self._entries.pop(_digest(token), None)
            if entry is not None:
                self._ended.add(_digest(token))
        if entry is None:
            raise UnknownToken()
        return entry.session.episode

    def episode_for(self, token: str) -> Episode:
        """The live episode behind ``token``; :class:`UnknownToken` if there is none."""
        return self._entry(token).session.episode

    def ended(self, token: str) -> str | None:
        """Why ``token`` is refused, when it is the token of an episode that has ended."""
        with self._lock:
            known = _digest(token) in self._ended
            aside = _digest(token) in self._set_aside_tokens
        if aside:
            return ("the episode behind this token could not be resumed when this server started (its operator's "
                    "log says why); ask the operator for a new episode and its token")
        return ("the episode behind this token has ended (it reached its horizon or the operator ended it) and is "
                "graded; ask the operator for a new episode and its token") if known else None

    def access_token(self, token: str) -> AccessToken | None:
        """What the verifier hands the SDK for ``token``, or ``None`` if it is not live."""
        try:
            entry = self._entry(token)
        except UnknownToken:
            return None
        # client_id is unique per token: the SDK binds a handshake-era session to it, so a
        # session opened with one token is refused to every other token.
        return AccessToken(token=token, client_id=entry.client_id, scopes=[])

    def episodes(self) -> list[Episode]:
        with self._lock:
            return [entry.session.episode for entry in self._entries.values()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _entry(self, token: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(_digest(token))
        if entry is None:
            raise UnknownToken()
        return entry

    # --- sessions (the operator's view) ---

    def after_call(self, episode: Episode) -> None:
        """The server's hook after every call (under the episode's lock): log it, settle at the horizon."""
        session = self._by_episode.get(id(episode))
        if session is not None:
            with self._writes.one():
                session.record()
                if session.settled:
                    self._revoke(session)

    def stop_writing(self, timeout: float, then: Callable[[], None]) -> int:
        """Refuse every write into the hub's folders from now on (a call's log and settlement, an
        operator's open, labels or end: :class:`SessionError`) and wait up to ``timeout`` seconds
        for those in progress; ``then()`` runs once none is left: at once, or in the thread that
        finishes the last one.  Returns how many were still running when the wait ended."""
        return self._writes.stop(timeout, then)

    def session(self, session_id: str) -> Session | SettledSession:
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise UnknownSession(f"no session {session_id!r}; list them with GET /operator/sessions")
        return session

    def sessions(self) -> list[Session | SettledSession]:
        """Every session, live and settled, in the order they were resumed or opened."""
        with self._lock:
            return list(self._sessions.values())

    def end(self, session_id: str, labels: dict | None = None) -> dict:
        """End a session now (the store freezes), settle it, revoke its token; its score."""
        session = self.session(session_id)
        if isinstance(session, SettledSession):  # settled before this server started: its token is refused already
            return session.end(labels)
        with self._writes.one():
            with lock_for(session.episode):
                result = session.end(labels, ended_by=ENDED_BY_OPERATOR)
            self._revoke(session)
        return result

    def set_labels(self, session_id: str, labels: dict) -> Session | SettledSession:
        """The operator's labels for a session (see :meth:`Session.set_labels`); the session."""
        session = self.session(session_id)
        with self._writes.one():
            session.set_labels(labels)
        return session

    def _revoke(self, session: Session) -> None:
        """Refuse ``session``'s tokens from now on; once it is settled, keep only its record
        (:class:`~mcp_client.sessions.SettledSession`), so a long-running server does not
        hold every episode it has served."""
        with self._lock:
            for digest in [d for d, e in self._entries.items() if e.session is session]:
                del self._entries[digest]
                self._ended.add(digest)
            if session.settled and self._sessions.get(session.id) is session:
                self._sessions[session.id] = session.settled_record()
                self._by_episode.pop(id(session.episode), None)
        if session.state is not None:
            try:
                (session.state / "revoked").touch()
            except OSError as exc:  # settled: its settled.json has the next start refuse its token all the same
                logger.warning("session %s: its revoked marker could not be written (%s)", session.id,
                               exc.strerror or exc)


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
            raise ToolError("episode_closed: this token's episode has ended (it reached its horizon or the "
                            "operator ended it) and is graded; no tool acts on it any more. Ask the operator "
                            "for a new episode and its token.") from None

    return current_episode


# --- the ASGI app --------------------------------------------------------------------------------------


def host_security(host: str, port: int | None, allowed_hosts: Iterable[str] = ()) -> TransportSecuritySettings | None:
    """Which ``Host`` (and ``Origin``) headers the MCP endpoint accepts.

    ``allowed_hosts`` are the names clients use to reach the server (``mcp.example.org``,
    ``mcp.example.org:8443``); a bare name also accepts any port.  Listening on loopback,
    the loopback names are accepted too (the SDK's default).  Listening on a wildcard
    address (``0.0.0.0``, ``::``) with no allowed host is refused: every real ``Host``
    header would be answered 421.
    """
    names = [h.strip() for h in allowed_hosts if h.strip()]
    if not names:
        if host in _LOOPBACK:
            return None  # the SDK's default for a loopback host: local Host and Origin headers only
        if host in _WILDCARD:
            raise ValueError(f"listening on {host} needs the host name(s) clients will use: give --allowed-host "
                             f"NAME (or set STOREBENCH_ALLOWED_HOSTS=name1,name2), else every request is refused "
                             "with 421")
        names = [f"[{host}]" if ":" in host else host]
    if host in _LOOPBACK:
        names += ["127.0.0.1", "localhost", "[::1]"]
    hosts: list[str] = []
    for name in names:
        hosts += [name] if _has_port(name) else [name, f"{name}:*"]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def _has_port(name: str) -> bool:
    return name.rsplit("]", 1)[-1].count(":") == 1


def authenticated_app(server: MCPServer, verifier: Any, *, host: str = "127.0.0.1", port: int | None = None,
                      json_response: bool = False,
                      transport_security: TransportSecuritySettings | None = None,
                      extra_routes: list[Route] | None = None, allowed_hosts: Iterable[str] = (),
                      max_sessions_per_token: int | None = None,
                      explain_refusal: Callable[[str], str | None] | None = None) -> Starlette:
    """``server`` over streamable HTTP at ``/mcp``, behind the SDK's bearer-token stack.

    The same wiring ``MCPServer.streamable_http_app()`` does for a server constructed with
    ``token_verifier=`` and ``auth=``, without the OAuth metadata routes.  Used for the
    store (:func:`create_app`) and for the benchmark's no-op server.  ``explain_refusal(token)``
    may give the reason a refused bearer token gets in its 401 instead of the SDK's generic one.
    """
    mcp_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=json_response,
        transport_security=transport_security or host_security(host, port, allowed_hosts),
        host=host,
    )
    session_manager = server.session_manager  # exists once streamable_http_app() was called
    if max_sessions_per_token is not None:
        limit_sessions_per_token(session_manager, max_sessions_per_token)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with session_manager.run():
            yield

    endpoint: Any = RequireAuthMiddleware(mcp_app, required_scopes=[])
    if explain_refusal is not None:
        endpoint = _ExplainedRefusal(endpoint, explain_refusal)
    return Starlette(
        routes=[Route(MCP_PATH, endpoint=endpoint), *(extra_routes or [])],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )


class _ExplainedRefusal:
    """ASGI: a request whose bearer token was refused gets the 401 the SDK would give, with
    ``explain(token)`` as its description when there is one (an ended episode's token)."""

    def __init__(self, app: Any, explain: Callable[[str], str | None]) -> None:
        self.app = app
        self.explain = explain

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not getattr(scope.get("user"), "is_authenticated", False):
            header = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
            scheme, _, token = header.partition(" ")
            reason = self.explain(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
            if reason is not None:
                response = JSONResponse({"error": "invalid_token", "error_description": reason}, status_code=401,
                                        headers={"WWW-Authenticate": f'Bearer error="invalid_token", '
                                                                     f'error_description="{reason}"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(hub: EpisodeHub, *, host: str = "127.0.0.1", port: int | None = None,
               json_response: bool = False, transport_security: TransportSecuritySettings | None = None,
               log_level: LogLevel = "WARNING", operator_token: str | None = None,
               allowed_hosts: Iterable[str] = (), max_sessions_per_token: int = ServerLimits.max_sessions_per_token
               ) -> Starlette:
    """The ASGI app serving every episode of ``hub`` at ``/mcp``, one token per episode.

    ``host`` and ``port`` are where clients reach the app; they only decide which ``Host``
    headers are accepted (loopback: the SDK's local-only default).  An app can be served
    once: its lifespan enters the SDK's session manager, which runs only once.  With
    ``operator_token`` the operator API (:mod:`mcp_client.operator`) is served under
    ``/operator`` behind that token; without it there is no such route.
    """
    server = build_server(episode_provider(hub), log_level=log_level, after_call=hub.after_call)
    routes = operator_routes(hub, operator_token) if operator_token else []
    return authenticated_app(server, HubTokenVerifier(hub), host=host, port=port,
                             json_response=json_response, transport_security=transport_security,
                             extra_routes=routes, allowed_hosts=allowed_hosts,
                             max_sessions_per_token=max_sessions_per_token, explain_refusal=hub.ended)


def mcp_url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{MCP_PATH}"


class CannotListen(StoreBenchError):
    """The address cannot be listened on: an unknown host, or a port in use."""

    code = ServerErrorCode.CANNOT_LISTEN


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: any free port), bound before uvicorn starts.

    Created with ``proto=IPPROTO_TCP`` on purpose: asyncio sets ``TCP_NODELAY`` on an accepted
    connection only when the socket says it is TCP (``asyncio.base_events._set_nodelay``), and
    ``socket.create_server`` leaves ``proto`` at 0.  Without it Nagle's algorithm meets the
    client's delayed ACK and every request takes about 44 ms on loopback instead of 1 to 2.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise CannotListen(f"--host {host!r} is not an address this machine can listen on ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise CannotListen(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port (0 picks a free "
                           "one) or --host") from None
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _uvicorn_server(app: Any, log_level: str, limits: ServerLimits | None = None) -> Any:
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level=log_level, access_log=False,
                                         timeout_graceful_shutdown=2, **(limits or ServerLimits()).uvicorn_options()))


@contextlib.contextmanager
def running(app: Any, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning",
            startup_timeout: float = 10.0, limits: ServerLimits | None = None) -> Iterator[int]:
    """Serve ``app`` with uvicorn on a background thread; yield the bound port; stop on exit."""
    sock = _bind(host, port)
    server = _uvicorn_server(app, log_level, limits)
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


def still_to_open(episodes: Iterable[tuple[str | Task, int]], resumed: Iterable[Any]) -> list[tuple[str | Task, int]]:
    """The ``--episode`` cells a start still has to open: a live session resumed from the
    state folder stands for one ``--episode`` of its cell, so a restarted server (the same
    command run again by its supervisor) does not open a new episode beside each resumed one."""
    left = list(episodes)
    for session in resumed:
        cell = (session.episode.task.id, session.episode.seed)
        for index, (task, seed) in enumerate(left):
            if ((task if isinstance(task, str) else task.id), seed) == cell:
                del left[index]
                break
    return left


def serve_http(host: str, port: int, episodes: Iterable[tuple[str | Task, int]], *,
               out: IO[str] | None = None, log_level: str = "warning", json_response: bool = False,
               state: str | Path | None = None, trials: str | Path | None = None,
               operator_token: str | None = None, allowed_hosts: Iterable[str] = (),
               limits: ServerLimits | None = None, fsync: bool = True, write_trials: bool = True) -> EpisodeHub:
    """Open ``episodes`` (``(task, seed)`` pairs), print each one's URL and token, serve until
    interrupted (Ctrl-C or SIGTERM: either returns normally); return the hub, whose episodes
    are as played (the caller settles them: :func:`settle_at_exit`).

    One line per episode on ``out`` (stdout by default)::

        short-runway seed 7  http://127.0.0.1:8765/mcp  Authorization: Bearer <token>

    ``state`` keeps every session's calls on disk and resumes the live ones at start (each
    stands for one of ``episodes`` of its cell: :func:`still_to_open`);
    ``trials`` is where settled sessions write their folders (default ``STATE/trials``; none
    with ``write_trials=False``);
    ``operator_token`` serves the operator API (a line names its URL, never the token).
    Once uvicorn has stopped, it waits for calls and operator requests still writing (up to
    :data:`WRITES_GRACE` seconds) before it lets go of ``state`` (see the module docstring).
    """
    out = out or sys.stdout
    limits = limits or ServerLimits()
    host_security(host, port, allowed_hosts)  # refuse a wildcard bind without host names before binding
    with _held_state(state) as held:
        sock = _bind(host, port)
        bound = sock.getsockname()[1]
        hub = EpisodeHub(state=state, out=trials, fsync=fsync, write_trials=write_trials)
        for folder, reason in hub.set_aside.items():
            print(f"not resumed: session {folder.name}: {reason}; its calls stay in {folder / 'calls.jsonl'} (move "
                  f"the folder out of {folder.parent} once it is no longer wanted)", file=out, flush=True)
        app = create_app(hub, host=host, port=bound, json_response=json_response, operator_token=operator_token,
                         allowed_hosts=allowed_hosts, max_sessions_per_token=limits.max_sessions_per_token)
        url = mcp_url(host, bound)
        resumed = [s for s in hub.sessions() if isinstance(s, Session) and not s.settled]
        if resumed:
            print(f"resumed {len(resumed)} live session(s) from {state}", file=out, flush=True)
        for session in resumed:
            print(f"{session.episode.task.id} seed {session.episode.seed}  {url}  session {session.id}, resumed: "
                  "its token is the one printed when it was opened", file=out, flush=True)
        opening = still_to_open(episodes, resumed)
        for task, seed in opening:
            token, episode = hub.open(task, seed)
            print(f"{episode.task.id} seed {seed}  {url}  Authorization: Bearer {token}", file=out, flush=True)
        if operator_token and not resumed and not opening:  # no line above named the MCP endpoint
            print(f"MCP  {url}  (no episode yet: opening one on {OPERATOR_PATH}/sessions answers with its token)",
                  file=out, flush=True)
        if operator_token:
            print(f"operator API  {url[:-len(MCP_PATH)]}{OPERATOR_PATH}/sessions", file=out, flush=True)
        try:
            with _stop_signals_kept():
                _uvicorn_server(app, log_level, limits).run(sockets=[sock])
        finally:
            sock.close()
            held.handed_over = True  # released by the last write still running, if any
            try:
                left = hub.stop_writing(WRITES_GRACE, then=held.release)
            except BaseException:  # interrupted while waiting (a second Ctrl-C): the lock is not left held
                held.release()
                raise
            if left:
                logger.error("%d call(s) or operator request(s) were still writing after the server stopped; "
                             "gave up waiting after %.0f s%s", left, WRITES_GRACE,
                             f" (the lock on --state {state} is kept until they finish, or until the process "
                             "ends)" if state is not None else "")
        return hub


class _StateLock:
    """The ``flock`` a server holds on ``STATE/lock`` (none without a state folder)."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd
        self._guard = threading.Lock()
        self.handed_over = False  # released by whom it was handed to (serve_http), not by _held_state

    def release(self) -> None:
        """Let go of the lock (once; from any thread)."""
        with self._guard:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # and with it the lock


@contextlib.contextmanager
def _held_state(state: str | Path | None) -> Iterator[_StateLock]:
    """Lock ``state`` for this server while the block runs (nothing to lock without one): two
    servers on one state folder would each resume its sessions and take their tokens, and a
    later start would replay both servers' calls into one store.  The lock is an ``flock`` on
    ``STATE/lock``, so it also goes with the process if it is killed.  It is released when the
    block ends unless the block handed it over (``handed_over``): :func:`serve_http` has it
    released once no write of its hub runs (see the module docstring)."""
    if state is None:
        yield _StateLock(None)
        return
    Path(state).mkdir(parents=True, exist_ok=True)
    fd = os.open(Path(state) / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    held = _StateLock(fd)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionError(f"--state {state} is in use by another storebench mcp server; stop it first, or give "
                               "this one another --state folder") from None
        yield held
    finally:
        if not held.handed_over:
            held.release()


@contextlib.contextmanager
def _stop_signals_kept() -> Iterator[None]:
    """While uvicorn serves, SIGINT and SIGTERM only stop it, so that the caller settles and reports.

    uvicorn catches both to shut down gracefully, then puts back the handlers it found and
    raises the signal again: with Python's defaults a SIGTERM then killed the process before
    the open sessions were settled (their trial folders lost), and a SIGINT left as a
    ``KeyboardInterrupt``.  The handlers installed here are the ones it puts back: they note
    nothing and return, so :func:`serve_http` returns normally.  Main thread only (signals
    cannot be handled elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stopped(_sig: int, _frame: Any) -> None:
    """The signal handler uvicorn re-raises into once it has shut down: the server has stopped already."""


def settle_at_exit(hub: EpisodeHub, *, durable: bool, err: IO[str] | None = None) -> list[Session]:
    """After :func:`serve_http` returns (Ctrl-C, SIGTERM): settle the sessions still open unless
    ``durable`` (a ``--state`` folder keeps them for the next start), and say on ``err``
    (stderr) where each trial folder settled in this run went, as stdio's ``storebench mcp``
    does: ``storebench: wrote <folder> (composite 0.512)``.  Returns the sessions settled now."""
    err = err or sys.stderr
    settled_now = []
    for session in hub.sessions():
        if durable or not isinstance(session, Session) or session.settled:
            continue
        try:
            with lock_for(session.episode):  # a call still running on a worker thread finishes first
                session.end(ended_by=ENDED_BY_SERVER)
        except StoreBenchError as exc:  # this one is not settled; the others still are
            print(f"storebench: session {session.id} ({session.episode.task.id} seed {session.episode.seed}) was not "
                  f"settled: {exc.message}", file=err, flush=True)
            continue
        settled_now.append(session)
    for session in hub.sessions():
        if session.settled and session.result and session.result.get("out") and session.id not in hub.settled_at_start:
            print(f"storebench: wrote {session.result['out']} (composite {session.result['reward_composite']:.3f})",
                  file=err, flush=True)
    live = [s for s in hub.sessions() if not s.settled]
    if durable and live:
        print(f"storebench: {len(live)} live session(s) kept in {hub.state}; start the server again with --state "
              f"{hub.state} to resume them", file=err, flush=True)
    return settled_now

"""What keeps the HTTP episode server up: connection, header, idle and per-token limits.

Without a token a client can still open sockets.  uvicorn times out an idle
keep-alive connection only after it has answered a request, and never a connection
that has sent nothing or only part of its headers; when file descriptors run out the
server stops accepting.  So:

* **header timeout**: every connection must deliver a complete request head within
  ``header_timeout`` seconds of connecting, or of its previous response; otherwise
  it is closed.  :func:`guarded_h11` builds uvicorn's h11 protocol with that timer;
* **idle keep-alive**: uvicorn's ``timeout_keep_alive`` closes a connection idle
  after a response;
* **connection bound**: at most ``max_connections`` open connections (by default half
  the process's file-descriptor limit, at most 1,000); a connection beyond the bound
  is closed at once, so descriptors never run out and the live episodes stay served
  once the excess has gone;
* **request size**: h11's ``max_incomplete_event_size`` bounds a request head
  (``max_header_bytes``); the SDK bounds bodies (4 MiB);
* **sessions per token**: a handshake-era MCP session (``Mcp-Session-Id``) is owned by
  the token that opened it; one token may hold at most ``max_sessions_per_token`` live
  sessions (503 beyond), so it cannot fill the server's table (10,000) and lock other
  episodes out.  :func:`limit_sessions_per_token` adds the check to the SDK's session
  manager.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger(__name__)

__all__ = ["ServerLimits", "guarded_h11", "limit_sessions_per_token"]


def _default_max_connections() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, min(1000, soft // 2))


@dataclass(frozen=True)
class ServerLimits:
    header_timeout: float = 10.0
    keep_alive_timeout: int = 5
    max_connections: int = field(default_factory=_default_max_connections)
    max_header_bytes: int = 64 * 1024
    max_sessions_per_token: int = 8

    def uvicorn_options(self) -> dict[str, Any]:
        return {"http": guarded_h11(self), "timeout_keep_alive": self.keep_alive_timeout,
                "h11_max_incomplete_event_size": self.max_header_bytes}


def guarded_h11(limits: ServerLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the header timeout and the connection bound of ``limits``."""

    class GuardedH11(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections:
                transport.abort()
                return
            self._arm_head_timer()

        def _arm_head_timer(self) -> None:
            self._cancel_head_timer()
            self._head_timer = self.loop.call_later(limits.header_timeout, self._head_timed_out)

        def _cancel_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.abort()

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:  # a complete request head arrived
                self._cancel_head_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_head_timer()
            super().connection_lost(exc)

    return GuardedH11


def limit_sessions_per_token(manager: Any, per_token: int) -> None:
    """Refuse a new handshake session to a token that already holds ``per_token`` live ones.

    Wraps the SDK session manager's admission step (``_admit_session``, which registers a
    session and its owner); the SDK answers a refusal with 503 "Too many open sessions".
    """
    admit = getattr(manager, "_admit_session", None)
    owners = getattr(manager, "_session_owners", None)
    live = getattr(manager, "_server_instances", None)
    if admit is None or owners is None or live is None:
        raise RuntimeError("this MCP SDK's session manager has no _admit_session/_session_owners/_server_instances; "
                           "the per-token session limit cannot be enforced")

    def admit_within_limit(requestor: Any) -> Any:
        if requestor is not None:
            held = sum(1 for sid, owner in owners.items() if owner == requestor and sid in live)
            if held >= per_token:
                # The SDK logs this refusal as if the server were full: say what it is.
                logger.warning("refusing a new MCP session to %s: it holds %d live sessions, the limit per token "
                               "(a client frees one with HTTP DELETE and its Mcp-Session-Id; idle ones close "
                               "after 30 minutes)", getattr(requestor, "client_id", "a token"), held)
                return None
        return admit(requestor)

    manager._admit_session = admit_within_limit

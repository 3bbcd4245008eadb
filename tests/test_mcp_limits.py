"""The HTTP episode server stays up for everyone: sockets, headers, sessions, host names.

Served by uvicorn on a loopback port with :class:`mcp_client.limits.ServerLimits`; raw
sockets play the misbehaving clients.  No timing is asserted: waits poll until the
expected state is reached (or a generous deadline says it never was).
"""
from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mcp_client.client import episode_client
from mcp_client.http import EpisodeHub, create_app, host_security, mcp_url, running
from mcp_client.limits import ServerLimits

REPO = Path(__file__).resolve().parent.parent
TASK = "short-runway"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "limits-test", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def call_status(url: str, token: str):
    async def go():
        async with episode_client(url, token=token) as client:
            return await client.call("store_status")

    return asyncio.run(go())


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True


def wait_until(predicate, deadline: float = 60.0) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def idle_sockets(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        socks.append(s)
    return socks


def test_300_idle_sockets_cannot_take_the_server_down():
    hub = EpisodeHub()
    token, _ = hub.open(TASK, 7)
    with running(create_app(hub), limits=ServerLimits(header_timeout=1.0)) as port:
        url = mcp_url("127.0.0.1", port)
        socks = idle_sockets(port, 300)
        try:
            assert not call_status(url, token).is_error  # served while 300 sockets sit idle
            assert wait_until(lambda: all(closed_by_server(s) for s in socks))  # and every idle one is dropped
            assert not call_status(url, token).is_error
        finally:
            for s in socks:
                s.close()


def test_connections_beyond_the_bound_are_closed_at_once_and_the_rest_stay_served():
    hub = EpisodeHub()
    token, _ = hub.open(TASK, 7)
    with running(create_app(hub), limits=ServerLimits(header_timeout=600, max_connections=40)) as port:
        url = mcp_url("127.0.0.1", port)
        socks = idle_sockets(port, 100)
        try:
            assert wait_until(lambda: sum(closed_by_server(s) for s in socks) >= 60)
            still_open = [s for s in socks if not closed_by_server(s)]
            assert len(still_open) == 40  # the bound, exactly: no more descriptors than that are held
            for s in still_open:
                s.close()
            assert wait_until(lambda: not call_status(url, token).is_error, deadline=30)
        finally:
            for s in socks:
                s.close()


def test_a_slow_header_is_cut_off_and_an_oversized_one_refused():
    hub = EpisodeHub()
    with running(create_app(hub), limits=ServerLimits(header_timeout=1.0, max_header_bytes=8192)) as port:
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
        slow.setblocking(False)
        assert wait_until(lambda: closed_by_server(slow))
        slow.close()
        with httpx.Client(timeout=30) as client:
            try:  # h11 refuses a head over the bound: 400, or the connection is cut while we still send
                refused = client.post(f"http://127.0.0.1:{port}/mcp", headers={"X-Padding": "a" * 400_000},
                                      json={}).status_code in (400, 431)
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
                refused = True
            assert refused
            assert client.post(f"http://127.0.0.1:{port}/mcp", json={}).status_code == 401  # a normal head is read


def test_one_token_cannot_exhaust_another_tokens_sessions():
    hub = EpisodeHub()
    token_a, _ = hub.open(TASK, 7)
    token_b, _ = hub.open(TASK, 8)
    with running(create_app(hub, max_sessions_per_token=3)) as port:
        url = mcp_url("127.0.0.1", port)
        with httpx.Client(timeout=30) as client:
            def initialize(token: str) -> httpx.Response:
                return client.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})

            opened = [initialize(token_a) for _ in range(3)]
            assert [r.status_code for r in opened] == [200] * 3
            assert len({r.headers["mcp-session-id"] for r in opened}) == 3
            assert initialize(token_a).status_code == 503  # A is at its limit
            b = initialize(token_b)
            assert b.status_code == 200 and b.headers["mcp-session-id"]  # B is not affected
            # A ends one session (DELETE) and may open another.
            ended = client.delete(url, headers={**HEADERS, "Authorization": f"Bearer {token_a}",
                                                "mcp-session-id": opened[0].headers["mcp-session-id"]})
            assert ended.status_code == 200
            assert initialize(token_a).status_code == 200


def test_allowed_hosts_serve_a_real_host_name_and_refuse_others():
    hub = EpisodeHub()
    token, _ = hub.open(TASK, 7)
    app = create_app(hub, host="0.0.0.0", allowed_hosts=["mcp.example.org"])
    with running(app) as port, httpx.Client(timeout=30) as client:
        url = f"http://127.0.0.1:{port}/mcp"
        auth = {**HEADERS, "Authorization": f"Bearer {token}"}
        assert client.post(url, json=INITIALIZE, headers={**auth, "Host": "mcp.example.org"}).status_code == 200
        assert client.post(url, json=INITIALIZE, headers={**auth, "Host": "mcp.example.org:443"}).status_code == 200
        assert client.post(url, json=INITIALIZE, headers={**auth, "Host": "evil.example"}).status_code == 421


def test_a_wildcard_bind_without_a_host_name_is_refused_with_advice():
    with pytest.raises(ValueError, match="--allowed-host"):
        host_security("0.0.0.0", 8765, [])
    out = subprocess.run([sys.executable, "-m", "mcp_client", "mcp", "--http", "--host", "0.0.0.0", "--port", "0",
                          "--episode", f"{TASK}:7"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--allowed-host" in out.stderr

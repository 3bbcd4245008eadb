"""The episode hub over streamable HTTP: one bearer token per episode, over a real socket.

uvicorn serves :func:`mcp_client.http.create_app` on a free loopback port, on a background
thread, for the whole module; the SDK's own streamable HTTP client talks to it (both
protocol eras: ``auto`` negotiates 2026-07-28, ``legacy`` the initialize handshake with an
``Mcp-Session-Id``).  Episodes are opened on the live hub by each test.  What is checked:
a token reaches its own episode and no other, whatever the arguments say; no token, a
made-up token and a closed token get 401; a handshake session cannot be borrowed by
another token; only ``/mcp`` exists; and the same calls over HTTP and in process leave
byte-identical ledgers.  pytest-asyncio is not installed: each test drives its client
with ``asyncio.run``.
"""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from environment.api import arm
from environment.engine import Episode
from environment.engine.state import OrderState
from environment.tools.registry import REGISTRY
from mcp_client.client import CallOutcome, ServerUnreachable, TokenRefused, episode_client
from mcp_client.http import EpisodeHub, UnknownToken, create_app, mcp_url, running
from mcp_client.server import build_server

TASK = "short-runway"
SEED_A, SEED_B = 7, 8
REPO_ROOT = Path(__file__).resolve().parent.parent
MODES = ["auto", "legacy"]
ACCEPT = "application/json, text/event-stream"


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def hub() -> EpisodeHub:
    return EpisodeHub()


@pytest.fixture(scope="module")
def url(hub):
    with running(create_app(hub)) as port:
        yield mcp_url("127.0.0.1", port)


@pytest.fixture
def pair(hub):
    """Two fresh episodes (different seeds) behind their own tokens, closed afterwards."""
    token_a, a = hub.open(TASK, SEED_A)
    token_b, b = hub.open(TASK, SEED_B)
    yield token_a, a, token_b, b
    for token in (token_a, token_b):
        try:
            hub.close(token)
        except UnknownToken:
            pass


def header_of(text: str) -> str:
    return text.partition("\n")[0]


def counters(ep: Episode) -> tuple[int, int, int]:
    return ep.ops_left, ep.calls, len(ep.action_log)


async def statuses_of_attempt(url: str, headers: dict[str, str],
                              mode: str = "auto") -> tuple[list[int], BaseException | None]:
    """Connect with the SDK's streamable HTTP client and list tools; return every HTTP status
    the server answered, and what the client raised (it reports a refused request as a
    generic MCPError, so the statuses are read off the wire with an httpx2 event hook)."""
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    error: BaseException | None = None
    async with httpx2.AsyncClient(headers=headers, timeout=10, event_hooks={"response": [record]}) as http:
        try:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                await client.list_tools()
        except BaseException as exc:  # an ExceptionGroup from the transport's task group
            error = exc
    return statuses, error


# --- the hub ------------------------------------------------------------------------------------------


def test_hub_tokens_are_unguessable_and_one_per_episode():
    hub = EpisodeHub()
    episode = arm(TASK, SEED_A)
    tokens = [hub.add(episode) for _ in range(5)]
    assert len(set(tokens)) == 5
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", t) for t in tokens)  # token_urlsafe(32): 256 bits
    assert all(hub.episode_for(t) is episode for t in tokens)
    assert len({hub.access_token(t).client_id for t in tokens}) == 5  # sessions bind to the token
    assert hub.close(tokens[0]) is episode
    with pytest.raises(UnknownToken) as caught:
        hub.episode_for(tokens[0])
    assert tokens[0] not in str(caught.value)
    with pytest.raises(UnknownToken):
        hub.close(tokens[0])
    assert hub.access_token(tokens[0]) is None and hub.access_token("made-up") is None
    assert len(hub) == 4
    assert tokens[1] not in repr(hub.__dict__)  # the hub keeps digests, not tokens


# --- (a) token A reaches A -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_token_a_reaches_a_and_only_a(url, pair, mode):
    token_a, a, _token_b, b = pair
    b_before = counters(b)

    async def go():
        async with episode_client(url, token=token_a, mode=mode) as client:
            names = await client.tool_names()
            before = counters(a)
            status = await client.call("store_status")
            after_status = counters(a)
            status_header = a.header_line()
            orders = await client.call("list_orders", {"page_size": 5})
            return names, before, status, after_status, status_header, orders

    names, before, status, after_status, status_header, orders = run(go())
    assert len(names) == 29 and set(names) == set(REGISTRY)
    assert not status.is_error and after_status[:2] == before[:2]  # store_status is free: no operation spent
    assert header_of(status.text) == status_header
    assert not orders.is_error
    assert counters(a) == (before[0] - 1, before[1] + 1, after_status[2] + 1)  # exactly one operation, on A
    assert header_of(orders.text) == a.header_line() and f"operations left {before[0] - 1} of" in orders.text
    assert a.action_log[-1]["tool"] == "list_orders" and a.action_log[-1]["arguments"] == {"page_size": 5}
    assert counters(b) == b_before  # none on B
    for outcome in (status, orders):
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC \| window \d+ of \d+ \| operations left ", outcome.text)


@pytest.mark.parametrize("mode", MODES)
def test_each_token_gets_its_own_episodes_brief(url, hub, mode):
    from environment.brief import brief

    token_a, a = hub.open("short-runway", 7)
    token_b, b = hub.open("steady", 7)

    async def seen(token):
        async with episode_client(url, token=token, mode=mode) as client:
            c = client.client
            prompt = await c.get_prompt("brief")
            resource = await c.read_resource("storebench://brief")
            return c.instructions, prompt.messages[0].content.text, resource.contents[0].text

    try:
        for token, ep in ((token_a, a), (token_b, b)):
            assert set(run(seen(token))) == {brief(ep.task)}
        assert brief(a.task) != brief(b.task)
    finally:
        hub.close(token_a)
        hub.close(token_b)


# --- (b) token B reaches B ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_token_b_sets_a_price_on_b_only(url, pair, mode):
    token_a, a, token_b, b = pair
    product = b.products[0].id
    prices_a = [v.price for v in a.product_by_id[product].variants]
    a_before = counters(a)
    assert 4950 not in [v.price for v in b.product_by_id[product].variants]

    async def go():
        async with episode_client(url, token=token_b, mode=mode) as client:
            return await client.call("set_price", {"product_id": product, "price": "49.50"})

    outcome = run(go())
    assert not outcome.is_error, outcome.text
    assert header_of(outcome.text) == b.header_line()
    assert json.loads(outcome.text.partition("\n")[2])["new_price"] == "49.50"
    assert {v.price for v in b.product_by_id[product].variants} == {4950}
    assert [v.price for v in a.product_by_id[product].variants] == prices_a  # A's price unchanged
    assert counters(a) == a_before
    assert b.action_log[-1]["tool"] == "set_price"


def test_no_argument_can_pick_another_episode(url, pair):
    """An argument naming A's token or episode is an unknown argument to B's tools: the core
    refuses it on B (and meters it there); A is untouched."""
    token_a, a, token_b, b = pair
    a_before, b_before = counters(a), counters(b)

    async def go():
        async with episode_client(url, token=token_b) as client:
            return [await client.call("list_orders", extra)
                    for extra in ({"token": token_a}, {"episode": "episode-1"}, {"_meta": {"token": token_a}})]

    outcomes = run(go())
    assert all(o.is_error and "invalid_argument" in o.text for o in outcomes), outcomes
    assert header_of(outcomes[-1].text.split("\n", 1)[1]) == b.header_line()
    assert counters(a) == a_before
    assert counters(b)[1] == b_before[1] + 3


def test_concurrent_clients_on_two_tokens_stay_apart(url, pair):
    """Twenty calls on each token at once, interleaved on the server: each lands on its own episode."""
    token_a, a, token_b, b = pair
    a_calls, b_calls = a.calls, b.calls

    async def one(token, n):
        async with episode_client(url, token=token) as client:
            return await asyncio.gather(*(client.call("list_orders", {"page_size": 1}) for _ in range(n)))

    async def go():
        return await asyncio.gather(one(token_a, 20), one(token_b, 12))

    out_a, out_b = run(go())
    assert not any(o.is_error for o in out_a + out_b)
    assert (a.calls, b.calls) == (a_calls + 20, b_calls + 12)


# --- (c) 401 ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_no_token_or_a_made_up_token_is_401(url, pair, mode):
    _token_a, a, _token_b, b = pair
    before = counters(a), counters(b)
    for headers in ({}, {"Authorization": "Bearer " + "x" * 43}, {"Authorization": "Basic dXNlcjpwYXNz"},
                    {"Authorization": "Bearer"}):
        statuses, error = run(statuses_of_attempt(url, headers, mode))
        assert statuses and set(statuses) == {401}, (headers, statuses)
        assert error is not None
    assert (counters(a), counters(b)) == before


def test_401_on_the_wire(url):
    """A raw POST without a token: 401, a Bearer challenge, and nothing behind it ran."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "store_status", "arguments": {}}}
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        response = httpx2.post(url, json=body, headers={"Accept": ACCEPT, **headers})
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
        assert response.json()["error"] == "invalid_token"


@pytest.mark.parametrize("mode", MODES)
def test_a_closed_token_is_401_even_mid_session(url, hub, mode):
    token, episode = hub.open(TASK, SEED_A)

    async def go():
        async with episode_client(url, token=token, mode=mode) as client:
            first = await client.call("list_orders", {"page_size": 1})
            hub.close(token)
            with pytest.raises(TokenRefused):
                await client.call("list_orders", {"page_size": 1})
            return first

    assert not run(go()).is_error
    assert episode.calls == 1  # the call after closing never reached the episode
    statuses, error = run(statuses_of_attempt(url, {"Authorization": f"Bearer {token}"}, mode))
    assert set(statuses) == {401} and error is not None


WHERE_TOKENS_COME_FROM = ("the token `storebench mcp --http` printed beside the episode's URL "
                          "(\"Authorization: Bearer ...\"), or the \"token\" the operator API answered when it "
                          "opened the session")


async def tool_names_with(url: str, token: str | None, mode: str) -> list[str]:
    async with episode_client(url, token=token, mode=mode) as client:
        return await client.tool_names()


@pytest.mark.parametrize("mode", MODES)
def test_the_client_says_a_made_up_token_was_refused(url, mode):
    with pytest.raises(TokenRefused) as caught:
        run(tool_names_with(url, "x" * 43, mode))
    assert str(caught.value) == (
        f"the MCP server at {url} refused the token (401 Unauthorized): it is not the token of a live episode on "
        f"that server. Check the token you passed: use {WHERE_TOKENS_COME_FROM}; a server restarted without "
        "--state has forgotten the tokens it issued before")


def test_the_client_says_no_token_was_sent(url):
    with pytest.raises(TokenRefused) as caught:
        run(tool_names_with(url, None, "auto"))
    assert str(caught.value) == (
        f"the MCP server at {url} refused the request (401 Unauthorized): no bearer token was sent. Pass the "
        f"episode's token, episode_client(url, token=...): {WHERE_TOKENS_COME_FROM}")


@pytest.mark.parametrize("mode", MODES)
def test_the_client_gives_the_servers_reason_when_the_episode_ended_mid_session(url, hub, mode):
    token, _episode = hub.open(TASK, SEED_A)

    async def go():
        async with episode_client(url, token=token, mode=mode) as client:
            await client.call("store_status")
            hub.close(token)
            await client.call("store_status")

    with pytest.raises(TokenRefused) as caught:
        run(go())
    assert str(caught.value) == (
        f"the MCP server at {url} refused the token (401 Unauthorized): the episode behind this token has ended "
        "(it reached its horizon or the operator ended it) and is graded; ask the operator for a new episode and "
        "its token")


def test_the_client_says_to_start_a_server_that_is_not_running():
    import socket

    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        dead = mcp_url("127.0.0.1", probe.getsockname()[1])
    with pytest.raises(ServerUnreachable) as caught:
        run(tool_names_with(dead, "any-token", "auto"))
    assert str(caught.value) == (
        f"cannot reach the MCP server at {dead} (connection refused): is it running? Start it with `storebench "
        "mcp --http --port PORT ...` (it prints each episode's URL and token), or check the URL's host and port")


def test_the_operator_api_says_which_token_it_wants_when_it_refuses_one():
    hub = EpisodeHub()
    with running(create_app(hub, operator_token="operator-secret-for-tests-0123456789")) as port:
        refused = httpx2.get(f"http://127.0.0.1:{port}/operator/sessions", headers={"Authorization": "Bearer wrong"})
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == (
        "the operator API refused the request (401): send the operator token the server was started with "
        "(--operator-token or STOREBENCH_OPERATOR_TOKEN) as \"Authorization: Bearer <token>\"; an episode's token "
        "is not accepted here")


def test_a_handshake_session_belongs_to_its_token(url, pair):
    """The SDK binds an Mcp-Session-Id to the credential that opened it (its client_id is
    unique per token): token B presenting A's session gets 404, as if it did not exist."""
    token_a, a, token_b, b = pair
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}}
    with httpx2.Client(timeout=10) as http:
        opened = http.post(url, json=init, headers={"Accept": ACCEPT, "Authorization": f"Bearer {token_a}"})
        assert opened.status_code == 200
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        common = {"Accept": ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
        borrowed = http.post(url, json=listing, headers={**common, "Authorization": f"Bearer {token_b}"})
        assert borrowed.status_code == 404
        unauthenticated = http.post(url, json=listing, headers=common)
        assert unauthenticated.status_code == 401
        http.delete(url, headers={**common, "Authorization": f"Bearer {token_a}"})


def test_only_mcp_is_routed(url, pair):
    token_a, *_ = pair
    base = url.removesuffix("/mcp")
    auth = {"Authorization": f"Bearer {token_a}"}
    for path in ("/", "/grade", "/calibration", "/reset", "/settle", "/docs", "/.well-known/oauth-protected-resource"):
        assert httpx2.get(base + path, headers=auth).status_code == 404, path
        assert httpx2.post(base + path, headers=auth, json={}).status_code == 404, path


# --- (d) HTTP and in process agree ---------------------------------------------------------------------------


def test_same_calls_over_http_and_in_process_give_byte_identical_ledgers(url, hub):
    token, over_http = hub.open(TASK, SEED_A)
    in_process, direct = arm(TASK, SEED_A), arm(TASK, SEED_A)
    order = next(o for o in sorted(over_http.orders.values(), key=lambda o: o.id)
                 if o.status == OrderState.OPEN and o.deadline > over_http.now
                 and o.variant.on_hand >= o.quantity)
    product = over_http.products[0].id
    script = [
        ("store_status", {}), ("list_products", {"page_size": 3, "sort": "price"}),
        ("get_product", {"product_id": product}), ("set_price", {"product_id": product, "price": "49.50"}),
        ("set_price", {"product_id": product, "price": "-3"}),  # refused by the core
        ("list_orders", {"page": "2"}),  # refused by the strict core (the SDK would coerce it)
        ("get_order", {"order_id": order.id}), ("fulfill_order", {"order_id": order.id}),
        ("finance_summary", {}), ("end_window", {}),
        ("list_orders", {"page_size": 5, "bogus": 1}),  # unknown argument: refused by the core
        ("search_supply_catalog", {"page_size": 2}), ("end_window", {}), ("end_window", {}),
        ("store_status", {}),
    ]

    async def play(target, **kwargs) -> list[CallOutcome]:
        async with episode_client(target, **kwargs) as client:
            return [await client.call(name, args) for name, args in script]

    http_out = run(play(url, token=token))
    memory_out = run(play(build_server(lambda: in_process)))
    direct_out = [direct.call(name, args) for name, args in script]
    hub.close(token)

    assert http_out == memory_out
    assert [o.is_error for o in http_out] == [not r.ok for r in direct_out]
    assert over_http.window == in_process.window == direct.window > 1  # the script ends windows
    ledger = over_http.ledger.to_jsonl()
    assert ledger and ledger.count("\n") > 1
    assert ledger.encode() == in_process.ledger.to_jsonl().encode() == direct.ledger.to_jsonl().encode()
    assert over_http.action_log == in_process.action_log == direct.action_log


# --- serve_http, as the CLI runs it ----------------------------------------------------------------------------


def test_serve_http_prints_a_line_per_episode_and_serves_them():
    code = ("from mcp_client.http import serve_http; "
            f"serve_http('127.0.0.1', 0, [({TASK!r}, {SEED_A}), ({TASK!r}, {SEED_B})])")
    process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        lines = [process.stdout.readline() for _ in range(2)]
        pattern = re.compile(rf"{TASK} seed (\d+)  (http://127\.0\.0\.1:\d+/mcp)  Authorization: Bearer (\S+)\n")
        parsed = [pattern.fullmatch(line) for line in lines]
        assert all(parsed), lines
        assert [int(m[1]) for m in parsed] == [SEED_A, SEED_B]
        (_, served_url, token_a), (_, _, token_b) = (m.groups() for m in parsed)
        twin_a, twin_b = arm(TASK, SEED_A), arm(TASK, SEED_B)

        async def go():
            for _ in range(200):  # the socket is bound before the lines are printed; wait for uvicorn
                statuses, _error = await statuses_of_attempt(served_url, {})
                if statuses:
                    break
                await asyncio.sleep(0.05)
            results = []
            for token in (token_a, token_b):
                async with episode_client(served_url, token=token) as client:
                    results.append(await client.call("store_status"))
            return results

        status_a, status_b = run(go())
        assert status_a == (False, twin_a.call("store_status").text())
        assert status_b == (False, twin_b.call("store_status").text())
    finally:
        process.terminate()
        process.wait(timeout=10)

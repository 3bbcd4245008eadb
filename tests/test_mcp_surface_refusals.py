"""Over MCP, every refusal is the core's: the store header, an error code, and the same cost.

The SDK's own argument validation never answers a call (the generated functions declare no
argument), so a bad argument, a missing one, an unknown one and an unknown tool all reach
``Episode.call``: the text is ``Error executing tool <name>: <code>: <message>``, then the
store header, then the core's error JSON, exactly what the Python API returns, whether or
not the store is still open.  A refused call spends one operation and is logged like any
other (``store_status`` and an unknown tool name are free, as in the core).

pytest-asyncio is not installed; the client is :class:`SyncEpisodeClient`.
"""
from __future__ import annotations

import asyncio
import json

import pytest

from environment.api import arm
from environment.engine import Episode
from environment.tools import REGISTRY
from mcp_client.client import SyncEpisodeClient, episode_client
from mcp_client.server import build_server, published_schema

TASK = "steady"  # 20 operations a window: no test here reaches the end of one
SEED = 7


@pytest.fixture
def ep() -> Episode:
    return arm(TASK, SEED)


@pytest.fixture
def client(ep):
    session = SyncEpisodeClient(build_server(lambda: ep))
    yield session
    session.close()


def parts(text: str) -> tuple[str, str, dict]:
    first, header, body = text.split("\n", 2)
    return first, header, json.loads(body)


BAD_CALLS = [
    ("get_product", {}, "product_id: is required"),
    ("list_orders", {"page": "abc"}, "page: input should be a valid integer"),
    ("list_orders", {"page": None}, "page: input should be a valid integer"),
    ("list_orders", {"page": 1.5}, "page: input should be a valid integer"),
    ("list_orders", {"page": "2"}, "page: input should be a valid integer"),
    ("list_orders", {"page_size": 0}, "page_size: input should be greater than or equal to 1"),
    ("get_product", {"product_id": "P" * 41}, "product_id: string should have at most 40 characters"),
    ("place_purchase_order", {"supply_product_id": "SP-0001", "quantity": -3},
     "quantity: input should be greater than or equal to 1"),
    ("place_purchase_order", {"quantity": -3},
     "supply_product_id: is required; quantity: input should be greater than or equal to 1"),
    ("list_orders", {"page_size": 5, "bogus": 1}, "bogus: unknown argument"),
]


@pytest.mark.parametrize("name, arguments, message", BAD_CALLS)
def test_a_bad_argument_is_the_cores_structured_error_with_the_header(ep, client, name, arguments, message):
    is_error, text = client.call(name, arguments)
    first, header, body = parts(text)
    assert is_error
    assert first == f"Error executing tool {name}: invalid_argument: {message}"
    assert header == ep.header_line()
    assert body["error"]["code"] == "invalid_argument" and body["error"]["message"] == message
    assert "pydantic" not in text and "validation error" not in text


@pytest.mark.parametrize("name, arguments, message", BAD_CALLS)
def test_a_bad_argument_reads_exactly_as_from_python(ep, client, name, arguments, message):
    twin = arm(TASK, SEED)
    _, text = client.call(name, arguments)
    direct = twin.call(name, arguments)
    assert text == f"Error executing tool {name}: invalid_argument: {message}\n{direct.text()}"
    assert ep.action_log == twin.action_log


@pytest.mark.parametrize("page", ["abc", 1.5, None, "2", 0])
def test_a_refused_page_costs_one_operation_and_is_logged(ep, client, page):
    ops, calls, log = ep.ops_left, ep.calls, len(ep.action_log)
    is_error, text = client.call("list_orders", {"page": page})
    assert is_error
    assert (ep.ops_left, ep.calls, len(ep.action_log)) == (ops - 1, calls + 1, log + 1)
    assert f"operations left {ops - 1} of 20" in text.split("\n")[1]
    assert ep.action_log[-1] == {"window": 1, "tool": "list_orders", "op": True,
                                 "arguments": {"page": page}, "ok": False, "error": "invalid_argument"}


def test_every_layer_charges_a_refusal_alike(ep, client):
    """The same refused calls cost the same through MCP and from Python."""
    twin = arm(TASK, SEED)
    for name, arguments, _ in BAD_CALLS:
        client.call(name, arguments)
        twin.call(name, arguments)
    assert (ep.ops_left, ep.calls) == (twin.ops_left, twin.calls) == (20 - len(BAD_CALLS), len(BAD_CALLS))


def test_a_refusal_of_the_schema_after_the_store_closed_is_store_closed_with_the_header(ep, client):
    ep.stop()
    log = len(ep.action_log)
    is_error, text = client.call("list_orders", {"page": "abc"})
    first, header, body = parts(text)
    assert is_error
    assert first.startswith("Error executing tool list_orders: store_closed: the shift has ended (stopped before the horizon)")
    assert header == ep.header_line()
    assert body["error"]["code"] == "store_closed"
    assert len(ep.action_log) == log + 1


def test_an_unknown_tool_is_the_cores_refusal_naming_the_tools(ep, client):
    is_error, text = client.call("no_such_tool", {})
    first, header, body = parts(text)
    message = "there is no tool 'no_such_tool'; the tools are: " + ", ".join(sorted(REGISTRY))
    assert is_error
    assert first == f"Error executing tool no_such_tool: unknown_tool: {message}"
    assert header == ep.header_line()
    assert body == {"error": {"code": "unknown_tool", "message": message, "details": {"tool": "no_such_tool"}}}


def test_an_unknown_tool_is_free_and_logged_as_in_the_core(ep, client):
    twin = arm(TASK, SEED)
    ops, calls = ep.ops_left, ep.calls
    client.call("no_such_tool", {"x": 1})
    twin.call("no_such_tool", {"x": 1})
    assert (ep.ops_left, ep.calls) == (ops, calls)
    assert ep.action_log == twin.action_log == [
        {"window": 1, "tool": "no_such_tool", "op": False, "arguments": {"x": 1}, "ok": False, "error": "unknown_tool"}]


def test_an_unknown_tool_runs_the_after_call_hook(ep):
    seen = []
    session = SyncEpisodeClient(build_server(lambda: ep, after_call=lambda e: seen.append(len(e.action_log))))
    try:
        session.call("no_such_tool", {})
    finally:
        session.close()
    assert seen == [1]


def test_an_unknown_tool_in_the_handshake_era_too(ep):
    async def go():
        async with episode_client(build_server(lambda: ep), mode="legacy") as c:
            return await c.call("no_such_tool")

    is_error, text = asyncio.run(go())
    assert is_error and text.startswith("Error executing tool no_such_tool: unknown_tool: there is no tool")
    assert text.split("\n")[1] == ep.header_line()


def test_the_published_schemas_are_still_the_cores(ep):
    async def go():
        async with episode_client(build_server(lambda: ep)) as c:
            return await c.list_tools()

    tools = asyncio.run(go())
    assert [t.name for t in tools] == list(REGISTRY)
    for tool in tools:
        assert tool.input_schema == REGISTRY[tool.name].input_schema() == published_schema(REGISTRY[tool.name])
        assert tool.input_schema["additionalProperties"] is False


def test_the_published_schema_keeps_the_sdks_key_order():
    """What tools/list sends is byte for byte what it sent when the SDK generated the schema
    from a signature: properties, required, type, additionalProperties."""
    schema = published_schema(REGISTRY["set_listing_status"])
    assert list(schema) == ["properties", "required", "type", "additionalProperties"]
    assert list(published_schema(REGISTRY["store_status"])) == ["properties", "type", "additionalProperties"]

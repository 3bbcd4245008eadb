"""The MCP adapter: the 29 core tools over MCP, their schemas and annotations, results and
refusals as an agent reads them, that the core (not the SDK) answers every bad argument, a
stdio round trip, and a latency measurement (printed, not asserted).

pytest-asyncio is not installed; each test drives its client with ``asyncio.run``.
"""
from __future__ import annotations

import asyncio
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp.server.mcpserver import MCPServer

from environment.api import arm
from environment.engine import Episode
from environment.engine.state import OrderState
from environment.tools.registry import REGISTRY, ToolKind
from mcp_client.client import CallOutcome, episode_client
from mcp_client.server import build_server

TASK = "short-runway"
SEED = 7
REPO_ROOT = Path(__file__).resolve().parent.parent
DESTRUCTIVE = {"dispose_stock", "cancel_order", "cancel_purchase_order"}


@pytest.fixture(scope="module")
def shared_ep() -> Episode:
    """For tests that only read schemas or call the free store_status."""
    return arm(TASK, SEED)


@pytest.fixture
def ep() -> Episode:
    return arm(TASK, SEED)


def run(coro):
    return asyncio.run(coro)


async def list_tools(server: MCPServer, mode: str = "auto"):
    async with episode_client(server, mode=mode) as client:
        return await client.list_tools()


async def call(server: MCPServer, name: str, arguments: dict | None = None, mode: str = "auto") -> CallOutcome:
    async with episode_client(server, mode=mode) as client:
        return await client.call(name, arguments)


def split(text: str) -> tuple[str, dict]:
    header, _, body = text.partition("\n")
    return header, json.loads(body)


# --- the tool list ---------------------------------------------------------------------------------


def test_tools_list_is_exactly_the_registry(shared_ep):
    tools = run(list_tools(build_server(lambda: shared_ep)))
    names = [t.name for t in tools]
    assert len(names) == 29
    assert len(set(names)) == 29
    assert set(names) == set(REGISTRY)


def test_no_grading_or_calibration_tool(shared_ep):
    tools = run(list_tools(build_server(lambda: shared_ep)))
    for tool in tools:
        for word in ("grade", "calibrat", "score"):
            assert word not in tool.name.lower(), tool.name


def test_the_brief_is_the_only_prompt_and_resource_and_the_instructions(shared_ep):
    from environment.brief import brief

    server = build_server(lambda: shared_ep)

    async def go():
        async with episode_client(server) as client:
            c = client.client
            prompt = await c.get_prompt("brief")
            resource = await c.read_resource("storebench://brief")
            return (c.instructions, (await c.list_resources()).resources, (await c.list_prompts()).prompts,
                    prompt.messages[0].content.text, resource.contents[0].text)

    instructions, resources, prompts, prompt_text, resource_text = run(go())
    expected = brief(shared_ep.task)
    assert instructions == prompt_text == resource_text == expected
    assert [p.name for p in prompts] == ["brief"]
    assert [str(r.uri) for r in resources] == ["storebench://brief"]


def test_an_unknown_prompt_is_the_clients_mistake_naming_the_prompts_there_are(shared_ep, caplog):
    from mcp import MCPError
    from mcp.types import INVALID_PARAMS

    async def go():
        async with episode_client(build_server(lambda: shared_ep)) as client:
            with pytest.raises(MCPError) as refused:
                await client.client.get_prompt("breif")
            return refused.value

    error = run(go())
    assert error.code == INVALID_PARAMS
    assert error.error.message == "Unknown prompt: 'breif'; this server has: brief"
    assert not [r for r in caplog.records if r.exc_info]  # no traceback logged for a client's typo


def test_input_schemas_are_the_core_schemas(shared_ep):
    tools = {t.name: t for t in run(list_tools(build_server(lambda: shared_ep)))}
    for name, spec in REGISTRY.items():
        published = tools[name].input_schema
        core = spec.input_schema()
        assert set(published["properties"]) == set(core["properties"]), name
        assert sorted(published.get("required", [])) == sorted(core.get("required", [])), name
        # Stronger: the whole schema (types, enums, bounds, defaults, descriptions,
        # additionalProperties: false) is the core's.
        assert published == core, name


def test_titles_descriptions_and_annotations_come_from_the_spec(shared_ep):
    tools = {t.name: t for t in run(list_tools(build_server(lambda: shared_ep)))}
    for name, spec in REGISTRY.items():
        tool = tools[name]
        assert tool.title == spec.title
        assert tool.description == spec.description and tool.description
        a = tool.annotations
        assert a is not None
        assert a.read_only_hint is spec.read_only is (spec.kind == ToolKind.READ and spec.free)
        assert a.destructive_hint is spec.destructive
        assert a.idempotent_hint is spec.idempotent_hint
        assert a.open_world_hint is False
        assert tool.output_schema is None  # text results only (structured_output=False)
    assert {n for n, t in tools.items() if t.annotations.destructive_hint} == DESTRUCTIVE
    # Annotations tell the truth about cost: every call but store_status spends an operation and
    # can end the window, so no other tool is read-only or idempotent.
    assert {n for n, t in tools.items() if t.annotations.read_only_hint} == {"store_status"}
    assert {n for n, t in tools.items() if t.annotations.idempotent_hint} == {"store_status"}
    for name, tool in tools.items():
        costs = "Costs one operation, as every call but store_status does" in tool.description
        assert costs is (name != "store_status"), name
    assert not tools["end_window"].annotations.read_only_hint
    assert not tools["set_price"].annotations.read_only_hint


def test_schemas_carry_the_store_bounds_and_describe_every_argument(shared_ep):
    from environment.tools.catalog import MAX_PRICE, MIN_PRICE

    tools = {t.name: t for t in run(list_tools(build_server(lambda: shared_ep)))}
    for name in ("set_price", "list_supply_product"):
        price = tools[name].input_schema["properties"]["price"]
        assert (price["minimum"], price["maximum"]) == (MIN_PRICE / 100, MAX_PRICE / 100)
    assert "account" in tools["ledger_entries"].input_schema["properties"]
    for name, tool in tools.items():
        for arg, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), f"{name}.{arg} has no description"


def test_a_price_outside_the_published_bounds_still_reaches_the_store_and_costs_an_operation(ep):
    product = ep.products[0].id
    calls = ep.calls
    is_error, text = run(call(build_server(lambda: ep), "set_price", {"product_id": product, "price": 1000.01}))
    assert is_error and "price_out_of_range" in text
    assert ep.calls == calls + 1


def test_annotations_on_the_wire_are_camel_case(shared_ep):
    tools = {t.name: t for t in run(list_tools(build_server(lambda: shared_ep)))}
    wire = tools["dispose_stock"].model_dump(by_alias=True, exclude_none=True)
    assert wire["annotations"] == {"readOnlyHint": False, "destructiveHint": True,
                                   "idempotentHint": False, "openWorldHint": False}
    assert wire["inputSchema"]["additionalProperties"] is False


# --- results ----------------------------------------------------------------------------------------


def test_store_status_is_the_core_text(shared_ep):
    before = shared_ep.calls
    is_error, text = run(call(build_server(lambda: shared_ep), "store_status"))
    assert not is_error
    direct = shared_ep.call("store_status")
    assert text == direct.text()
    header, body = split(text)
    assert header == shared_ep.header_line() and " UTC | window " in header
    assert body == direct.data
    assert shared_ep.calls == before  # free


def test_list_orders_spends_one_operation(ep):
    ops, calls, log = ep.ops_left, ep.calls, len(ep.action_log)
    is_error, text = run(call(build_server(lambda: ep), "list_orders", {"page_size": 5}))
    assert not is_error
    assert (ep.ops_left, ep.calls, len(ep.action_log)) == (ops - 1, calls + 1, log + 1)
    entry = ep.action_log[-1]
    assert (entry["tool"], entry["arguments"], entry["ok"]) == ("list_orders", {"page_size": 5}, True)
    header, body = split(text)
    assert f"operations left {ops - 1} of" in header
    assert body["page"] == 1 and len(body["rows"]) <= 5


def test_mcp_and_core_agree_call_for_call():
    """The same call sequence, through MCP on one episode and directly on a twin: same texts."""
    a, b = arm(TASK, SEED), arm(TASK, SEED)
    order = next(o for o in sorted(a.orders.values(), key=lambda o: o.id)
                 if o.status == OrderState.OPEN and o.deadline > a.now and o.variant.on_hand >= o.quantity)
    product = a.products[0].id
    script = [
        ("store_status", {}), ("list_products", {"page_size": 3, "sort": "price"}),
        ("get_product", {"product_id": product}), ("set_price", {"product_id": product, "price": "49.50"}),
        ("set_price", {"product_id": product, "price": "-3"}),  # refused by the core: out of range
        ("list_orders", {"page": "2"}),  # refused by the core: strict int
        ("get_order", {"order_id": order.id}), ("fulfill_order", {"order_id": order.id}),
        ("finance_summary", {}), ("search_supply_catalog", {"page_size": 2}), ("end_window", {}),
        ("store_status", {}),
    ]

    async def go():
        async with episode_client(build_server(lambda: a)) as client:
            return [await client.call(name, args) for name, args in script]

    outcomes = run(go())
    for (name, args), (is_error, text) in zip(script, outcomes, strict=True):
        direct = b.call(name, args)
        assert is_error == (not direct.ok), name
        if direct.ok:
            assert text == direct.text(), name
        else:
            assert text.endswith(direct.text()), name
    assert a.action_log == b.action_log
    assert a.ledger.net_assets() == b.ledger.net_assets() and a.window == b.window


# --- refusals ---------------------------------------------------------------------------------------


def test_unknown_product_is_the_core_error(ep):
    calls = ep.calls
    is_error, text = run(call(build_server(lambda: ep), "get_product", {"product_id": "PRD-999"}))
    assert is_error
    first, header, body = text.split("\n", 2)
    assert first.startswith("Error executing tool get_product: unknown_product: no product 'PRD-999'")
    assert header == ep.header_line()
    assert json.loads(body)["error"]["code"] == "unknown_product"
    assert ep.calls == calls + 1  # a refused call spends its operation, as in the core
    assert ep.action_log[-1]["error"] == "unknown_product"


def test_price_out_of_range_is_the_core_error(ep):
    product = ep.products[0].id
    is_error, text = run(call(build_server(lambda: ep), "set_price", {"product_id": product, "price": "-3"}))
    assert is_error
    assert text.startswith("Error executing tool set_price: price_out_of_range: price must be between")
    entry = ep.action_log[-1]
    assert (entry["tool"], entry["arguments"], entry["ok"], entry["error"]) == (
        "set_price", {"product_id": product, "price": "-3"}, False, "price_out_of_range")


def test_wrong_type_no_coercion_could_fix_reaches_the_core(ep):
    """"abc" for an int page is refused by the core, not by the SDK's own validation: the
    store header and the core's error, an operation spent, an action-log entry."""
    calls, log = ep.calls, len(ep.action_log)
    is_error, text = run(call(build_server(lambda: ep), "list_orders", {"page": "abc"}))
    assert is_error
    first, header, body = text.split("\n", 2)
    assert first == "Error executing tool list_orders: invalid_argument: page: input should be a valid integer"
    assert header == ep.header_line()
    assert json.loads(body)["error"]["code"] == "invalid_argument"
    assert (ep.calls, len(ep.action_log)) == (calls + 1, log + 1)


@pytest.mark.parametrize("value", ["7", 7.0, True])
def test_wrong_type_the_sdk_would_coerce_reaches_the_strict_core(ep, value):
    """"7" (or 7.0, or true), which a lax validator would take as an int, reaches the core as
    sent; the core, which is strict, refuses it and meters the call."""
    calls = ep.calls
    is_error, text = run(call(build_server(lambda: ep), "list_orders", {"page": value}))
    assert is_error
    assert "invalid_argument: page:" in text, text
    assert ep.calls == calls + 1
    assert ep.action_log[-1]["arguments"] == {"page": value}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_unknown_extra_argument_reaches_the_core_and_is_refused(ep, mode):
    """The generated function forwards the arguments object as sent, unknown arguments and
    all, so the core's extra="forbid" refuses the call; in both in-memory protocol eras."""
    calls = ep.calls
    is_error, text = run(call(build_server(lambda: ep), "list_orders", {"page_size": 5, "bogus": 1}, mode=mode))
    assert is_error
    assert "invalid_argument: bogus: unknown argument" in text
    assert ep.calls == calls + 1
    assert ep.action_log[-1]["arguments"] == {"page_size": 5, "bogus": 1}


def test_arguments_pass_through_exactly(ep):
    """Omitted stays omitted, an explicit null stays null: the core sees what the client sent."""
    server = build_server(lambda: ep)
    assert not run(call(server, "list_products", {"category": None, "page_size": 2})).is_error
    assert ep.action_log[-1]["arguments"] == {"category": None, "page_size": 2}
    assert not run(call(server, "list_products")).is_error
    assert ep.action_log[-1]["arguments"] == {}


@pytest.mark.parametrize("name, arguments", [
    ("list_orders", {"status": "lost"}),  # not in the enum
    ("list_orders", {"page_size": 500}),  # over the schema's maximum
    ("get_product", {}),  # a required argument missing
    ("get_product", {"product_id": "P" * 41}),  # over maxLength
    ("set_price", {"product_id": "PRD-001", "price": "49.505"}),  # the core's Money validator
])
def test_what_the_schema_rules_out_is_refused_by_the_core(ep, name, arguments):
    """A call the published schema rules out is not refused by the SDK first: the core
    refuses it, as it refuses it from Python, with the store header, an operation spent and
    an action-log entry."""
    twin = arm(TASK, SEED)
    calls, log = ep.calls, len(ep.action_log)
    is_error, text = run(call(build_server(lambda: ep), name, arguments))
    direct = twin.call(name, arguments)
    assert is_error and direct.error["code"] == "invalid_argument"
    assert text == f"Error executing tool {name}: invalid_argument: {direct.error['message']}\n{direct.text()}"
    assert (ep.calls, len(ep.action_log)) == (calls + 1, log + 1)
    assert ep.action_log[-1] == twin.action_log[-1]


def test_in_process_call_passes_the_arguments_exactly(ep):
    """MCPServer.call_tool() straight from Python passes through the same override as a wire
    request: the core sees the arguments as given ("1" is not coerced, "bogus" is not
    dropped) and refuses them, raised as the SDK's ToolError."""
    from mcp.server.mcpserver.exceptions import ToolError

    server = build_server(lambda: ep)
    with pytest.raises(ToolError, match=r"^Error executing tool list_orders: invalid_argument: page: input should "
                                        r"be a valid integer; bogus: unknown argument\n"):
        run(server.call_tool("list_orders", {"page": "1", "bogus": 2}))
    assert ep.action_log[-1]["arguments"] == {"page": "1", "bogus": 2}


def test_each_call_asks_the_provider_for_its_episode():
    first, second = arm(TASK, SEED), arm(TASK, SEED + 1)
    current = [first]
    server = build_server(lambda: current[0])

    async def go():
        async with episode_client(server) as client:
            await client.call("list_orders")
            current[0] = second
            await client.call("list_orders")
            await client.call("list_orders")

    run(go())
    assert (first.calls, second.calls) == (1, 2)


def test_concurrent_calls_on_one_episode_are_serialised():
    """Thirty calls in flight at once on one episode run on worker threads, one at a time
    (a lock per episode), and leave it where thirty sequential core calls leave its twin."""
    a, b = arm(TASK, SEED), arm(TASK, SEED)
    n = 30
    in_flight, most, threads = [0], [0], set()
    core_call = a.call

    def tracked(name, arguments=None):
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        threads.add(threading.get_ident())
        try:
            time.sleep(0.002)  # widen the window a race would need
            return core_call(name, arguments)
        finally:
            in_flight[0] -= 1

    a.call = tracked

    async def go():
        async with episode_client(build_server(lambda: a)) as client:
            return await asyncio.gather(*(client.call("list_orders", {"page_size": 1}) for _ in range(n)))

    outcomes = run(go())
    direct = [b.call("list_orders", {"page_size": 1}) for _ in range(n)]
    assert most[0] == 1 and len(threads) > 1 and threading.get_ident() not in threads
    assert not any(o.is_error for o in outcomes)
    assert sorted(o.text for o in outcomes) == sorted(r.text() for r in direct)
    assert a.action_log == b.action_log and a.calls == b.calls == n
    assert a.window == b.window >= 2 and a.ledger.net_assets() == b.ledger.net_assets()


# --- stdio --------------------------------------------------------------------------------------------


def test_stdio_round_trip():
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", f"from mcp_client.server import serve_stdio; serve_stdio({TASK!r}, {SEED})"],
        cwd=str(REPO_ROOT),
    )
    twin = arm(TASK, SEED)

    async def go():
        start = time.perf_counter()
        async with episode_client(params) as client:
            names = await client.tool_names()
            status = await client.call("store_status")
            refused = await client.call("get_order", {"order_id": "ORD-1", "extra": True})
        return names, status, refused, time.perf_counter() - start

    names, status, refused, seconds = run(go())
    assert len(names) == 29 and set(names) == set(REGISTRY)
    assert status == (False, twin.call("store_status").text())
    assert refused.is_error and "invalid_argument: extra: unknown argument" in refused.text
    print(f"\nstdio: spawn, arm, list, 3 calls, exit: {seconds:.2f} s (measured, not asserted)")


# --- latency (measured, printed, not asserted) -------------------------------------------------------------


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def test_latency_in_memory(shared_ep):
    n = 200
    noop_async = MCPServer(name="noop")

    async def noop() -> str:
        return "ok"

    def noop_sync() -> str:
        return "ok"

    noop_async.add_tool(noop, name="noop", structured_output=False)
    noop_async.add_tool(noop_sync, name="noop_sync", structured_output=False)

    async def timed(server: MCPServer, name: str) -> list[float]:
        async with episode_client(server) as client:
            await client.call(name)  # warm up
            samples = []
            for _ in range(n):
                t = time.perf_counter()
                is_error, _text = await client.call(name)
                samples.append(time.perf_counter() - t)
                assert not is_error
            return samples

    store = _median_ms(run(timed(build_server(lambda: shared_ep), "store_status")))
    noop_a = _median_ms(run(timed(noop_async, "noop")))
    noop_s = _median_ms(run(timed(noop_async, "noop_sync")))
    direct = []
    for _ in range(n):
        t = time.perf_counter()
        shared_ep.call("store_status")
        direct.append(time.perf_counter() - t)
    print(f"\nmedian of {n} in-memory calls: store_status {store:.3f} ms, no-op async tool {noop_a:.3f} ms, "
          f"no-op sync tool {noop_s:.3f} ms; Episode.call('store_status') directly {_median_ms(direct):.3f} ms")


def test_storebench_mcp_over_stdio_meters_like_the_core():
    """The official client against the `storebench mcp` command: 29 tools, the free probe
    leaves the budget alone, any other call spends one, every result starts with the header."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "mcp_client", "mcp", "--task", TASK, "--seed", str(SEED), "--no-trial"],
                                   cwd=str(REPO_ROOT))

    def ops(text: str) -> int:
        return json.loads(text.split("\n", 1)[1])["operations_left"]

    async def go():
        async with episode_client(params) as client:
            names = await client.tool_names()
            first = await client.call("store_status")
            again = await client.call("store_status")
            listed = await client.call("list_orders", {"page_size": 5})
            refused = await client.call("get_product", {"product_id": "NOPE"})
            after = await client.call("store_status")
        return names, first, again, listed, refused, after

    names, first, again, listed, refused, after = run(go())
    assert sorted(names) == sorted(REGISTRY)
    assert ops(first.text) == ops(again.text)
    assert ops(after.text) == ops(first.text) - 2  # one read and one refused call
    for outcome in (first, again, listed, after):
        assert outcome.text.startswith("2026-08-01 00:00 UTC | window 1 of ")
    assert refused.is_error and "unknown_product" in refused.text

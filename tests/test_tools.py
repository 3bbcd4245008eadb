"""The 29 merchant tools through ``Episode.call``: registry, metering, header,
paging, structured errors, refused writes, and the money each write moves.

Ids are discovered from the armed episode's own state (free for the test, no
operations spent) unless the point of a test is the tool that lists them.
"""
from __future__ import annotations

import dataclasses
import re

import pytest

from environment import simtime
from environment.api import arm
from environment.engine import Episode
from environment.engine.ledger import Account
from environment.engine.state import OrderState, ReturnState
from environment.tasks import get_task
from environment.tools.format import StoreHeader, store_header
from environment.tools.registry import REGISTRY, Family
from environment.world import load_world
from environment.world.model import SupplyRole

TASK = "short-runway"
SEED = 7

TOOL_NAMES = {
    "store_status", "end_window", "list_products", "get_product", "set_price", "set_listing_status",
    "update_listing_copy", "list_supply_product", "list_inventory", "dispose_stock", "list_orders", "get_order",
    "fulfill_order", "cancel_order", "list_returns", "get_return", "refund_return", "search_supply_catalog",
    "supply_product_detail", "supplier_profile", "place_purchase_order", "cancel_purchase_order",
    "list_purchase_orders", "finance_summary", "ledger_entries", "sales_report", "platform_terms",
    "announcements", "competitor_watch",
}
PAGED_TOOLS = ["list_products", "list_inventory", "list_orders", "list_returns", "search_supply_catalog",
               "list_purchase_orders", "ledger_entries", "sales_report", "announcements"]


@pytest.fixture
def ep() -> Episode:
    return arm(TASK, SEED)


# --- helpers: discovery from state, and refusal checks ------------------------------------------


def refused(result, code: str) -> dict:
    assert not result.ok, f"expected {code}, got ok: {result.data}"
    assert result.data is None
    assert result.error["code"] == code, result.error
    assert result.error["message"]
    return result.error


def open_order(ep, *, in_stock: bool = True):
    """An order awaiting shipment, not yet past its deadline, with (or without) stock on hand."""
    for o in sorted(ep.orders.values(), key=lambda o: o.id):
        if o.status == OrderState.OPEN and o.deadline > ep.now and (o.variant.on_hand >= o.quantity) == in_stock:
            return o
    pytest.fail("precondition: no suitable open order in the armed episode")


def open_return(ep, *, settled: bool):
    for r in sorted(ep.returns.values(), key=lambda r: r.id):
        if r.status == ReturnState.OPEN and r.order.settled == settled and (settled or r.order.receivable > 0):
            return r
    pytest.fail(f"precondition: no open return whose order is {'settled' if settled else 'unsettled'}")


def variant_with_stock(ep, minimum: int = 1):
    for v in ep.variants:
        if v.available >= minimum and v.lots:
            return v
    pytest.fail("precondition: no variant with free stock")


def listed_supply(ep, *, min_moq: int = 1):
    """A supply product that restocks a shop product, offered, from a vendor with MOQ >= min_moq."""
    for sp in ep.world.supply_products:
        if (sp.role == SupplyRole.PRIMARY and ep.supply_available(sp.id)
                and ep.vendors[sp.vendor_id].moq >= min_moq):
            return sp
    pytest.fail("precondition: no listed supply product")


def unlisted_supply(ep):
    for sp in ep.world.supply_products:
        if ep.is_unlisted_supply(sp.id) and ep.supply_available(sp.id):
            return sp
    pytest.fail("precondition: no unlisted supply product")


def inactive_product(ep):
    for p in ep.products:
        if not p.active:
            return p
    pytest.fail("precondition: no inactive product")


def snapshot(ep) -> dict:
    """Everything a write could touch, by value."""
    return {
        "balance": dict(ep.ledger.balance),
        "entries": len(ep.ledger.entries),
        "net_assets": ep.ledger.net_assets(),
        "cash": ep.cash(),
        "rating": ep.rating,
        "products": [(p.id, p.active, p.title, p.description) for p in ep.products],
        "variants": [(v.id, v.price, v.reserved, tuple((lot.po_id, lot.units) for lot in v.lots))
                     for v in ep.variants],
        "orders": {o.id: (o.status, o.receivable, o.refunded) for o in ep.orders.values()},
        "returns": {r.id: (r.status, r.order.refunded) for r in ep.returns.values()},
        "pos": {p.id: p.status for p in ep.pos.values()},
        "listed_supply": dict(ep.listed_supply),
        "window": ep.window,
    }


def capped_episode(cap: int) -> Episode:
    """The default task with its listing cap lowered (the cap flows task -> economics_for -> ep.econ)."""
    task = dataclasses.replace(get_task(TASK), listing_cap=cap)
    return Episode(task, SEED, load_world())


# --- the registry ---------------------------------------------------------------------------------


def test_registry_holds_exactly_the_29_tools():
    assert set(REGISTRY) == TOOL_NAMES
    assert len(REGISTRY) == 29


@pytest.mark.parametrize("name", sorted(TOOL_NAMES))
def test_tool_is_documented_and_has_an_object_schema(name):
    spec = REGISTRY[name]
    assert spec.name == name
    assert len(spec.description.strip()) >= 80
    schema = spec.input_schema()
    assert schema["type"] == "object"
    assert schema.get("additionalProperties") is False
    assert isinstance(spec.family, Family)


def test_only_store_status_is_free():
    assert [name for name, spec in REGISTRY.items() if spec.free] == ["store_status"]


# --- metering ---------------------------------------------------------------------------------------


def test_store_status_costs_nothing(ep):
    before = (ep.ops_left, ep.calls, ep.window)
    for _ in range(3):
        assert ep.call("store_status").ok
    assert (ep.ops_left, ep.calls, ep.window) == before


@pytest.mark.parametrize("name,arguments,ok", [
    ("list_products", {}, True),                                        # a read
    ("update_listing_copy", {"product_id": "PRD-001",
                             "description": "Soft cotton, regular fit, machine wash cold."}, True),  # a write
    ("get_product", {"product_id": "PRD-999"}, False),                  # refused by a rule
    ("list_products", {"page_size": 0}, False),                         # refused by validation
])
def test_any_other_call_costs_exactly_one_operation(ep, name, arguments, ok):
    before = ep.ops_left
    result = ep.call(name, arguments)
    assert result.ok is ok
    assert ep.ops_left == before - 1
    assert ep.window == 0


def test_call_with_non_dict_arguments_costs_one_operation(ep):
    before = ep.ops_left
    refused(ep.call("list_products", ["page", 1]), "invalid_argument")
    assert ep.ops_left == before - 1


def test_spending_the_last_operation_advances_the_window(ep):
    per_window = ep.task.ops_per_window
    assert ep.ops_left == per_window
    for _ in range(per_window - 1):
        ep.call("list_products", {"page_size": 1})
    assert (ep.window, ep.ops_left) == (0, 1)
    last = ep.call("list_products", {"page_size": 1})
    assert last.ok and last.data.get("window_ended") is True
    assert ep.window == 1
    assert ep.ops_left == per_window
    assert ep.now == ep.start + ep.window_minutes


def test_spending_the_last_operation_on_a_refused_call_also_advances(ep):
    for _ in range(ep.task.ops_per_window - 1):
        ep.call("list_products", {"page_size": 1})
    refused(ep.call("get_order", {"order_id": "ORD-0"}), "unknown_order")
    assert (ep.window, ep.ops_left) == (1, ep.task.ops_per_window)


def test_end_window_advances_at_once(ep):
    ep.call("list_products", {"page_size": 1})
    result = ep.call("end_window")
    assert result.ok
    assert result.data["ended_window"] == 1 and result.data["now_window"] == 2
    assert ep.window == 1
    assert ep.ops_left == ep.task.ops_per_window
    assert ep.now == ep.start + ep.window_minutes


@pytest.mark.parametrize("name", sorted(TOOL_NAMES - {"store_status"}))
def test_after_stop_every_tool_but_store_status_is_closed(ep, name):
    ep.stop()
    assert ep.over
    ops, calls, window = ep.ops_left, ep.calls, ep.window
    refused(ep.call(name, {}), "store_closed")
    assert (ep.ops_left, ep.calls, ep.window) == (ops, calls, window)


def test_after_stop_store_status_still_answers(ep):
    ep.stop()
    result = ep.call("store_status")
    assert result.ok
    assert result.data["store_open"] is False
    assert result.data["operations_left"] == 0
    assert result.header.endswith("| store closed")


# --- the header ---------------------------------------------------------------------------------------

HEADER = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC \| window (\d+) of (\d+) \| operations left (\d+) of (\d+)"
                    r" \| cash -?\$[\d,]+\.\d\d \| net assets -?\$[\d,]+\.\d\d \| rating \d\.\d\d")


def assert_header(ep, result):
    header = result.header
    assert "\n" not in header
    m = HEADER.match(header)
    assert m, header
    assert m.group(1) == simtime.iso(ep.now).replace("T", " ").rstrip("Z")
    for part in ("window", "operations left", "cash", "net assets", "rating"):
        assert part in header
    assert result.text().split("\n", 1)[0] == header


@pytest.mark.parametrize("name,arguments", [
    ("store_status", {}),
    ("list_orders", {}),
    ("get_product", {"product_id": "PRD-999"}),
    ("no_such_tool", {}),
    ("list_products", ["not", "a", "dict"]),
    ("end_window", {}),
])
def test_every_result_header_starts_with_the_simulated_time(ep, name, arguments):
    assert_header(ep, ep.call(name, arguments))


def test_header_after_stop(ep):
    ep.stop()
    assert_header(ep, ep.call("list_orders"))
    assert_header(ep, ep.call("store_status"))


def test_header_tracks_the_window_and_operations(ep):
    ep.call("end_window")
    result = ep.call("list_products", {"page_size": 1})
    m = HEADER.match(result.header)
    assert int(m.group(2)) == 2 and int(m.group(3)) == ep.n_windows
    assert int(m.group(4)) == ep.task.ops_per_window - 1 and int(m.group(5)) == ep.task.ops_per_window


def test_a_stored_header_is_every_field_in_order_and_reads_back(ep):
    ep.call("end_window")
    header = store_header(ep)
    assert header.as_dict() == dataclasses.asdict(header)
    assert list(header.as_dict()) == [field.name for field in dataclasses.fields(header)]
    assert StoreHeader.from_dict(header.as_dict()) == header


# --- paging ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGED_TOOLS)
def test_page_size_over_100_is_refused(ep, name):
    error = refused(ep.call(name, {"page_size": 101}), "invalid_argument")
    assert "page_size" in error["message"]
    assert error["details"]["field"] == "page_size"


@pytest.mark.parametrize("name,arguments", [
    ("list_products", {}),
    ("list_inventory", {"level": "variant"}),
    ("list_orders", {"status": "all"}),
    ("search_supply_catalog", {}),
    ("ledger_entries", {}),
    ("sales_report", {"group_by": "variant", "days": 90}),
])
def test_reads_never_return_more_than_100_rows(ep, name, arguments):
    result = ep.call(name, {**arguments, "page_size": 100})
    assert result.ok, result.error
    assert len(result.data["rows"]) <= 100
    assert result.data["total"] >= len(result.data["rows"])


def test_large_listing_is_paged_at_100(ep):
    result = ep.call("list_inventory", {"level": "variant", "page_size": 100})
    assert result.data["total"] > 100, "precondition: more than 100 variants"
    assert len(result.data["rows"]) == 100
    assert result.data["pages"] == -(-result.data["total"] // 100)


def test_default_page_is_50_rows(ep):
    result = ep.call("list_inventory", {"level": "variant"})
    assert len(result.data["rows"]) == 50


@pytest.mark.parametrize("name,arguments", [
    ("list_products", {}),
    ("list_inventory", {"level": "variant"}),
    ("list_orders", {"status": "all"}),
    ("list_returns", {"status": "all"}),
    ("search_supply_catalog", {}),
    ("list_purchase_orders", {"status": "all"}),
    ("ledger_entries", {}),
    ("sales_report", {"days": 30}),
])
def test_page_past_the_end_is_refused(ep, name, arguments):
    first = ep.call(name, {**arguments, "page_size": 100})
    assert first.ok and first.data["total"] > 0, "precondition: the listing is not empty"
    error = refused(ep.call(name, {**arguments, "page_size": 100, "page": first.data["pages"] + 1}),
                    "page_out_of_range")
    assert error["details"]["pages"] == first.data["pages"]


@pytest.mark.parametrize("name,arguments", [("list_orders", {"status": "all"}), ("list_returns", {"status": "all"})])
def test_small_pages_put_together_are_the_whole_listing(ep, name, arguments):
    # these two write out only the page's rows: every row must still land on its own page once.
    # Read through the handler, which spends nothing, so the store does not move between pages.
    spec = REGISTRY[name]

    def listing(size: int) -> tuple[list, set]:
        pages, n = [], 1
        while not pages or n <= pages[0]["pages"]:
            pages.append(spec.handler(ep, spec.args.model_validate({**arguments, "page_size": size, "page": n})))
            n += 1
        return [row for p in pages for row in p["rows"]], {(p["total"], p["pages"]) for p in pages}

    whole, whole_counts = listing(100)
    small, small_counts = listing(2)
    assert len(whole) > 2, "precondition: several small pages"
    assert whole_counts == {(len(whole), -(-len(whole) // 100))} and small_counts == {(len(whole), -(-len(whole) // 2))}
    assert small == whole


@pytest.mark.parametrize("page", [0, -1])
def test_page_below_one_is_refused(ep, page):
    refused(ep.call("list_products", {"page": page}), "invalid_argument")


# --- structured errors ------------------------------------------------------------------------------------


def test_unknown_tool(ep):
    error = refused(ep.call("delete_store", {}), "unknown_tool")
    assert "delete_store" in error["message"]


@pytest.mark.parametrize("arguments", [["page", 1], "page=1", 5, ("a", "b")])
def test_arguments_must_be_a_dict(ep, arguments):
    refused(ep.call("list_products", arguments), "invalid_argument")


def test_none_arguments_mean_no_arguments(ep):
    assert ep.call("list_products", None).ok


@pytest.mark.parametrize("name,arguments", [
    ("list_products", {"bogus_flag": 1}),
    ("get_product", {"product_id": "PRD-001", "bogus_flag": 1}),
    ("store_status", {"bogus_flag": 1}),
    ("end_window", {"bogus_flag": 1}),
])
def test_unknown_extra_argument_is_named(ep, name, arguments):
    window = ep.window
    error = refused(ep.call(name, arguments), "invalid_argument")
    assert "bogus_flag" in error["message"]
    assert error["details"]["field"] == "bogus_flag"
    assert ep.window == window  # a refused end_window does not end the window


@pytest.mark.parametrize("name,arguments,field", [
    ("place_purchase_order", {"supply_product_id": "SP-0003", "quantity": "5"}, "quantity"),
    ("place_purchase_order", {"supply_product_id": "SP-0003", "quantity": True}, "quantity"),
    ("place_purchase_order", {"supply_product_id": "SP-0003", "quantity": 5.0}, "quantity"),
    ("dispose_stock", {"variant_id": "PRD-003-S-BLS", "quantity": "1"}, "quantity"),
    ("dispose_stock", {"variant_id": "PRD-003-S-BLS", "quantity": True}, "quantity"),
    ("list_products", {"page_size": True}, "page_size"),
    ("list_products", {"page": "2"}, "page"),
    ("get_product", {"product_id": 1}, "product_id"),
    ("set_price", {"product_id": "PRD-001", "price": True}, "price"),
    ("place_purchase_order", {"supply_product_id": "SP-0003", "lines": {"PRD-003-S-BLS": True}},
     "lines.PRD-003-S-BLS"),
])
def test_wrong_types_are_refused(ep, name, arguments, field):
    error = refused(ep.call(name, arguments), "invalid_argument")
    assert error["details"]["field"] == field
    assert field.split(".")[0] in error["message"]


@pytest.mark.parametrize("name,arguments,code,bad", [
    ("get_product", {"product_id": "PRD-999"}, "unknown_product", "PRD-999"),
    ("get_order", {"order_id": "ORD-1"}, "unknown_order", "ORD-1"),
    ("get_return", {"return_id": "RET-1"}, "unknown_return", "RET-1"),
    ("supply_product_detail", {"supply_product_id": "SP-9999"}, "unknown_supply_product", "SP-9999"),
    ("supplier_profile", {"vendor_id": "VND-99"}, "unknown_vendor", "VND-99"),
    ("cancel_purchase_order", {"po_id": "PO-1"}, "unknown_purchase_order", "PO-1"),
    ("set_price", {"product_id": "PRD-999", "price": "10.00"}, "unknown_product", "PRD-999"),
    ("fulfill_order", {"order_id": "ORD-1"}, "unknown_order", "ORD-1"),
    ("refund_return", {"return_id": "RET-1"}, "unknown_return", "RET-1"),
    ("dispose_stock", {"variant_id": "PRD-001-Q-XXX", "quantity": 1}, "unknown_variant", "PRD-001-Q-XXX"),
    ("place_purchase_order", {"supply_product_id": "SP-9999", "quantity": 10}, "unknown_supply_product",
     "SP-9999"),
    ("list_supply_product", {"supply_product_id": "SP-9999", "price": "10.00"}, "unknown_supply_product",
     "SP-9999"),
    ("sales_report", {"product_id": "PRD-999"}, "unknown_product", "PRD-999"),
])
def test_unknown_ids(ep, name, arguments, code, bad):
    error = refused(ep.call(name, arguments), code)
    assert bad in error["message"]


@pytest.mark.parametrize("quantity", [0, -1, -500])
def test_place_purchase_order_needs_a_positive_quantity(ep, quantity):
    sp = listed_supply(ep)
    error = refused(ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": quantity}),
                    "invalid_argument")
    assert error["details"]["field"] == "quantity"


@pytest.mark.parametrize("quantity", [0, -1, -500])
def test_dispose_stock_needs_a_positive_quantity(ep, quantity):
    v = variant_with_stock(ep)
    error = refused(ep.call("dispose_stock", {"variant_id": v.id, "quantity": quantity}), "invalid_argument")
    assert error["details"]["field"] == "quantity"


@pytest.mark.parametrize("price,code", [
    ("12.345", "invalid_argument"),    # sub-cent
    (12.345, "invalid_argument"),
    ("abc", "invalid_argument"),
    ("NaN", "invalid_argument"),
    ("-5.00", "price_out_of_range"),   # a well-formed amount, outside the range
    (-5, "price_out_of_range"),
    ("0.00", "price_out_of_range"),
    ("0.99", "price_out_of_range"),
    ("1000.01", "price_out_of_range"),
    (5000, "price_out_of_range"),
])
def test_bad_prices_are_refused(ep, price, code):
    p = ep.products[0]
    before = [v.price for v in p.variants]
    error = refused(ep.call("set_price", {"product_id": p.id, "price": price}), code)
    if code == "invalid_argument":
        assert error["details"]["field"] == "price"
    assert [v.price for v in p.variants] == before


@pytest.mark.parametrize("price,cents", [("1.00", 100), ("1000.00", 100_000), (49.5, 4950), ("$19.99", 1999)])
def test_prices_at_the_edges_are_accepted(ep, price, cents):
    p = ep.products[0]
    assert ep.call("set_price", {"product_id": p.id, "price": price}).ok
    assert {v.price for v in p.variants} == {cents}


@pytest.mark.parametrize("price", ["1e30", 1e30, "-1e40"])
def test_absurdly_large_amount_is_a_structured_error(ep, price):
    result = ep.call("set_price", {"product_id": "PRD-001", "price": price})
    assert result.error["code"] in ("invalid_argument", "price_out_of_range")


def test_absurdly_large_refund_is_a_structured_error(ep):
    r = open_return(ep, settled=True)
    result = ep.call("refund_return", {"return_id": r.id, "amount": "1e30"})
    assert result.error["code"] in ("invalid_argument", "exceeds_refundable")


@pytest.mark.parametrize("price,code", [("12.345", "invalid_argument"), ("-1.00", "price_out_of_range"),
                                        ("1000.01", "price_out_of_range")])
def test_list_supply_product_refuses_bad_prices(ep, price, code):
    sp = unlisted_supply(ep)
    refused(ep.call("list_supply_product", {"supply_product_id": sp.id, "price": price}), code)
    assert ep.is_unlisted_supply(sp.id)


def test_place_purchase_order_below_moq(ep):
    sp = listed_supply(ep, min_moq=2)
    moq = ep.vendors[sp.vendor_id].moq
    error = refused(ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": moq - 1}), "below_moq")
    assert error["details"] == {"moq": moq, "units": moq - 1}


def test_place_purchase_order_at_moq_is_accepted(ep):
    sp = listed_supply(ep, min_moq=2)
    moq = ep.vendors[sp.vendor_id].moq
    result = ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": moq})
    assert result.ok, result.error
    assert result.data["units"] == moq


def test_place_purchase_order_with_more_cash_than_exists(ep):
    sp = max((sp for sp in ep.world.supply_products if sp.role == SupplyRole.PRIMARY and ep.supply_available(sp.id)),
             key=lambda sp: min(ep.unit_cost_now(s) for s in sp.sku_ids))
    assert 5000 * min(ep.unit_cost_now(s) for s in sp.sku_ids) > ep.cash(), "precondition: 5000 units cost more"
    error = refused(ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": 5000}),
                    "insufficient_cash")
    assert "cash" in error["message"]


def test_place_purchase_order_over_5000_units(ep):
    sp = listed_supply(ep)
    error = refused(ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": 5001}),
                    "invalid_argument")
    assert error["details"]["field"] == "quantity"


def test_place_purchase_order_on_unlisted_supply(ep):
    sp = unlisted_supply(ep)
    refused(ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": 100}), "not_in_shop")


@pytest.mark.parametrize("both", [True, False])
def test_place_purchase_order_needs_quantity_or_lines(ep, both):
    sp = listed_supply(ep)
    variant_id = ep.variants[ep.sku_variant[sp.sku_ids[0]]].id
    arguments = {"supply_product_id": sp.id}
    if both:
        arguments |= {"quantity": 50, "lines": {variant_id: 50}}
    error = refused(ep.call("place_purchase_order", arguments), "invalid_argument")
    assert "quantity" in error["message"] and "lines" in error["message"]


def test_place_purchase_order_unknown_line_key(ep):
    sp = listed_supply(ep)
    error = refused(ep.call("place_purchase_order", {"supply_product_id": sp.id, "lines": {"NOPE-1": 100}}),
                    "unknown_sku")
    assert "NOPE-1" in error["message"]


def test_fulfill_order_twice(ep):
    o = open_order(ep)
    assert ep.call("fulfill_order", {"order_id": o.id}).ok
    error = refused(ep.call("fulfill_order", {"order_id": o.id}), "not_awaiting_shipment")
    assert error["details"]["status"] == "shipped"


def test_cancel_a_shipped_order(ep):
    o = open_order(ep)
    assert ep.call("fulfill_order", {"order_id": o.id}).ok
    refused(ep.call("cancel_order", {"order_id": o.id}), "not_awaiting_shipment")


def test_refund_above_the_refundable_amount(ep):
    r = open_return(ep, settled=True)
    too_much = r.capacity + 1
    error = refused(ep.call("refund_return", {"return_id": r.id, "amount": f"{too_much / 100:.2f}"}),
                    "exceeds_refundable")
    assert r.id in error["message"]
    assert error["details"]["refundable"] == f"{r.capacity // 100}.{r.capacity % 100:02d}"


@pytest.mark.parametrize("amount", ["0", "0.00", "-1.00"])
def test_refund_must_be_positive(ep, amount):
    r = open_return(ep, settled=True)
    refused(ep.call("refund_return", {"return_id": r.id, "amount": amount}), "invalid_amount")


def test_refunding_a_closed_return(ep):
    r = open_return(ep, settled=True)
    assert ep.call("refund_return", {"return_id": r.id}).data["status"] == "resolved"
    error = refused(ep.call("refund_return", {"return_id": r.id, "amount": "1.00"}), "return_closed")
    assert error["details"]["status"] == "resolved"


def test_set_listing_status_beyond_the_cap_filled_with_real_listings(ep):
    """Fill the cap with the tools themselves: republish every hidden product, then list supply products."""
    cap = ep.call("platform_terms").data["listing_cap"]
    assert cap == ep.econ.listing_cap == ep.task.listing_cap
    hidden = [p.id for p in ep.products if not p.active]
    assert hidden, "precondition: a hidden product to republish last"
    last = hidden.pop()
    for pid in hidden:
        assert ep.call("set_listing_status", {"product_id": pid, "status": "active"}).ok
    while ep.call("store_status").data["active_listings"] < cap:
        rows = ep.call("search_supply_catalog", {"listed": "not_in_shop", "page_size": 1}).data["rows"]
        assert rows, "precondition: enough unlisted supply products to reach the cap"
        assert ep.call("list_supply_product", {"supply_product_id": rows[0]["supply_product_id"],
                                               "price": "40.00"}).ok
    assert ep.active_listings() == cap
    if ep.ops_left < 2:
        ep.call("end_window")  # keep the refused call from closing the window and moving the world
    before = snapshot(ep)
    error = refused(ep.call("set_listing_status", {"product_id": last, "status": "active"}), "listing_cap_reached")
    assert error["details"]["listing_cap"] == cap
    assert snapshot(ep) == before
    assert ep.product_by_id[last].active is False


def test_set_listing_status_beyond_a_lowered_cap():
    ep = capped_episode(105)
    assert ep.active_listings() == 105, "precondition: the default task opens with 105 active listings"
    p = inactive_product(ep)
    cash = ep.cash()
    refused(ep.call("set_listing_status", {"product_id": p.id, "status": "active"}), "listing_cap_reached")
    assert p.active is False and ep.cash() == cash


def test_list_supply_product_beyond_the_cap():
    ep = capped_episode(105)
    sp = unlisted_supply(ep)
    n_products, cash = len(ep.products), ep.cash()
    refused(ep.call("list_supply_product", {"supply_product_id": sp.id, "price": "40.00"}), "listing_cap_reached")
    assert len(ep.products) == n_products and ep.cash() == cash
    assert ep.is_unlisted_supply(sp.id)
    assert f"PRD-{ep.next_product_no:03d}" not in ep.product_by_id


def test_hiding_frees_a_slot_under_the_cap():
    ep = capped_episode(105)
    hidden = inactive_product(ep)
    shown = next(p for p in ep.products if p.active)
    assert ep.call("set_listing_status", {"product_id": shown.id, "status": "inactive"}).ok
    assert ep.call("set_listing_status", {"product_id": hidden.id, "status": "active"}).ok
    assert ep.active_listings() == 105


def test_dispose_more_than_available(ep):
    v = variant_with_stock(ep)
    error = refused(ep.call("dispose_stock", {"variant_id": v.id, "quantity": v.available + 1}), "not_enough_stock")
    assert error["details"]["available"] == v.available


def test_dispose_reserved_units_is_refused(ep):
    v = next((v for v in ep.variants if v.reserved > 0 and v.on_hand >= v.reserved), None)
    assert v is not None, "precondition: a variant holding units for open orders"
    refused(ep.call("dispose_stock", {"variant_id": v.id, "quantity": v.available + 1}), "not_enough_stock")


def test_dispose_from_an_unknown_batch(ep):
    v = variant_with_stock(ep)
    error = refused(ep.call("dispose_stock", {"variant_id": v.id, "quantity": 1, "batch": "PO-0"}), "unknown_batch")
    assert "PO-0" in error["message"]


def test_cancel_purchase_order_twice(ep):
    sp = listed_supply(ep)
    po = ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": max(ep.vendors[sp.vendor_id].moq,
                                                                                      20)})
    assert po.ok, po.error
    assert ep.call("cancel_purchase_order", {"po_id": po.data["po_id"]}).ok
    refused(ep.call("cancel_purchase_order", {"po_id": po.data["po_id"]}), "not_cancellable")


# --- a refused write changes nothing ---------------------------------------------------------------------


def _refusals(ep):
    """(tool, arguments, code, variant involved or None) for refused writes on a fresh episode."""
    v = variant_with_stock(ep)
    sp = listed_supply(ep, min_moq=2)
    rich = max((s for s in ep.world.supply_products if s.role == SupplyRole.PRIMARY and ep.supply_available(s.id)),
               key=lambda s: min(ep.unit_cost_now(k) for k in s.sku_ids))
    r = open_return(ep, settled=True)
    return {
        "dispose_too_many": ("dispose_stock", {"variant_id": v.id, "quantity": v.available + 1},
                             "not_enough_stock", v),
        "dispose_zero": ("dispose_stock", {"variant_id": v.id, "quantity": 0}, "invalid_argument", v),
        "price_out_of_range": ("set_price", {"product_id": v.product.id, "price": "1000.01"},
                               "price_out_of_range", v),
        "price_sub_cent": ("set_price", {"product_id": v.product.id, "variant_id": v.id, "price": "9.999"},
                           "invalid_argument", v),
        "below_moq": ("place_purchase_order", {"supply_product_id": sp.id,
                                               "quantity": ep.vendors[sp.vendor_id].moq - 1}, "below_moq",
                      ep.variants[ep.sku_variant[sp.sku_ids[0]]]),
        "insufficient_cash": ("place_purchase_order", {"supply_product_id": rich.id, "quantity": 5000},
                              "insufficient_cash", ep.variants[ep.sku_variant[rich.sku_ids[0]]]),
        "not_in_shop": ("place_purchase_order", {"supply_product_id": unlisted_supply(ep).id, "quantity": 100},
                        "not_in_shop", None),
        "exceeds_refundable": ("refund_return", {"return_id": r.id, "amount": "9999.00"}, "exceeds_refundable",
                               r.order.variant),
        "already_listed": ("list_supply_product", {"supply_product_id": sp.id, "price": "30.00"},
                           "already_listed", None),
        "copy_too_short": ("update_listing_copy", {"product_id": v.product.id, "description": "short"},
                           "invalid_argument", v),
    }


REFUSAL_CASES = ["dispose_too_many", "dispose_zero", "price_out_of_range", "price_sub_cent", "below_moq",
                 "insufficient_cash", "not_in_shop", "exceeds_refundable", "already_listed", "copy_too_short"]


@pytest.mark.parametrize("case", REFUSAL_CASES)
def test_refused_write_changes_nothing(ep, case):
    name, arguments, code, variant = _refusals(ep)[case]
    net, cash = ep.ledger.net_assets(), ep.cash()
    stock = (variant.on_hand, variant.reserved, variant.price) if variant else None
    before = snapshot(ep)
    ops = ep.ops_left
    assert ops > 1
    refused(ep.call(name, arguments), code)
    assert ep.ops_left == ops - 1
    assert ep.ledger.net_assets() == net
    assert ep.cash() == cash
    if variant:
        assert (variant.on_hand, variant.reserved, variant.price) == stock
    assert snapshot(ep) == before


def test_refused_fulfill_changes_nothing(ep):
    o = open_order(ep)
    assert ep.call("fulfill_order", {"order_id": o.id}).ok
    before = snapshot(ep)
    refused(ep.call("fulfill_order", {"order_id": o.id}), "not_awaiting_shipment")
    assert snapshot(ep) == before


def test_refused_listing_over_the_cap_changes_nothing():
    ep = capped_episode(105)
    before = snapshot(ep)
    refused(ep.call("list_supply_product", {"supply_product_id": unlisted_supply(ep).id, "price": "30.00"}),
            "listing_cap_reached")
    refused(ep.call("set_listing_status", {"product_id": inactive_product(ep).id, "status": "active"}),
            "listing_cap_reached")
    assert snapshot(ep) == before


# --- money ------------------------------------------------------------------------------------------------


def test_fulfill_order_charges_exactly_the_label_fee(ep):
    o = open_order(ep)
    label = ep.call("platform_terms").data["shipping_label_fee"]
    cash, receivable, net = ep.cash(), ep.ledger.balance[Account.RECEIVABLE], ep.ledger.net_assets()
    entries = len(ep.ledger.entries)
    result = ep.call("fulfill_order", {"order_id": o.id})
    assert result.ok and result.data["on_time"] is True
    assert result.data["label_fee"] == label
    assert ep.cash() - cash == -ep.econ.label_fee == -int(label.replace(".", ""))
    assert ep.ledger.balance[Account.RECEIVABLE] == receivable
    assert ep.ledger.net_assets() - net == -ep.econ.label_fee
    new = ep.ledger.entries[entries:]
    assert [(e[2], e[3], e[4], e[5]) for e in new] == [(Account.CASH, "shipping_label", -ep.econ.label_fee, o.id)]
    assert o.status == OrderState.SHIPPED


def test_fulfill_order_takes_the_units(ep):
    o = open_order(ep)
    v = o.variant
    on_hand, reserved = v.on_hand, v.reserved
    assert ep.call("fulfill_order", {"order_id": o.id}).ok
    assert (v.on_hand, v.reserved) == (on_hand - o.quantity, reserved - o.quantity)


def test_refund_of_an_unsettled_sale_reduces_receivables_not_cash(ep):
    r = open_return(ep, settled=False)
    order = r.order
    assert ep.call("get_order", {"order_id": order.id}).data["payout"] == "pending"
    amount = min(1000, order.receivable)
    cash, receivable, net = ep.cash(), ep.ledger.balance[Account.RECEIVABLE], ep.ledger.net_assets()
    result = ep.call("refund_return", {"return_id": r.id, "amount": f"{amount // 100}.{amount % 100:02d}"})
    assert result.ok, result.error
    assert ep.cash() == cash
    assert ep.ledger.balance[Account.RECEIVABLE] == receivable - amount
    assert ep.ledger.net_assets() == net - amount


def test_refunded_unsettled_sale_pays_out_only_what_is_left(ep):
    """Phantom cash closed: the refund comes out of the payout, not on top of it."""
    r = open_return(ep, settled=False)
    order = r.order
    pending = order.receivable
    amount = min(1000, pending)
    assert ep.call("refund_return", {"return_id": r.id, "amount": f"{amount // 100}.{amount % 100:02d}"}).ok
    while not order.settled:
        assert not ep.over, "precondition: the order settles within the shift"
        ep.call("end_window")
    payouts = [e for e in ep.ledger.entries if e[3] == "payout" and e[5] == order.id]
    assert sorted(e[4] for e in payouts if e[2] == Account.CASH) == [pending - amount]
    assert order.receivable == 0


def test_full_refund_of_an_unsettled_sale_costs_exactly_what_was_paid(ep):
    r = open_return(ep, settled=False)
    order = r.order
    pending, paid = order.receivable, order.paid_cents
    cash, net = ep.cash(), ep.ledger.net_assets()
    result = ep.call("refund_return", {"return_id": r.id})
    assert result.ok and result.data["status"] == "resolved"
    # The pending payout absorbs what it can; only the commission the platform kept comes out of cash.
    assert order.receivable == 0
    assert cash - ep.cash() == paid - pending
    assert net - ep.ledger.net_assets() == paid


def test_refund_of_a_settled_sale_costs_cash(ep):
    r = open_return(ep, settled=True)
    cash, receivable = ep.cash(), ep.ledger.balance[Account.RECEIVABLE]
    assert ep.call("refund_return", {"return_id": r.id, "amount": "5.00"}).ok
    assert ep.cash() == cash - 500
    assert ep.ledger.balance[Account.RECEIVABLE] == receivable


def test_full_default_refund_resolves_the_return(ep):
    r = open_return(ep, settled=True)
    paid = r.order.paid_cents
    result = ep.call("refund_return", {"return_id": r.id})
    assert result.ok
    assert result.data["status"] == "resolved"
    assert result.data["refunded_now"] == result.data["refunded_total"] == f"{paid // 100}.{paid % 100:02d}"
    assert r.status == ReturnState.RESOLVED and r.capacity == 0
    assert ep.call("get_return", {"return_id": r.id}).data["status"] == "resolved"


def test_resolved_undamaged_return_goes_back_to_stock(ep):
    r = next((r for r in sorted(ep.returns.values(), key=lambda r: r.id)
              if r.status == ReturnState.OPEN and not r.defective), None)
    assert r is not None, "precondition: an open non-defective return"
    v = r.order.variant
    on_hand = v.on_hand
    assert ep.call("refund_return", {"return_id": r.id}).data["status"] == "resolved"
    assert v.on_hand == on_hand + r.order.quantity


def test_list_supply_product_creates_an_active_empty_listing_for_the_insertion_fee(ep):
    sp = unlisted_supply(ep)
    fee = ep.call("platform_terms").data["listing_insertion_fee"]
    cash, n, active = ep.cash(), len(ep.products), ep.active_listings()
    result = ep.call("list_supply_product", {"supply_product_id": sp.id, "price": "45.00"})
    assert result.ok, result.error
    pid = result.data["product_id"]
    assert result.data["status"] == "active" and result.data["fee"] == fee
    assert ep.cash() == cash - ep.econ.insertion_fee == cash - int(fee.replace(".", ""))
    assert len(ep.products) == n + 1 and ep.active_listings() == active + 1
    product = ep.call("get_product", {"product_id": pid}).data
    assert product["status"] == "active"
    assert product["units_on_hand"] == 0
    assert product["variants"] == len(sp.sku_ids) == result.data["variants"]
    assert {row["on_hand"] for row in product["variant_rows"]} == {0}
    assert {row["price"] for row in product["variant_rows"]} == {"45.00"}
    assert [s["supply_product_id"] for s in product["sources"]] == [sp.id]
    detail = ep.call("supply_product_detail", {"supply_product_id": sp.id}).data
    assert detail["restocks_product"] == pid


def test_list_supply_product_twice_is_already_listed(ep):
    sp = unlisted_supply(ep)
    first = ep.call("list_supply_product", {"supply_product_id": sp.id, "price": "45.00"})
    assert first.ok
    cash, n = ep.cash(), len(ep.products)
    error = refused(ep.call("list_supply_product", {"supply_product_id": sp.id, "price": "45.00"}), "already_listed")
    assert error["details"]["product_id"] == first.data["product_id"]
    assert ep.cash() == cash and len(ep.products) == n


def test_list_supply_product_on_a_shop_line_is_already_listed(ep):
    sp = listed_supply(ep)
    error = refused(ep.call("list_supply_product", {"supply_product_id": sp.id, "price": "45.00"}), "already_listed")
    assert error["details"]["product_id"] == sp.product_id


def test_a_listed_supply_product_can_be_ordered(ep):
    sp = unlisted_supply(ep)
    assert ep.call("list_supply_product", {"supply_product_id": sp.id, "price": "45.00"}).ok
    qty = max(ep.vendors[sp.vendor_id].moq, 30)
    cash, in_transit = ep.cash(), ep.ledger.balance[Account.IN_TRANSIT]
    po = ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": qty})
    assert po.ok, po.error
    cost = int(po.data["cost"].replace(".", ""))
    assert po.data["units"] == qty
    assert ep.cash() == cash - cost
    assert ep.ledger.balance[Account.IN_TRANSIT] == in_transit + cost


def test_blank_listing_copy_is_refused_and_keeps_the_old_copy(ep):
    p = ep.products[0]
    before = (p.title, p.description)
    result = ep.call("update_listing_copy", {"product_id": p.id, "description": " " * 12, "title": "   "})
    assert result.error["code"] == "invalid_argument"
    assert (p.title, p.description) == before


@pytest.fixture(scope="module")
def traded() -> Episode:
    """Steady seed 7 after a week of smart-triage: stock sold, bought and in transit, payouts due."""
    from environment.anchors.policies import SmartTriage

    ep = arm("steady", 7)
    SmartTriage().play_until(ep, 14)
    assert ep.window == 14 and not ep.over
    return ep


def test_finance_summary_counts_every_unit_and_each_days_payouts(traded):
    ep = traded
    data = ep.call("finance_summary").data or {}
    assert data["stock_units"] == sum(v.on_hand for v in ep.variants) == sum(
        lot.units for v in ep.variants for lot in v.lots) > 0
    expected: dict[str, int] = {}
    for o in ep.orders.values():
        if o.receivable and o.settle_at is not None and o.settle_at < ep.now + 7 * simtime.DAY:
            day = simtime.iso(max(o.settle_at, ep.now))[:10]
            expected[day] = expected.get(day, 0) + o.receivable
    assert [row["date"] for row in data["payouts_next_7_days"]] == sorted(expected) and len(expected) > 1
    assert [row["amount"] for row in data["payouts_next_7_days"]] == [
        f"{expected[d] // 100}.{expected[d] % 100:02d}" for d in sorted(expected)]


@pytest.mark.parametrize("only", ["all", "out_of_stock", "low", "in_stock"])
def test_inventory_pages_hold_every_kept_product_once_in_catalogue_order(traded, only):
    ep = traded
    available = {p.id: sum(v.on_hand - v.reserved for v in p.variants) for p in ep.products}
    wanted = [p.id for p in ep.products if only == "all" or (only == "out_of_stock" and available[p.id] <= 0)
              or (only == "low" and available[p.id] <= 2) or (only == "in_stock" and available[p.id] > 0)]
    seen, page = [], 1
    while True:
        ep.ops_left = max(ep.ops_left, 2)
        data = ep.call("list_inventory", {"only": only, "page_size": 7, "page": page}).data or {}
        assert data["total"] == len(wanted)
        seen += [(row["product_id"], row["available"]) for row in data["rows"]]
        if page >= data["pages"]:
            break
        page += 1
    assert seen == [(pid, available[pid]) for pid in wanted]

"""A second QA pass over the tool surface: what the order and stock fields promise, a kind
filter on the ledger, what a vendor's on-time record is made of, the discount on an order,
ids written with spaces or in lower case, a purchase order's status, and money and dates in
one form.  Each test checks one behaviour against the store's own state.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from environment import simtime
from environment.api import arm
from environment.engine import Episode
from environment.engine.state import OrderRec, OrderState, POState
from environment.tools.finance import LEDGER_KINDS
from environment.tools.format import usd
from environment.tools.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent


def _competing_order(ep: Episode) -> tuple[OrderRec, int]:
    """End windows until an open order has stock on hand for itself, but not once the open
    orders for the same variant due before it have had theirs; with the units they need."""
    while not ep.over:
        ahead: dict[str, int] = {}
        for o in sorted(ep.open_orders(), key=lambda o: (o.deadline, o.id)):
            need = ahead.get(o.variant.id, 0)
            if need and o.variant.on_hand >= o.quantity and o.variant.on_hand < need + o.quantity:
                return o, need
            ahead[o.variant.id] = need + o.quantity
        ep.call("end_window")
    raise AssertionError("precondition: an open order whose stock earlier orders need")


def _backordered_variant(ep: Episode):
    """End windows until a variant has more units reserved by open orders than on hand."""
    while not ep.over:
        short = [v for v in ep.variants if v.reserved > v.on_hand]
        if short:
            return short[0]
        ep.call("end_window")
    raise AssertionError("precondition: a variant with backordered units")


# --- 1. whether an order can ship, and what a variant can still sell ------------------------------


def test_get_order_says_the_stock_on_hand_is_needed_first_by_earlier_orders():
    ep = arm("steady", 7)
    order, need = _competing_order(ep)
    data = ep.call("get_order", {"order_id": order.id}).data
    assert (data["in_stock"], data["earlier_orders_need"], data["in_stock_in_turn"]) == (True, need, False)


def test_list_orders_keeps_its_columns_and_says_in_stock_means_shippable_now():
    """list_orders' table stays as wide as it was (the console shows it at 1280 px); its
    description says what in_stock means and where the in-turn answer is."""
    ep = arm("steady", 7)
    order, _need = _competing_order(ep)
    row = next(r for r in ep.call("list_orders", {"page_size": 100}).data["rows"] if r["order_id"] == order.id)
    assert "in_stock_in_turn" not in row and row["in_stock"] is True
    assert "(get_order says whether it is in stock in turn)" in REGISTRY["list_orders"].description


def test_a_shipped_order_has_no_stock_fields():
    ep = arm("steady", 7)
    shipped = next(o for o in sorted(ep.orders.values(), key=lambda o: o.id) if o.status != OrderState.OPEN)
    data = ep.call("get_order", {"order_id": shipped.id}).data
    assert (data["in_stock"], data["earlier_orders_need"], data["in_stock_in_turn"]) == (None, None, None)


def test_a_backordered_variant_shows_nothing_available_and_its_backorder():
    ep = arm("steady", 7)
    v = _backordered_variant(ep)
    rows = ep.call("get_product", {"product_id": v.product.id}).data["variant_rows"]
    row = next(r for r in rows if r["variant_id"] == v.id)
    assert (row["on_hand"], row["reserved"], row["available"], row["backordered"]) == (
        v.on_hand, v.reserved, 0, v.reserved - v.on_hand)


def test_list_inventory_by_product_counts_backordered_units_beside_the_net_available():
    ep = arm("steady", 7)
    v = _backordered_variant(ep)
    row = ep.call("list_inventory", {"product_id": v.product.id}).data["rows"][0]
    variants = v.product.variants
    on_hand, reserved = sum(x.on_hand for x in variants), sum(x.reserved for x in variants)
    assert (row["available"], row["backordered"]) == (
        on_hand - reserved, sum(max(0, x.reserved - x.on_hand) for x in variants))


def test_list_inventory_filters_products_by_the_units_their_variants_can_still_sell():
    """A product whose backordered units net out its free ones has nothing 'available' net,
    yet a unit of another size or colour can still sell: it is in stock, not sold out."""
    ep = arm("short-runway", 7)
    while not ep.over:
        p = next((p for p in ep.products if sum(v.available for v in p.variants) <= 0
                  and any(v.available > 0 for v in p.variants)), None)
        if p is not None:
            break
        ep.call("end_window")
    assert p is not None, "precondition: a product whose backorders net out its free units"
    sold_out = {r["product_id"] for r in ep.call("list_inventory", {"only": "out_of_stock", "page_size": 100}).data["rows"]}
    some = {r["product_id"] for r in ep.call("list_inventory", {"only": "in_stock", "page_size": 100}).data["rows"]}
    assert p.id not in sold_out and p.id in some


# --- 3. the ledger's kind filter ---------------------------------------------------------------------


def test_ledger_entries_refuses_an_unknown_kind_naming_the_kinds_there_are():
    ep = arm("steady", 7)
    result = ep.call("ledger_entries", {"kind": "fines"})
    assert not result.ok and result.error["code"] == "invalid_argument"
    assert result.error["message"] == f"kind 'fines' is not one of the ledger's: {', '.join(sorted(LEDGER_KINDS))}"


def test_ledger_entries_reads_a_kind_in_any_case():
    ep = arm("steady", 7)
    rows = ep.call("ledger_entries", {"kind": "Opening_Cash"}).data["rows"]
    assert [r["kind"] for r in rows] == ["opening_cash"]


def test_every_kind_in_the_release_ledgers_is_a_kind_the_filter_knows():
    kinds = {json.loads(line)["kind"] for path in (ROOT / "fixtures" / "release-trajectories").glob("*/ledger.jsonl")
             for line in path.read_text().splitlines()}
    assert kinds and kinds <= LEDGER_KINDS, kinds - LEDGER_KINDS


# --- 2. a vendor's on-time record ----------------------------------------------------------------------


def test_supplier_profile_gives_the_share_of_received_purchase_orders_that_landed_by_their_eta():
    ep = arm("steady", 7)
    received = [po for po in ep.world.purchase_orders if po.vendor_id == "VND-01" and po.received_at is not None]
    on_time = sum(po.received_at <= po.eta for po in received)
    data = ep.call("supplier_profile", {"vendor_id": "VND-01"}).data
    assert (data["purchase_orders_received"], data["purchase_orders_on_time"], data["on_time_delivery_record"]) == (
        len(received), on_time, f"{round(100 * on_time / len(received))}%")


def test_supplier_profile_does_not_read_the_vendors_hidden_chance_of_delay():
    ep = arm("steady", 7)
    before = ep.call("supplier_profile", {"vendor_id": "VND-01"}).data
    ep.vendors = {**ep.vendors, "VND-01": dataclasses.replace(ep.vendors["VND-01"], on_time_rate=0.123)}
    assert ep.call("supplier_profile", {"vendor_id": "VND-01"}).data == before


def test_supplier_profile_counts_the_shifts_own_purchase_orders_once_received():
    ep = arm("steady", 7)
    po = min(ep.pos.values(), key=lambda p: p.id)  # on its way when the shift begins
    before = ep.call("supplier_profile", {"vendor_id": po.vendor_id}).data
    while po.status != POState.RECEIVED:
        assert not ep.over, "precondition: the purchase order lands within the shift"
        ep.call("end_window")
    after = ep.call("supplier_profile", {"vendor_id": po.vendor_id}).data
    landed = [p for p in ep.pos.values() if p.vendor_id == po.vendor_id and p.status == POState.RECEIVED]
    assert (after["purchase_orders_received"], after["purchase_orders_on_time"]) == (
        before["purchase_orders_received"] + len(landed),
        before["purchase_orders_on_time"] + sum(p.received_at <= p.eta for p in landed))


# --- 5. the discount on an order -------------------------------------------------------------------------


def test_get_order_shows_the_discount_between_the_unit_price_and_what_was_paid():
    ep = arm("steady", 7)
    o = next(o for o in sorted(ep.orders.values(), key=lambda o: o.id) if o.paid_subcents < o.unit_price * 100)
    data = ep.call("get_order", {"order_id": o.id}).data
    assert (data["unit_price"], data["discount"], data["total_paid"]) == ("43.00", "8.60", "34.40")


def test_get_order_shows_a_zero_discount_on_an_order_paid_in_full():
    ep = arm("steady", 7)
    o = next(o for o in sorted(ep.orders.values(), key=lambda o: o.id)
             if o.paid_subcents == o.unit_price * o.quantity * 100)
    data = ep.call("get_order", {"order_id": o.id}).data
    assert (data["discount"], data["total_paid"]) == ("0.00", usd(o.unit_price * o.quantity))


# --- 6. ids with spaces around them or in lower case -------------------------------------------------------


@pytest.mark.parametrize("name,field,given,canonical", [
    ("get_order", "order_id", " ord-103172 ", "ORD-103172"),
    ("get_product", "product_id", "prd-001\n", "PRD-001"),
    ("get_return", "return_id", "\tRet-20484", "RET-20484"),
    ("supplier_profile", "vendor_id", "vnd-01", "VND-01"),
    ("supply_product_detail", "supply_product_id", " sp-0001", "SP-0001"),
])
def test_an_id_is_read_without_surrounding_spaces_and_in_any_case(name, field, given, canonical):
    ep = arm("steady", 7)
    assert ep.call(name, {field: given}).data[field] == canonical


def test_fulfill_order_ships_the_order_named_in_lower_case():
    ep = arm("steady", 7)
    o = next(o for o in sorted(ep.open_orders(), key=lambda o: o.id) if o.variant.on_hand >= o.quantity)
    assert ep.call("fulfill_order", {"order_id": f" {o.id.lower()} "}).data["order_id"] == o.id
    assert o.status == OrderState.SHIPPED


@pytest.mark.parametrize("name,arguments,message", [
    ("get_order", {"order_id": "ord-1"},
     "no order 'ORD-1' open or recent; list_orders shows the ids (they look like ORD-103400)"),
    ("get_product", {"product_id": "PRD-999"},
     "no product 'PRD-999'; list_products shows the ids (they look like PRD-001)"),
    ("sales_report", {"product_id": "PRD-999"},
     "no product 'PRD-999'; list_products shows the ids (they look like PRD-001)"),
    ("get_return", {"return_id": "RET-1"},
     "no return 'RET-1'; list_returns shows the ids (they look like RET-20500)"),
    ("dispose_stock", {"variant_id": "PRD-001-Q-XXX", "quantity": 1},
     "no variant 'PRD-001-Q-XXX'; get_product lists a product's variants (they look like PRD-001-M-BLK)"),
    ("set_price", {"product_id": "PRD-001", "variant_id": "PRD-002-XS-BLS", "price": "10.00"},
     "'PRD-002-XS-BLS' is not a variant of PRD-001; get_product lists its variants (such as PRD-001-XS-BLS)"),
    ("supply_product_detail", {"supply_product_id": "SP-9999"},
     "no supply product 'SP-9999'; search_supply_catalog shows the ids (they look like SP-0042)"),
    ("supplier_profile", {"vendor_id": "VND-99"},
     "no vendor 'VND-99'; search_supply_catalog names each supply product's vendor (ids look like VND-07)"),
    ("cancel_purchase_order", {"po_id": "PO-1"},
     "no purchase order 'PO-1'; list_purchase_orders shows the ids (they look like PO-5800)"),
])
def test_an_unknown_id_is_refused_naming_it_and_how_ids_look(name, arguments, message):
    ep = arm("steady", 7)
    assert ep.call(name, arguments).error["message"] == message


# --- 4. a purchase order's status ------------------------------------------------------------------------


def _placed_po(ep: Episode) -> str:
    """A purchase order placed now with the vendor of SP-0001, whose lead time is longer than
    the cancellation window."""
    sp = ep.supply_products["SP-0001"]
    assert ep.lead_days(sp.vendor_id) * 24 > ep.econ.po_cancel_window_hours, "precondition: a long lead time"
    placed = ep.call("place_purchase_order", {"supply_product_id": sp.id, "quantity": max(ep.moq(sp.vendor_id), 20)})
    assert placed.ok, placed.error
    return placed.data["po_id"]


def _po_row(ep: Episode, po_id: str) -> dict:
    return next(r for r in ep.call("list_purchase_orders", {"status": "open"}).data["rows"] if r["po_id"] == po_id)


def test_a_purchase_order_is_placed_and_cancellable_until_its_window_closes():
    ep = arm("steady", 7)
    po_id = _placed_po(ep)
    closes = ep.now + ep.econ.po_cancel_window_hours * 60
    row = _po_row(ep, po_id)
    assert (row["status"], row["cancellable_until"]) == ("placed", simtime.iso(closes))


def test_a_purchase_order_is_in_transit_once_its_cancellation_window_has_closed():
    ep = arm("steady", 7)
    po_id = _placed_po(ep)
    closes = ep.now + ep.econ.po_cancel_window_hours * 60
    while ep.now <= closes:
        ep.call("end_window")
    row = _po_row(ep, po_id)
    assert (row["status"], row["cancellable_until"]) == ("in_transit", None)
    assert ep.call("cancel_purchase_order", {"po_id": po_id}).error["code"] == "already_shipped"


# --- 7. one form for the same refusal ----------------------------------------------------------------------


def test_list_supply_product_refuses_a_price_out_of_range_as_set_price_does():
    ep = arm("steady", 7)
    sp = next(sp for sp in ep.world.supply_products if ep.is_unlisted_supply(sp.id) and ep.supply_available(sp.id))
    listed = ep.call("list_supply_product", {"supply_product_id": sp.id, "price": "0.50"}).error
    repriced = ep.call("set_price", {"product_id": "PRD-001", "price": "0.50"}).error
    assert listed == repriced
    assert listed["message"] == "price must be between 1.00 and 1000.00, got 0.50"

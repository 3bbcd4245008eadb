"""What four tools say, checked against what the store does.

``get_order`` names who shipped an order (the merchant or the platform), also after delivery
and also when the merchant shipped it late; ``get_return`` promises no field it does not
return; ``list_orders`` and ``platform_terms`` say that the platform's carrier has a daily
capacity, so an order can stay open past its deadline; and a money argument written as text
is read only in the plain form the schema's examples show.
"""
from __future__ import annotations

from decimal import Decimal

import pytest

from environment.api import arm
from environment.engine import Episode
from environment.engine.state import OrderRec, OrderState
from environment.tools import REGISTRY
from environment.tools.registry import _money

# --- who shipped an order -------------------------------------------------------------------------


def _late_order_with_stock(ep: Episode) -> OrderRec:
    """End windows until an order with stock on hand is still open past its deadline (the
    platform's carrier was full)."""
    while not ep.over:
        late = [o for o in ep.open_orders() if o.deadline < ep.now and o.variant.on_hand >= o.quantity]
        if late:
            return min(late, key=lambda o: o.id)
        ep.call("end_window")
    raise AssertionError("precondition: an order open past its deadline with stock")


def _until_delivered(ep: Episode, order: OrderRec) -> None:
    while order.status != OrderState.DELIVERED:
        assert not ep.over, "precondition: the order is delivered before the horizon"
        ep.call("end_window")


@pytest.fixture(scope="module")
def late_shipped() -> tuple[Episode, OrderRec]:
    """peak-season 7: an order the carrier had no room for, shipped by hand late, then delivered."""
    ep = arm("peak-season", 7)
    order = _late_order_with_stock(ep)
    shipped = ep.call("fulfill_order", {"order_id": order.id})
    assert shipped.data["on_time"] is False, "precondition: shipped after its deadline"
    _until_delivered(ep, order)
    return ep, order


def shipped_by(ep: Episode, order_id: str) -> str | None:
    """What get_order says, read without spending an operation (the fixture is shared)."""
    spec = REGISTRY["get_order"]
    return spec.handler(ep, spec.args.model_validate({"order_id": order_id}))["shipped_by"]


def test_an_order_shipped_late_by_hand_says_you_after_delivery(late_shipped):
    ep, order = late_shipped
    assert shipped_by(ep, order.id) == "you"


def test_every_delivered_order_names_the_shipper_the_ledger_charged(late_shipped):
    """For each order shipped and delivered during the shift: "platform" exactly when the
    platform's fee was charged, "you" exactly when a label was bought."""
    ep, _ = late_shipped
    charged: dict[str, set[str]] = {}
    for _at, _window, _account, kind, _amount, ref in ep.ledger.entries:
        charged.setdefault(ref, set()).add(kind)
    delivered = [o for o in ep.orders.values() if o.status == OrderState.DELIVERED and not o.opening]
    says = {o.id: shipped_by(ep, o.id) for o in delivered}
    expected = {o.id: "platform" if "autoship_fee" in charged[o.id] else
                "you" if "shipping_label" in charged[o.id] else "?" for o in delivered}
    assert says == expected
    assert {"platform", "you"} <= set(says.values())


def test_shipped_by_before_delivery_for_each_shipper():
    ep = arm("steady", 7)
    order = min((o for o in ep.open_orders() if o.deadline > ep.now and o.variant.on_hand >= o.quantity),
                key=lambda o: o.id)
    assert ep.call("get_order", {"order_id": order.id}).data["shipped_by"] is None
    ep.call("fulfill_order", {"order_id": order.id})
    assert ep.call("get_order", {"order_id": order.id}).data["shipped_by"] == "you"
    ep.call("end_window")
    ep.call("end_window")
    auto = min((o for o in ep.orders.values() if o.status == OrderState.AUTO_SHIPPED), key=lambda o: o.id)
    assert ep.call("get_order", {"order_id": auto.id}).data["shipped_by"] == "platform"


def test_what_the_order_says_matches_what_the_ledger_charged(late_shipped):
    """The merchant's late shipment was charged a label and a late fine, never the platform's fee."""
    ep, order = late_shipped
    kinds = {kind for _at, _window, _account, kind, _amount, ref in ep.ledger.entries if ref == order.id}
    assert {"shipping_label", "late_ship_fine"} <= kinds and "autoship_fee" not in kinds


# --- what the descriptions promise ------------------------------------------------------------------


def test_get_return_promises_no_batch():
    assert "batch" not in REGISTRY["get_return"].description


def test_get_return_describes_the_fields_it_returns():
    ep = arm("steady", 7)
    ret = min(ep.returns.values(), key=lambda r: r.id)
    data = ep.call("get_return", {"return_id": ret.id}).data
    description = " ".join(REGISTRY["get_return"].description.split())
    for field, words in (("reason", "reason"), ("title", "title"), ("size", "size"), ("colour", "colour"),
                         ("quantity", "quantity"), ("delivered_at", "delivered"),
                         ("item_comes_back_to_stock", "comes back to stock"),
                         ("paid", "paid"), ("refunded", "refunded"), ("refundable", "can still be refunded"),
                         ("hours_to_escalation", "escalates")):
        assert field in data and words in description, field


def test_list_orders_says_the_carrier_has_a_daily_capacity():
    description = " ".join(REGISTRY["list_orders"].description.split())
    assert "as far as its carrier's daily capacity allows (see platform_terms)" in description
    assert "stays awaiting shipment past its deadline" in description


def test_platform_terms_give_the_carriers_daily_capacity():
    ep = arm("steady", 7)
    terms = ep.call("platform_terms").data
    assert terms["platform_fulfilment_capacity_per_day"] == ep.econ.autoship_capacity_per_day == 60
    assert ("as far as the carrier's daily capacity allows (platform_fulfilment_capacity_per_day in normal "
            "conditions, fewer while the carrier is disrupted); an order beyond it stays awaiting shipment past "
            "its deadline") in terms["platform_fulfilment"]
    assert "carrier's daily capacity" in REGISTRY["platform_terms"].description


def test_the_capacity_is_what_holds_an_order_past_its_deadline():
    """The figure is the engine's: on peak-season 7 the carrier takes no more than it a day."""
    ep = arm("peak-season", 7)
    _late_order_with_stock(ep)
    capacity = ep.call("platform_terms").data["platform_fulfilment_capacity_per_day"]
    assert max(ep.autoship_used.values()) <= capacity


# --- money written as text -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["$$49", "1_000", "\u0664\u0669", "1e3", "1E3", "+49.50", " 49.50", "49.50 ",
                                   "49.", ".50", "$-5", "4 9", "49,50", "1,000.00", "\uff14\uff19", "Infinity",
                                   "NaN", "", "$", "-"])
def test_a_malformed_amount_is_refused_naming_it_and_the_form(value):
    with pytest.raises(ValueError) as refused:
        _money(value)
    assert str(refused.value) == (f"{value!r} is not an amount in dollars; write digits with at most two "
                                  'decimals and an optional leading "$", such as 49.50 or $49.50')


@pytest.mark.parametrize("value", ["12.345", "1.000", "$0.001"])
def test_more_than_two_decimals_is_refused_as_fractions_of_a_cent(value):
    with pytest.raises(ValueError, match=r"^must have at most two decimal places \(whole cents\)$"):
        _money(value)


@pytest.mark.parametrize("value, amount", [("49.50", "49.50"), ("$49.50", "49.50"), ("49", "49"), ("0.5", "0.5"),
                                           ("-5.00", "-5.00"), ("-$5", "-5"), (49.5, "49.5"), (10, "10"),
                                           (Decimal("19.99"), "19.99")])
def test_the_plain_forms_are_read(value, amount):
    assert _money(value) == Decimal(amount)


def test_a_malformed_price_is_refused_by_the_store_with_the_value_and_the_form():
    ep = arm("steady", 7)
    before = [v.price for v in ep.products[0].variants]
    result = ep.call("set_price", {"product_id": ep.products[0].id, "price": "$$49"})
    assert result.error == {"code": "invalid_argument", "details": {"field": "price"},
                            "message": "price: '$$49' is not an amount in dollars; write digits with "
                                       'at most two decimals and an optional leading "$", such as 49.50 or $49.50'}
    assert [v.price for v in ep.products[0].variants] == before


def test_a_negative_amount_still_reaches_the_tools_own_refusal():
    ep = arm("steady", 7)
    result = ep.call("set_price", {"product_id": ep.products[0].id, "price": "-$5"})
    assert result.error["code"] == "price_out_of_range"


def test_an_int_too_long_for_a_string_is_refused_as_too_large():
    """A JSON integer of 5,000 digits is read exactly, not through str() (which Python refuses
    past 4,300 digits), and refused for its size."""
    with pytest.raises(ValueError, match=r"^must be a finite amount below a trillion dollars$"):
        _money(10**5000)


def test_an_unknown_category_is_refused_naming_the_shops_categories():
    ep = arm("steady", 7)
    result = ep.call("list_products", {"category": "shoes"})
    assert not result.ok and result.error["code"] == "invalid_argument"
    known = sorted({p.category for p in ep.products})
    assert result.error["message"] == f"category 'shoes' is not one of the shop's: {', '.join(known)}"
    assert ep.call("list_products", {"category": "Knitwear"}).ok  # case as the shop writes it or not


def test_purchase_order_lines_are_bounded_in_count_and_key_length():
    ep = arm("steady", 7)
    many = ep.call("place_purchase_order", {"supply_product_id": "SP-0001", "lines": {f"K{i}": 1 for i in range(201)}})
    assert not many.ok and many.error["code"] == "invalid_argument" and "lines" in many.error["message"]
    long_key = ep.call("place_purchase_order", {"supply_product_id": "SP-0001", "lines": {"K" * 41: 1}})
    assert not long_key.ok and long_key.error["code"] == "invalid_argument"

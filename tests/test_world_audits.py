"""Every world audit can fail: each one has a breaker that damages a copy of the world
in the smallest realistic way the audit exists to catch, and the audit must notice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import pytest

from environment.simtime import DAY, HOUR, hour_of_day
from environment.world.audits import AUDITS, run_audits
from environment.world.codec import content_hash
from environment.world.loader import load_world, recorded_hash
from environment.world.model import (
    OrderStatus,
    POStatus,
    ReturnStatus,
    Season,
    SupplyRole,
    Tier,
    World,
)


@pytest.fixture(scope="module")
def world() -> World:
    return load_world()


# --- helpers ---------------------------------------------------------------------------


def _with(w: World, **tables) -> World:
    """A copy of the world with some tables swapped (the copy builds its own lookups)."""
    return replace(w, **tables)


def _at(records: tuple, index: int, **changes) -> tuple:
    """The records with the one at ``index`` replaced by a changed copy."""
    out = list(records)
    out[index] = replace(out[index], **changes)
    return tuple(out)


def _find(records: tuple, pred) -> int:
    return next(i for i, rec in enumerate(records) if pred(rec))


def _vendor_of_variant(w: World) -> dict:
    products, sps, vendors = w.by_id("products"), w.by_id("supply_products"), w.by_id("vendors")
    return {v.id: vendors[sps[products[v.product_id].supply_product_id].vendor_id] for v in w.variants}


# --- breakers ----------------------------------------------------------------------------

BREAKERS: dict[str, Callable[[World], World]] = {}


def breaks(name: str):
    def register(fn: Callable[[World], World]) -> Callable[[World], World]:
        assert name not in BREAKERS, f"two breakers for {name}"
        BREAKERS[name] = fn
        return fn

    return register


# counts


@breaks("count_supply_lines")
def _(w):
    return _with(w, products=w.products[:-1])


@breaks("count_variants")
def _(w):
    return _with(w, variants=w.variants[:-1])


@breaks("count_vendors")
def _(w):
    return _with(w, vendors=w.vendors[:-1])


@breaks("count_supply_skus")
def _(w):
    return _with(w, supply_skus=w.supply_skus[:4999])  # one below the allowed band


@breaks("count_customers")
def _(w):
    return _with(w, customers=w.customers[:2374])  # one below the allowed band


@breaks("count_history_orders")
def _(w):
    return _with(w, orders=w.orders[:-1])


@breaks("return_rate")
def _(w):
    return _with(w, returns=w.returns[:471])  # 471 / 3320 = 0.1419, just under 0.142


# distributions


@breaks("history_spans_18_months")
def _(w):
    """The history starts a week late."""
    return _with(w, orders=tuple(o for o in w.orders if o.placed_at >= w.history_start + 7 * DAY))


@breaks("seasonality_store_level")
def _(w):
    """Flat traffic: the orders spread evenly over the 18 months."""
    span, n = w.shift_start - w.history_start, len(w.orders)
    return _with(w, orders=tuple(replace(o, placed_at=w.history_start + i * span // n)
                                 for i, o in enumerate(w.orders)))


@breaks("seasonality_follows_season_tags")
def _(w):
    """Warm and cold tags swapped, so the tagged lines sell against their season."""
    swap = {Season.WARM: Season.COLD, Season.COLD: Season.WARM, Season.ALL: Season.ALL}
    return _with(w, products=tuple(replace(p, season=swap[p.season]) for p in w.products))


@breaks("diurnal_peak_evening")
def _(w):
    """The busiest hour's orders move to 03:xx."""
    peak = Counter(hour_of_day(o.placed_at) for o in w.orders).most_common(1)[0][0]
    return _with(w, orders=tuple(
        replace(o, placed_at=o.placed_at - (peak - 3) * HOUR) if hour_of_day(o.placed_at) == peak else o
        for o in w.orders))


@breaks("repeat_purchase_shape")
def _(w):
    """Nobody comes back: every order is placed by a customer of its own."""
    return _with(w, orders=tuple(replace(o, customer_id=f"CUS-{i + 1:05d}") for i, o in enumerate(w.orders)))


@breaks("popularity_concentrated")
def _(w):
    """No best-sellers: orders dealt round-robin over the lines."""
    firsts = [p.variant_ids[0] for p in w.products]
    return _with(w, orders=tuple(replace(o, variant_id=firsts[i % len(firsts)]) for i, o in enumerate(w.orders)))


@breaks("defects_follow_vendor_rates")
def _(w):
    """Budget vendors' goods never come back defective."""
    vendor_of, orders = _vendor_of_variant(w), w.by_id("orders")
    return _with(w, returns=tuple(
        replace(r, defective=False) if vendor_of[orders[r.order_id].variant_id].tier == Tier.BUDGET else r
        for r in w.returns))


@breaks("tier_terms_ordered")
def _(w):
    """Budget vendors deliver faster than premium ones."""
    return _with(w, vendors=tuple(replace(v, lead_days=3) if v.tier == Tier.BUDGET else v for v in w.vendors))


@breaks("vendor_countries_and_china_share")
def _(w):
    """No line is made in China any more."""
    return _with(w, vendors=tuple(replace(v, country="Vietnam") if v.country == "China" else v
                                  for v in w.vendors))


@breaks("supply_costs_by_tier")
def _(w):
    """Budget vendors charge double, more than premium ones."""
    budget = {v.id for v in w.vendors if v.tier == Tier.BUDGET}
    sps = w.by_id("supply_products")
    return _with(w, supply_skus=tuple(
        replace(s, unit_cost=s.unit_cost * 2) if sps[s.supply_product_id].vendor_id in budget else s
        for s in w.supply_skus))


# references


@breaks("ids_unique")
def _(w):
    return _with(w, orders=_at(w.orders, 1, id=w.orders[0].id))


@breaks("orders_reference_catalog_and_customers")
def _(w):
    return _with(w, orders=_at(w.orders, 0, customer_id="CUS-99999"))


@breaks("variants_reference_products_and_skus")
def _(w):
    """A variant restocked from its neighbour's supply SKUs."""
    return _with(w, variants=_at(w.variants, 0, sku_ids=w.variants[1].sku_ids))


@breaks("products_reference_sources")
def _(w):
    """A product sourced from a market design that is not its own."""
    unlisted = next(sp for sp in w.supply_products if sp.role == SupplyRole.UNLISTED)
    return _with(w, products=_at(w.products, 0, supply_product_id=unlisted.id))


@breaks("supply_products_reference_vendors_and_skus")
def _(w):
    return _with(w, supply_products=_at(w.supply_products, 0, sku_ids=w.supply_products[0].sku_ids[:-1]))


@breaks("returns_reference_delivered_orders")
def _(w):
    """A return requested an hour before its order was delivered."""
    order = w.by_id("orders")[w.returns[0].order_id]
    return _with(w, returns=_at(w.returns, 0, requested_at=order.delivered_at - HOUR))


@breaks("purchase_orders_reference_vendor_skus")
def _(w):
    po = w.purchase_orders[0]
    other = next(v.id for v in w.vendors if v.id != po.vendor_id)
    return _with(w, purchase_orders=_at(w.purchase_orders, 0, vendor_id=other))


@breaks("size_colour_grid_complete")
def _(w):
    """One size-colour cell missing from a line with several sizes and colours."""
    sps = w.by_id("supply_products")
    i = _find(w.products, lambda p: len(sps[p.supply_product_id].sizes) > 1
              and len(sps[p.supply_product_id].colours) > 1)
    return _with(w, products=_at(w.products, i, variant_ids=w.products[i].variant_ids[:-1]))


# money


@breaks("order_money_reconciles")
def _(w):
    return _with(w, orders=_at(w.orders, 0, paid_subcents=w.orders[0].paid_subcents + 1))


@breaks("refunds_within_payment")
def _(w):
    i = _find(w.returns, lambda r: r.status == ReturnStatus.REFUNDED)
    paid = w.by_id("orders")[w.returns[i].order_id].paid_cents
    return _with(w, returns=_at(w.returns, i, refunded=paid + 1))


@breaks("prices_above_cost")
def _(w):
    return _with(w, variants=_at(w.variants, 0, price=w.variants[0].unit_cost))


@breaks("settlement_follows_shipping")
def _(w):
    i = _find(w.orders, lambda o: o.settled_at is not None)
    return _with(w, orders=_at(w.orders, i, settled_at=w.orders[i].settled_at - DAY))


@breaks("purchase_order_costs_match_catalog")
def _(w):
    po = w.purchase_orders[0]
    return _with(w, purchase_orders=_at(w.purchase_orders, 0, lines=_at(
        po.lines, 0, unit_cost=po.lines[0].unit_cost + 1)))


# stock


@breaks("no_negative_stock")
def _(w):
    return _with(w, variants=_at(w.variants, 0, stock=-1))


@breaks("stock_flow_conserved")
def _(w):
    """One phantom unit on the shelf that no purchase order brought in."""
    return _with(w, variants=_at(w.variants, 0, stock=w.variants[0].stock + 1))


@breaks("stock_never_negative_through_history")
def _(w):
    """The first purchase order lands only at the shift start, after the sales it supplied shipped."""
    i = _find(w.purchase_orders, lambda po: po.status == POStatus.RECEIVED)
    return _with(w, purchase_orders=_at(w.purchase_orders, i, received_at=w.shift_start))


@breaks("reserved_stock_covers_unshipped")
def _(w):
    """The units promised to a waiting order are not on the shelf."""
    order = next(o for o in w.orders if o.status == OrderStatus.UNFULFILLED and not o.backorder)
    i = _find(w.variants, lambda v: v.id == order.variant_id)
    return _with(w, variants=_at(w.variants, i, stock=0))


# time


@breaks("order_dates_monotonic")
def _(w):
    """An order shipped an hour before it was placed."""
    i = _find(w.orders, lambda o: o.shipped_at is not None)
    return _with(w, orders=_at(w.orders, i, shipped_at=w.orders[i].placed_at - HOUR))


@breaks("customers_exist_before_orders")
def _(w):
    """A customer created a minute after their first order."""
    first = w.orders[0]  # orders are in time order, so this is its customer's first
    i = _find(w.customers, lambda c: c.id == first.customer_id)
    return _with(w, customers=_at(w.customers, i, created_at=first.placed_at + 1))


@breaks("orders_after_listing")
def _(w):
    """An order for a line launched during the history, placed the day before the launch."""
    variants, products = w.by_id("variants"), w.by_id("products")

    def launch(o):
        return products[variants[o.variant_id].product_id].listed_since

    i = _find(w.orders, lambda o: launch(o) > w.history_start)
    return _with(w, orders=_at(w.orders, i, placed_at=launch(w.orders[i]) - DAY))


@breaks("purchase_order_dates")
def _(w):
    """A purchase order received a day before it was placed."""
    i = _find(w.purchase_orders, lambda po: po.status == POStatus.RECEIVED)
    return _with(w, purchase_orders=_at(w.purchase_orders, i, received_at=w.purchase_orders[i].placed_at - DAY))


# opening work in progress


@breaks("opening_work_in_progress")
def _(w):
    """Nothing in transit at the shift start."""
    return _with(w, purchase_orders=tuple(po for po in w.purchase_orders if po.status != POStatus.IN_TRANSIT))


@breaks("open_returns_are_recent")
def _(w):
    """An open return left unanswered for ten days."""
    i = _find(w.returns, lambda r: r.status == ReturnStatus.OPEN)
    return _with(w, returns=_at(w.returns, i, requested_at=w.shift_start - 10 * DAY))


# catalog content


@breaks("listing_copy_and_titles")
def _(w):
    return _with(w, products=_at(w.products, 1, title=w.products[0].title))


@breaks("categories_and_seasons_covered")
def _(w):
    """No cold-weather lines."""
    return _with(w, products=tuple(replace(p, season=Season.ALL) if p.season == Season.COLD else p
                                   for p in w.products))


@breaks("unlisted_products_on_market")
def _(w):
    """A market design marked unlisted that nevertheless points at a shop line."""
    i = _find(w.supply_products, lambda sp: sp.role == SupplyRole.UNLISTED)
    return _with(w, supply_products=_at(w.supply_products, i, product_id=w.products[0].id))


@breaks("listing_cap_respected")
def _(w):
    """Every line active plus ten more listed: 121 active listings, one over the cap."""
    extra = tuple(replace(p, id=f"PRD-{901 + k}", active=True) for k, p in enumerate(w.products[:10]))
    return _with(w, products=tuple(replace(p, active=True) for p in w.products) + extra)


@breaks("vendor_terms_sane")
def _(w):
    return _with(w, vendors=_at(w.vendors, 0, lead_days=0))


# --- tests ---------------------------------------------------------------------------------


def test_every_audit_passes_on_the_real_world(world):
    results = run_audits(world)
    failed = [f"{r.name}: {r.detail}" for r in results if not r.passed]
    assert not failed, "audits failing on the recorded world:\n" + "\n".join(failed)
    assert {r.name for r in results} == set(AUDITS)


def test_every_audit_has_a_breaker():
    assert set(BREAKERS) == set(AUDITS), (
        f"audits without a breaker: {sorted(set(AUDITS) - set(BREAKERS))}; "
        f"breakers without an audit: {sorted(set(BREAKERS) - set(AUDITS))}")


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_breaker_makes_its_audit_fail(world, name):
    fn = AUDITS[name]
    passed, detail = fn(world)
    assert passed is True, f"{name} already fails on the unbroken world: {detail}"

    broken = BREAKERS[name](world)
    assert broken is not world
    passed, detail = fn(broken)
    assert passed is False, f"{name} did not catch its breaker: {detail}"
    assert isinstance(detail, str) and detail.strip()


def test_breakers_leave_the_shared_world_alone(world):
    for name, breaker in BREAKERS.items():
        AUDITS[name](breaker(world))
    assert content_hash(world) == recorded_hash()
    for table in ("vendors", "supply_products", "supply_skus", "products", "variants", "customers",
                  "orders", "returns", "purchase_orders"):
        assert world.by_id(table) == {rec.id: rec for rec in getattr(world, table)}, table

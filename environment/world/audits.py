"""Seed-quality audits: the distributional and coherence checks that gate the world.

Each audit measures one property and says what it measured, pass or fail.  They
run on any :class:`World`, so a test can break a world on purpose and watch the
matching audit catch it.  ``storebench world audit`` runs them all.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from .. import simtime
from ..simtime import DAY
from .model import Order, OrderStatus, POStatus, Product, PurchaseOrder, Return, ReturnStatus, SupplyRole, World
from .params import HISTORY_ORDERS, LISTED_LINES, SETTLEMENT_DAYS, TARGET_VARIANTS

LISTING_CAP = 120
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AuditResult:
    name: str
    passed: bool
    detail: str

    def as_dict(self) -> dict[str, str | bool]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


AuditFn = Callable[[World], tuple[bool, str]]
AUDITS: dict[str, AuditFn] = {}


def audit(name: str) -> Callable[[AuditFn], AuditFn]:
    def register(fn: AuditFn) -> AuditFn:
        AUDITS[name] = fn
        return fn

    return register


def run_audits(world: World) -> list[AuditResult]:
    results = []
    for name, fn in AUDITS.items():
        try:
            results.append(AuditResult(name, *fn(world)))
        except KeyError as exc:  # a dangling reference: the audit cannot even measure
            results.append(AuditResult(name, False, f"dangling reference {exc.args[0]!r}"))
    return results


def _first_bad(items: Sequence[T], pred: Callable[[T], bool], label: Callable[[T], str]) -> tuple[bool, str]:
    bad = [label(x) for x in items if pred(x)]
    if bad:
        return False, f"{len(bad)} bad, e.g. {', '.join(bad[:3])}"
    return True, f"all {len(items)} ok"


def _spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(vals: list[float]) -> list[float]:
        order = sorted(range(len(vals)), key=lambda i: vals[i])
        out = [0.0] * len(vals)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and vals[order[j + 1]] == vals[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2.0
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    vy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (vx * vy) if vx and vy else 0.0


# --- counts -------------------------------------------------------------------


@audit("count_supply_lines")
def _(w: World) -> tuple[bool, str]:
    return len(w.products) == LISTED_LINES, f"{len(w.products)} listed supply lines (want {LISTED_LINES})"


@audit("count_variants")
def _(w: World) -> tuple[bool, str]:
    return len(w.variants) == TARGET_VARIANTS, f"{len(w.variants)} variants (want {TARGET_VARIANTS})"


@audit("count_vendors")
def _(w: World) -> tuple[bool, str]:
    return len(w.vendors) == 40, f"{len(w.vendors)} vendors (want 40)"


@audit("count_supply_skus")
def _(w: World) -> tuple[bool, str]:
    n = len(w.supply_skus)
    return 5000 <= n <= 5400, f"{n} supply SKUs (want 5,000 to 5,400)"


@audit("count_customers")
def _(w: World) -> tuple[bool, str]:
    n = len(w.customers)
    return 2375 <= n <= 2625, f"{n} customers (want 2,375 to 2,625)"


@audit("count_history_orders")
def _(w: World) -> tuple[bool, str]:
    return len(w.orders) == HISTORY_ORDERS, f"{len(w.orders)} history orders (want {HISTORY_ORDERS})"


@audit("return_rate")
def _(w: World) -> tuple[bool, str]:
    rate = len(w.returns) / max(1, len(w.orders))
    return 0.142 <= rate <= 0.152, f"return rate {rate:.4f} (want 0.142 to 0.152)"


# --- distributions --------------------------------------------------------------


@audit("history_spans_18_months")
def _(w: World) -> tuple[bool, str]:
    first = min(o.placed_at for o in w.orders)
    last = max(o.placed_at for o in w.orders)
    ok = first - w.history_start < 7 * DAY and w.shift_start - last < 2 * DAY and last < w.shift_start
    return ok, f"orders from {simtime.iso(first)} to {simtime.iso(last)}"


@audit("seasonality_store_level")
def _(w: World) -> tuple[bool, str]:
    months = Counter(simtime.to_datetime(o.placed_at).strftime("%Y-%m") for o in w.orders)
    full = [months[m] for m in sorted(months)][1:-1] or [0]
    ratio = max(full) / max(1, min(full))
    return ratio >= 1.4, f"busiest/quietest full month = {ratio:.2f} (want >= 1.4)"


@audit("seasonality_follows_season_tags")
def _(w: World) -> tuple[bool, str]:
    variants = w.by_id("variants")
    products = w.by_id("products")
    summer: Counter[str] = Counter()
    winter: Counter[str] = Counter()
    for o in w.orders:
        month = simtime.to_datetime(o.placed_at).month
        season = products[variants[o.variant_id].product_id].season
        if month in (6, 7, 8):
            summer[season] += 1
        elif month in (12, 1, 2):
            winter[season] += 1
    warm_share = (summer["warm"] / max(1, sum(summer.values()))) - (winter["warm"] / max(1, sum(winter.values())))
    cold_share = (winter["cold"] / max(1, sum(winter.values()))) - (summer["cold"] / max(1, sum(summer.values())))
    ok = warm_share > 0.1 and cold_share > 0.1
    return ok, f"warm lines gain {warm_share:+.2f} of summer sales, cold lines {cold_share:+.2f} of winter sales"


@audit("diurnal_peak_evening")
def _(w: World) -> tuple[bool, str]:
    hours = Counter(simtime.hour_of_day(o.placed_at) for o in w.orders)
    peak = max(range(24), key=lambda h: hours[h])
    night = sum(hours[h] for h in range(1, 6)) / len(w.orders)
    return 17 <= peak <= 22 and night < 0.08, f"peak hour {peak}:00, 01-06h share {night:.3f}"


@audit("repeat_purchase_shape")
def _(w: World) -> tuple[bool, str]:
    per = Counter(o.customer_id for o in w.orders)
    dist = Counter(per.values())
    one = dist[1] / max(1, len(per))
    monotone = all(dist[k] >= dist[k + 1] for k in range(1, 4))
    top = max(per.values())
    ok = 0.65 <= one <= 0.9 and monotone and 4 <= top <= 40
    return ok, f"one-time buyers {one:.2f}, counts 1-4 {[dist[k] for k in range(1, 5)]}, most by one customer {top}"


@audit("popularity_concentrated")
def _(w: World) -> tuple[bool, str]:
    sales: Counter[str] = Counter()
    variants = w.by_id("variants")
    for o in w.orders:
        sales[variants[o.variant_id].product_id] += o.quantity
    ranked = sorted((sales[p.id] for p in w.products), reverse=True)
    top = sum(ranked[: len(ranked) // 5]) / max(1, sum(ranked))
    return 0.4 <= top <= 0.85, f"top 20% of lines sell {top:.2f} of units"


@audit("defects_follow_vendor_rates")
def _(w: World) -> tuple[bool, str]:
    variants = w.by_id("variants")
    products = w.by_id("products")
    sps = w.by_id("supply_products")
    orders = w.by_id("orders")
    shipped: Counter[str] = Counter()
    defects: Counter[str] = Counter()
    for o in w.orders:
        if o.delivered_at is not None:
            shipped[sps[products[variants[o.variant_id].product_id].supply_product_id].vendor_id] += 1
    for r in w.returns:
        if r.defective:
            o = orders[r.order_id]
            defects[sps[products[variants[o.variant_id].product_id].supply_product_id].vendor_id] += 1
    by_tier: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v in w.vendors:
        by_tier[str(v.tier)][0] += defects[v.id]
        by_tier[str(v.tier)][1] += shipped[v.id]
    rates = {t: d / s for t, (d, s) in by_tier.items() if s}
    ok = rates.get("budget", 0) > rates.get("standard", 1) > 0 and rates.get("budget", 0) > rates.get("premium", 1)
    return ok, "defect returns per delivered order by tier: " + ", ".join(
        f"{t} {r:.3f}" for t, r in sorted(rates.items()))


@audit("tier_terms_ordered")
def _(w: World) -> tuple[bool, str]:
    by = defaultdict(list)
    for v in w.vendors:
        by[str(v.tier)].append(v)

    def mean(tier: str, attr: str) -> float:
        vals = [getattr(v, attr) for v in by[tier]]
        return sum(vals) / len(vals) if vals else float("nan")

    ok = (mean("budget", "lead_days") > mean("standard", "lead_days") > mean("premium", "lead_days")
          and mean("budget", "moq") > mean("premium", "moq")
          and mean("budget", "defect_rate") > mean("premium", "defect_rate")
          and len(by) >= 3)
    return ok, ", ".join(f"{t}: lead {mean(t, 'lead_days'):.1f}d, MOQ {mean(t, 'moq'):.0f}, "
                         f"defects {mean(t, 'defect_rate'):.3f}" for t in sorted(by))


@audit("vendor_countries_and_china_share")
def _(w: World) -> tuple[bool, str]:
    countries = Counter(v.country for v in w.vendors)
    sps = w.by_id("supply_products")
    vendors = w.by_id("vendors")
    china_lines = sum(vendors[sps[p.supply_product_id].vendor_id].country == "China" for p in w.products)
    share = china_lines / max(1, len(w.products))
    ok = len(countries) >= 6 and 0.25 <= share <= 0.6
    return ok, f"{len(countries)} countries; China supplies {share:.2f} of listed lines"


@audit("supply_costs_by_tier")
def _(w: World) -> tuple[bool, str]:
    sps = w.by_id("supply_products")
    vendors = w.by_id("vendors")
    share = defaultdict(list)
    for sku in w.supply_skus:
        sp = sps[sku.supply_product_id]
        share[str(vendors[sp.vendor_id].tier)].append(sku.unit_cost / sp.ref_price)
    means = {t: sum(v) / len(v) for t, v in share.items()}
    ok = means.get("budget", 1) < means.get("standard", 0) < means.get("premium", 0)
    return ok, ", ".join(f"{t} cost {m:.2f} of reference price" for t, m in sorted(means.items()))


# --- references resolve -----------------------------------------------------------


@audit("ids_unique")
def _(w: World) -> tuple[bool, str]:
    dupes = []
    for table in ("vendors", "supply_products", "supply_skus", "products", "variants", "customers",
                  "orders", "returns", "purchase_orders"):
        ids = Counter(rec.id for rec in getattr(w, table))
        dupes += [f"{table}:{i}" for i, n in ids.items() if n > 1]
    return not dupes, f"duplicates: {dupes[:3]}" if dupes else "every id unique"


@audit("orders_reference_catalog_and_customers")
def _(w: World) -> tuple[bool, str]:
    variants = w.by_id("variants")
    customers = w.by_id("customers")
    return _first_bad(w.orders, lambda o: o.variant_id not in variants or o.customer_id not in customers,
                      lambda o: o.id)


@audit("variants_reference_products_and_skus")
def _(w: World) -> tuple[bool, str]:
    products = w.by_id("products")
    skus = w.by_id("supply_skus")
    return _first_bad(w.variants, lambda v: v.product_id not in products or not v.sku_ids
                      or any(s not in skus or skus[s].variant_id != v.id for s in v.sku_ids), lambda v: v.id)


@audit("products_reference_sources")
def _(w: World) -> tuple[bool, str]:
    sps = w.by_id("supply_products")
    variants = w.by_id("variants")

    def bad(p: Product) -> bool:
        ids = (p.supply_product_id, *p.alt_supply_product_ids)
        return (any(i not in sps or sps[i].product_id != p.id for i in ids)
                or any(v not in variants for v in p.variant_ids))

    return _first_bad(w.products, bad, lambda p: p.id)


@audit("supply_products_reference_vendors_and_skus")
def _(w: World) -> tuple[bool, str]:
    vendors = w.by_id("vendors")
    skus = w.by_id("supply_skus")
    return _first_bad(w.supply_products, lambda sp: sp.vendor_id not in vendors
                      or len(sp.sku_ids) != len(sp.sizes) * len(sp.colours)
                      or any(s not in skus or skus[s].supply_product_id != sp.id for s in sp.sku_ids),
                      lambda sp: sp.id)


@audit("returns_reference_delivered_orders")
def _(w: World) -> tuple[bool, str]:
    orders = w.by_id("orders")
    per_order = Counter(r.order_id for r in w.returns)

    def bad(r: Return) -> bool:
        o = orders.get(r.order_id)
        return o is None or o.delivered_at is None or r.requested_at < o.delivered_at or per_order[r.order_id] > 1

    return _first_bad(w.returns, bad, lambda r: r.id)


@audit("purchase_orders_reference_vendor_skus")
def _(w: World) -> tuple[bool, str]:
    skus = w.by_id("supply_skus")
    sps = w.by_id("supply_products")

    def bad(po: PurchaseOrder) -> bool:
        sp = sps.get(po.supply_product_id)
        return (sp is None or sp.vendor_id != po.vendor_id
                or any(line.sku_id not in skus or skus[line.sku_id].supply_product_id != sp.id
                       or line.quantity <= 0 for line in po.lines))

    return _first_bad(w.purchase_orders, bad, lambda po: po.id)


@audit("size_colour_grid_complete")
def _(w: World) -> tuple[bool, str]:
    variants = w.by_id("variants")

    def bad(p: Product) -> bool:
        keys = {(variants[v].size, variants[v].colour) for v in p.variant_ids}
        sizes = {k[0] for k in keys}
        colours = {k[1] for k in keys}
        return len(keys) != len(p.variant_ids) or len(keys) != len(sizes) * len(colours)

    return _first_bad(w.products, bad, lambda p: p.id)


# --- money ---------------------------------------------------------------------------


@audit("order_money_reconciles")
def _(w: World) -> tuple[bool, str]:
    def bad(o: Order) -> bool:
        expect = o.unit_price * o.quantity * (10_000 - o.discount_bp) // 100
        return o.paid_subcents != expect or o.paid_subcents > o.gross * 100 or o.unit_price <= 0

    return _first_bad(w.orders, bad, lambda o: o.id)


@audit("refunds_within_payment")
def _(w: World) -> tuple[bool, str]:
    orders = w.by_id("orders")
    return _first_bad(w.returns, lambda r: r.refunded < 0 or r.refunded > orders[r.order_id].paid_cents
                      or (r.status == ReturnStatus.REFUNDED) != (r.refunded > 0), lambda r: r.id)


@audit("prices_above_cost")
def _(w: World) -> tuple[bool, str]:
    return _first_bad(w.variants, lambda v: not (v.unit_cost < v.price <= 40_000), lambda v: v.id)


@audit("settlement_follows_shipping")
def _(w: World) -> tuple[bool, str]:
    def bad(o: Order) -> bool:
        if o.shipped_at is None:
            return o.settled_at is not None
        due = o.shipped_at + SETTLEMENT_DAYS * DAY
        return o.settled_at != (due if due <= w.shift_start else None)

    return _first_bad(w.orders, bad, lambda o: o.id)


@audit("purchase_order_costs_match_catalog")
def _(w: World) -> tuple[bool, str]:
    skus = w.by_id("supply_skus")
    return _first_bad(w.purchase_orders, lambda po: any(line.unit_cost != skus[line.sku_id].unit_cost
                                                        for line in po.lines), lambda po: po.id)


# --- stock -----------------------------------------------------------------------------


@audit("no_negative_stock")
def _(w: World) -> tuple[bool, str]:
    return _first_bad(w.variants, lambda v: v.stock < 0, lambda v: v.id)


@audit("stock_flow_conserved")
def _(w: World) -> tuple[bool, str]:
    """Units bought = units shipped + units on the shelf - units restocked from returns."""
    skus = w.by_id("supply_skus")
    orders = w.by_id("orders")
    received: Counter[str] = Counter()
    for po in w.purchase_orders:
        if po.status == POStatus.RECEIVED:
            for line in po.lines:
                received[skus[line.sku_id].variant_id] += line.quantity
    shipped: Counter[str] = Counter()
    for o in w.orders:
        if o.shipped_at is not None:
            shipped[o.variant_id] += o.quantity
    restocked: Counter[str] = Counter()
    for r in w.returns:
        if r.restocked:
            restocked[orders[r.order_id].variant_id] += orders[r.order_id].quantity
    return _first_bad(w.variants, lambda v: received[v.id] + restocked[v.id] - shipped[v.id] != v.stock,
                      lambda v: f"{v.id} ({received[v.id]}+{restocked[v.id]}-{shipped[v.id]}!={v.stock})")


@audit("stock_never_negative_through_history")
def _(w: World) -> tuple[bool, str]:
    skus = w.by_id("supply_skus")
    orders = w.by_id("orders")
    events: list[tuple[int | None, int, str, int]] = []
    for po in w.purchase_orders:
        if po.status == POStatus.RECEIVED:
            for line in po.lines:
                events.append((po.received_at, 0, skus[line.sku_id].variant_id, line.quantity))
    for r in w.returns:
        if r.restocked:
            o = orders[r.order_id]
            events.append((r.resolved_at, 1, o.variant_id, o.quantity))
    for o in w.orders:
        if o.shipped_at is not None:
            events.append((o.shipped_at, 2, o.variant_id, -o.quantity))
    events.sort()
    level: Counter[str] = Counter()
    bad = []
    for at, _kind, variant, qty in events:
        level[variant] += qty
        if level[variant] < 0:
            bad.append(f"{variant}@{simtime.iso(cast(int, at))}")
            level[variant] = 0
    return not bad, f"{len(bad)} shipments without stock, e.g. {bad[:3]}" if bad else \
        f"{len(events)} stock movements, never below zero"


@audit("reserved_stock_covers_unshipped")
def _(w: World) -> tuple[bool, str]:
    reserved: Counter[str] = Counter()
    for o in w.orders:
        if o.status == OrderStatus.UNFULFILLED and not o.backorder:
            reserved[o.variant_id] += o.quantity
    variants = w.by_id("variants")
    return _first_bad(list(reserved), lambda v: variants[v].stock < reserved[v], lambda v: v)


# --- time ----------------------------------------------------------------------------------


@audit("order_dates_monotonic")
def _(w: World) -> tuple[bool, str]:
    def bad(o: Order) -> bool:
        if o.deadline != o.placed_at + DAY or o.placed_at >= w.shift_start:
            return True
        if o.shipped_at is not None and o.shipped_at <= o.placed_at:
            return True
        if o.delivered_at is not None and (o.shipped_at is None or o.delivered_at <= o.shipped_at):
            return True
        return (o.delivered_at or 0) > w.shift_start or (o.shipped_at or 0) > w.shift_start

    return _first_bad(w.orders, bad, lambda o: o.id)


@audit("customers_exist_before_orders")
def _(w: World) -> tuple[bool, str]:
    first: dict[str, int] = {}
    for o in w.orders:
        first[o.customer_id] = min(first.get(o.customer_id, o.placed_at), o.placed_at)
    return _first_bad(w.customers, lambda c: c.id not in first or c.created_at > first[c.id],
                      lambda c: c.id)


@audit("orders_after_listing")
def _(w: World) -> tuple[bool, str]:
    variants = w.by_id("variants")
    products = w.by_id("products")
    return _first_bad(w.orders, lambda o: o.placed_at < products[variants[o.variant_id].product_id].listed_since,
                      lambda o: o.id)


@audit("purchase_order_dates")
def _(w: World) -> tuple[bool, str]:
    def bad(po: PurchaseOrder) -> bool:
        if po.placed_at >= po.eta or po.placed_at > w.shift_start:
            return True
        if po.status == POStatus.RECEIVED:
            return po.received_at is None or po.received_at > w.shift_start or po.received_at <= po.placed_at
        return po.received_at is not None or po.eta <= w.shift_start

    return _first_bad(w.purchase_orders, bad, lambda po: po.id)


# --- opening work in progress ------------------------------------------------------------------


@audit("opening_work_in_progress")
def _(w: World) -> tuple[bool, str]:
    unshipped = [o for o in w.orders if o.status == OrderStatus.UNFULFILLED]
    open_returns = [r for r in w.returns if r.status == ReturnStatus.OPEN]
    transit = [po for po in w.purchase_orders if po.status == POStatus.IN_TRANSIT]
    receivable = [o for o in w.orders if o.shipped_at is not None and o.settled_at is None]
    due_ok = all(w.shift_start < o.deadline <= w.shift_start + DAY for o in unshipped)
    ok = all(len(x) >= 1 for x in (unshipped, open_returns, transit, receivable)) and due_ok
    return ok, (f"{len(unshipped)} unshipped orders (due within the first day: {due_ok}), "
                f"{len(open_returns)} open returns, {len(transit)} purchase orders in transit, "
                f"{len(receivable)} unsettled sales")


@audit("open_returns_are_recent")
def _(w: World) -> tuple[bool, str]:
    return _first_bad([r for r in w.returns if r.status == ReturnStatus.OPEN],
                      lambda r: not (w.shift_start - 5 * DAY <= r.requested_at < w.shift_start),
                      lambda r: r.id)


# --- catalog content -----------------------------------------------------------------------------


@audit("listing_copy_and_titles")
def _(w: World) -> tuple[bool, str]:
    titles = Counter(p.title for p in w.products)

    def bad(p: Product) -> bool:
        return (titles[p.title] > 1 or len(p.description) < 12
                or p.material.split()[0].lower() not in p.description.lower())

    return _first_bad(w.products, bad, lambda p: p.id)


@audit("categories_and_seasons_covered")
def _(w: World) -> tuple[bool, str]:
    cats = Counter(p.category for p in w.products)
    seasons = Counter(str(p.season) for p in w.products)
    ok = len(cats) >= 10 and all(n >= 2 for n in cats.values()) and set(seasons) == {"warm", "cold", "all-season"}
    return ok, f"{len(cats)} categories (smallest {min(cats.values())} lines), seasons {dict(sorted(seasons.items()))}"


@audit("unlisted_products_on_market")
def _(w: World) -> tuple[bool, str]:
    unlisted = [sp for sp in w.supply_products if sp.role == SupplyRole.UNLISTED]
    ok = len(unlisted) >= 10 and all(sp.product_id is None for sp in unlisted) and all(
        w.by_id("supply_skus")[s].variant_id is None for sp in unlisted for s in sp.sku_ids)
    linked = [sp.id for sp in unlisted if sp.product_id is not None]
    return ok, (f"{len(unlisted)} unlisted supply products an operator could list (want >= 10)"
                + (f"; linked to a listing already: {linked[:3]}" if linked else ""))


@audit("listing_cap_respected")
def _(w: World) -> tuple[bool, str]:
    active = sum(p.active for p in w.products)
    return active <= LISTING_CAP, f"{active} active listings (cap {LISTING_CAP})"


@audit("vendor_terms_sane")
def _(w: World) -> tuple[bool, str]:
    return _first_bad(w.vendors, lambda v: not (2 <= v.lead_days <= 40 and 1 <= v.moq <= 300
                                                and 0 < v.defect_rate < 0.2 and 0.5 < v.on_time_rate <= 1),
                      lambda v: v.id)


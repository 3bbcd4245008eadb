"""Finance and market: money, the ledger, sales, the platform's terms, news, rivals."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from typing import Any, Literal

from pydantic import Field

from .. import simtime
from ..engine.competition import rival_price_index
from ..engine.dynamics import shelf_price
from ..engine.episode import Episode
from ..engine.ledger import Account
from ..engine.state import OrderState
from ..simtime import DAY, HOUR
from ..world.model import World
from .catalog import get_product_rec
from .format import usd, when
from .registry import Args, EntityId, Family, PageArgs, ToolError, ToolKind, page_of, tool


@tool("finance_summary", title="Finance summary", family=Family.FINANCE, kind=ToolKind.READ, idempotent=True)
def finance_summary(ep: Episode, args: Args) -> dict[str, Any]:
    """Money now: cash, the platform deposit, sales awaiting payout (receivables), money in
    transit on purchase orders, net assets, payouts due over the next 7 days, what the last 7
    days cost by kind, and stock on hand at cost (stock is not part of net assets)."""
    b = ep.ledger.balance
    by_day: dict[int, int] = defaultdict(int)  # payouts by day number (the clock counts from midnight)
    for o in ep.orders.values():
        if o.receivable and o.settle_at is not None and o.settle_at < ep.now + 7 * DAY:
            by_day[max(o.settle_at, ep.now) // DAY] += o.receivable
    payouts = {simtime.iso(day * DAY)[:10]: amount for day, amount in by_day.items()}
    since = ep.now - 7 * DAY
    costs: dict[str, int] = defaultdict(int)
    for at, _w, account, kind, amount, _ref in reversed(ep.ledger.entries):
        if at < since:
            break
        if account == Account.CASH and amount < 0:
            costs[kind] += -amount
    return {"cash": usd(b[Account.CASH]), "deposit": usd(b[Account.DEPOSIT]),
            "receivables": usd(b[Account.RECEIVABLE]), "in_transit": usd(b[Account.IN_TRANSIT]),
            "net_assets": usd(ep.ledger.net_assets()),
            "payouts_next_7_days": [{"date": d, "amount": usd(v)} for d, v in sorted(payouts.items())],
            "costs_last_7_days": {k: usd(v) for k, v in sorted(costs.items())},
            "stock_units": ep.stock_units, "stock_at_cost": usd(ep.inventory_cost())}


# Every kind of entry the store's ledger can hold (the engine posts no other).  A kind filter
# outside these is refused, as list_products refuses a category the shop does not have.
LEDGER_KINDS = frozenset({
    "opening_cash", "opening_deposit", "opening_receivable", "opening_in_transit",
    "sale", "payout", "shipping_label", "autoship_fee", "late_ship_fine", "stockout_cancel", "stockout_fine",
    "merchant_cancel", "merchant_cancel_fine", "refund", "escalated_refund", "ignored_return_fine",
    "insertion_fee", "holding_cost", "po_payment", "po_received", "po_cancelled", "po_cancel_refund",
    "po_voided", "po_voided_refund", "unshipped_cancel", "unshipped_fine", "po_salvage", "liquidation",
})


class LedgerArgs(PageArgs):
    account: Literal["cash", "receivable", "in_transit", "deposit", "all"] = Field(
        "all", description="Only entries on this account: cash, receivable (sales awaiting payout), in_transit "
                           "(purchase orders on the way), deposit (held by the platform), or all.")
    kind: str | None = Field(None, max_length=40, description="Only entries of this kind, e.g. payout.")


@tool("ledger_entries", title="Ledger entries", family=Family.FINANCE, kind=ToolKind.READ, args=LedgerArgs,
      idempotent=True)
def ledger_entries(ep: Episode, args: LedgerArgs) -> dict[str, Any]:
    """The store's money ledger since you took over, newest first: every sale, payout, fee,
    fine, refund and purchase, with the account it moved. Up to 100 rows a page."""
    kind = args.kind.lower() if args.kind else None
    if kind is not None and kind not in LEDGER_KINDS:
        raise ToolError("invalid_argument", f"kind {args.kind!r} is not one of the ledger's: "
                        + ", ".join(sorted(LEDGER_KINDS)))
    rows = []
    for seq in range(len(ep.ledger.entries) - 1, -1, -1):
        at, window, account, entry_kind, amount, ref = ep.ledger.entries[seq]
        if args.account != "all" and account != args.account:
            continue
        if kind is not None and entry_kind != kind:
            continue
        rows.append((seq, at, window, account, entry_kind, amount, ref))
    out = page_of(rows, args)
    out["rows"] = [{"entry": seq + 1, "at": when(at), "window": window + 1, "account": str(account),
                    "kind": kind, "amount": usd(amount), "ref": ref}
                   for seq, at, window, account, kind, amount, ref in out["rows"]]
    return out


_HISTORY: dict[int, tuple[list[int], list[tuple[int, str, str, int, int]]]] = {}


def history_sales(world: World) -> tuple[list[int], list[tuple[int, str, str, int, int]]]:
    key = id(world)
    if key not in _HISTORY:
        rows = sorted((o.placed_at, o.id, o.variant_id, o.quantity, o.paid_cents) for o in world.orders)
        _HISTORY[key] = ([r[0] for r in rows], rows)
    return _HISTORY[key]


class SalesArgs(PageArgs):
    days: int = Field(7, ge=1, le=550, description="Look back this many days from now (history included).")
    group_by: Literal["product", "category", "variant", "day"] = Field(
        "product", description="One row per product, category, variant (size and colour) or day.")
    product_id: EntityId | None = Field(None, max_length=40, description="Only this product.")


@tool("sales_report", title="Sales report", family=Family.FINANCE, kind=ToolKind.READ, args=SalesArgs,
      idempotent=True)
def sales_report(ep: Episode, args: SalesArgs) -> dict[str, Any]:
    """Orders, units and revenue over the last N days (up to the store's full 18-month
    history), by product, category, variant or day, best sellers first. Demand for sold-out
    sizes is not recorded: shoppers who found nothing to buy leave no trace. By product, each
    row also gives units_available_now, as list_inventory's product rows give available. Up to
    100 rows a page."""
    if args.product_id:
        get_product_rec(ep, args.product_id)  # refuses an unknown product as get_product does
    since = ep.now - args.days * DAY
    times, rows = history_sales(ep.world)
    agg: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])

    group = args.group_by

    def add(at: int, variant_id: str, qty: int, paid: int) -> None:
        product = ep.variant_by_id[variant_id].product
        if args.product_id and product.id != args.product_id:
            return
        if group == "product":
            key = product.id
        elif group == "category":
            key = product.category
        elif group == "variant":
            key = variant_id
        else:
            key = simtime.iso(at)[:10]
        a = agg[key]
        a[0] += 1
        a[1] += qty
        a[2] += paid

    for i in range(bisect_left(times, since), len(rows)):
        at, _oid, variant_id, qty, paid = rows[i]
        if at < ep.now:
            add(at, variant_id, qty, paid)
    for o in ep.orders.values():
        if not o.opening and since <= o.placed_at < ep.now and o.status not in (
                OrderState.CANCELLED_MERCHANT, OrderState.CANCELLED_STOCKOUT):
            add(o.placed_at, o.variant.id, o.quantity, o.paid_cents)
    if args.group_by == "day":
        keys = sorted(agg, reverse=True)
    else:
        keys = sorted(agg, key=lambda k: (-agg[k][1], k))
    out = page_of(keys, args)
    label = args.group_by + "_id" if args.group_by in ("product", "variant") else args.group_by
    result_rows = []
    for k in out["rows"]:
        row = {label: k, "orders": agg[k][0], "units": agg[k][1], "revenue": usd(agg[k][2])}
        if args.group_by == "product":
            p = ep.product_by_id[k]
            row["title"] = p.title
            row["units_available_now"] = sum(v.available for v in p.variants)
        result_rows.append(row)
    out["rows"] = result_rows
    out["period"] = {"from": when(since), "to": when(ep.now)}
    return out


@tool("platform_terms", title="Platform terms", family=Family.FINANCE, kind=ToolKind.READ, idempotent=True)
def platform_terms(ep: Episode, args: Args) -> dict[str, Any]:
    """The marketplace's terms of trade: commission, payout delay, shipping label and platform
    fulfilment fees, shipping deadline, the platform carrier's daily capacity, fines, return
    escalation, listing fee and cap, storage charge, liquidation rate at handover, purchase
    order cancellation, and how the operations budget works."""
    e = ep.econ
    return {
        "commission": f"{e.commission_bp / 100:g}% of what the customer paid, kept by the platform",
        "payout_delay_days": e.settlement_days,
        "shipping_deadline": "1 day after the order is placed",
        "shipping_label_fee": usd(e.label_fee),
        "platform_fulfilment_fee": usd(e.autoship_fee),
        "platform_fulfilment": "an order still unshipped at its deadline is shipped by the platform for its fee "
                               "(it does not count as shipped on time), as far as the carrier's daily capacity "
                               "allows (platform_fulfilment_capacity_per_day in normal conditions, fewer while the "
                               "carrier is disrupted); an order beyond it stays awaiting shipment past its deadline "
                               "until the carrier has room the next day (you can still ship it yourself, late); "
                               "with no stock at its deadline an order is cancelled and fined",
        "platform_fulfilment_capacity_per_day": e.autoship_capacity_per_day,
        "stockout_cancellation_fine": usd(e.stockout_fine),
        "late_shipment_fine": usd(e.late_ship_fine),
        "seller_cancellation_fine": usd(e.merchant_cancel_fine),
        "return_escalation_days": e.return_escalate_days,
        "ignored_return_fine": usd(e.ignored_return_fine),
        "refunds": "customers may decline a partial refund; refunds add up toward what they accept",
        "listing_insertion_fee": usd(e.insertion_fee),
        "listing_cap": e.listing_cap,
        "storage_charge_per_unit_day": f"{e.holding_hc_per_unit_day / 10_000:.4f}",
        "handover_liquidation": f"stock left at the end is bought by a liquidator at {e.salvage_bp / 100:g}% of "
                                "its cost; goods still in transit are recovered at the same rate",
        "liquidation_rate_percent": e.salvage_bp / 100,
        "purchase_order_cancellation": f"within {e.po_cancel_window_hours} hours of placing, for a fee of "
                                       f"{e.po_cancel_fee_bp / 100:g}% of the order",
        "purchase_order_allocation": "a total quantity is split over sizes by the standard size curve "
                                     "(XS 7%, S 19%, M 29%, L 25%, XL 14%, XXL 6% and similar for other runs) and "
                                     "evenly over colours",
        "account_suspension": f"a store whose cash stays below zero for {e.suspend_after_days} days is suspended",
        "operations": f"{ep.task.ops_per_window} operations per {ep.window_minutes // HOUR}-hour window; every tool "
                      "call but store_status costs one; unused operations do not roll over",
    }


@tool("announcements", title="Announcements", family=Family.FINANCE, kind=ToolKind.READ, args=PageArgs,
      idempotent=True)
def announcements(ep: Episode, args: PageArgs) -> dict[str, Any]:
    """Platform alerts and trade-press news that have reached sellers so far, newest first.
    Not everything that moves the market is announced."""
    posts = list(reversed(ep.events.visible_posts(ep.now)))
    return page_of(posts, args, lambda p: {"id": p["id"], "posted_at": when(p["posted_at"]), "source": p["source"],
                                           "text": p["text"]})


@tool("competitor_watch", title="Competitor watch", family=Family.FINANCE, kind=ToolKind.READ, idempotent=True)
def competitor_watch(ep: Episode, args: Args) -> dict[str, Any]:
    """Rival stores selling on the platform in your lines: who they are, since when, which of
    your products they carry, and how their prices compare with your shelf prices right now."""
    rows = []
    for rival in ep.task.competitors:
        since = ep.start + int(rival.entry_at_days * DAY)
        if ep.now < since:
            continue
        theirs = rival_price_index(ep, rival, ep.window)
        carried = []
        for p in ep.products:
            if not p.active:
                continue
            overlap = p.competitor_overlap.get(rival.id)
            if overlap is None:
                overlap = ep.stream("overlap", rival.id, p.id).random() < rival.overlap
                p.competitor_overlap[rival.id] = overlap
            if overlap:
                shelf = shelf_price(p)
                carried.append({"product_id": p.id, "your_shelf_price": usd(shelf) if shelf else None,
                                "their_price": usd(int(round(p.ref_price * theirs)))})
        rows.append({"store": rival.name, "style": rival.archetype, "selling_since": when(since),
                     "products_in_common": len(carried), "products": carried[:100]})
    return {"rivals": rows, "note": None if rows else "no rival store is competing on your lines right now"}

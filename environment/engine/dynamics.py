"""What happens while a window passes: the hidden dynamics.

In order: shoppers arrive and buy (orders reserve stock; a shopper whose size is
sold out may order it anyway, a backorder that is cancelled and fined at its
deadline unless stock arrives in time), then every scheduled
happening before the window's end is processed in time order (auto-shipments at
the deadline, deliveries, return requests, escalations, settlements, purchase
orders landing), then storage is charged, supplier prices drift at day
boundaries, and a store whose cash stayed negative too long is suspended.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import simtime
from ..simtime import DAY, HOUR
from ..world.params import DIURNAL, season_factor, store_season
from ..world.vocab import DEFECT_RETURN_REASONS, NON_DEFECT_RETURN_REASONS
from .competition import competition_factor
from .copy import copy_factor
from .episode import DEADLINE, DELIVERY, ESCALATION, PO_ARRIVAL, RETURN_REQUEST, SETTLEMENT
from .ledger import Account
from .state import LISTING_LAG, Lot, OrderRec, OrderState, POState, ReturnRec, ReturnState, VariantRec

if TYPE_CHECKING:
    from .episode import Episode
    from .state import PORec, ProductRec

REFERENCE_RATING = 4.6
BASE_TRAFFIC = 5.0  # shoppers per unit of a line's popularity, before seasons, events and rivals
ESCALATION_RATING = 0.002  # an escalated return's review (its fine and refund are the main cost)
STOCKOUT_RATING = 0.015  # a cancelled order's review; backorders make these common for a store that runs dry


def run_window(ep: Episode) -> None:
    t0 = ep.now
    t1 = t0 + ep.window_minutes
    _shoppers(ep, t0, t1)
    for at, kind, ref in ep.due(t1):
        HANDLERS[kind](ep, at, ref)
    _holding_cost(ep, t0, t1)
    _price_drift(ep, t0, t1)
    ep.rating += (REFERENCE_RATING - ep.rating) * 0.01
    _suspension(ep, t1)


# --- demand -------------------------------------------------------------------------


def median_price(prices: list[int]) -> int | None:
    """Median of a list of prices (sorted in place), None for an empty list."""
    if not prices:
        return None
    prices.sort()
    mid = len(prices) // 2
    return prices[mid] if len(prices) % 2 else (prices[mid - 1] + prices[mid]) // 2


def shelf_price(product: ProductRec) -> int | None:
    """Median price over variants a shopper can actually buy (in stock only)."""
    return median_price([v.price for v in product.variants if v.available > 0])


def expected_shoppers(ep: Episode, product: ProductRec, t0: int, traffic: float, doy: int) -> float:
    """The hidden expected number of shoppers for a listed line in one window."""
    shelf = shelf_price(product)
    return 0.0 if shelf is None else _shoppers_at(ep, product, shelf, t0, traffic, doy)


def _shoppers_at(ep: Episode, product: ProductRec, shelf: int, t0: int, traffic: float, doy: int) -> float:
    """:func:`expected_shoppers` for a line whose shelf price is ``shelf``."""
    in_stock_share = 0.0
    prev = 0.0
    for v, cum in zip(product.variants, product.mix_cum, strict=True):
        if v.available > 0:
            in_stock_share += cum - prev
        prev = cum
    price_factor: float = min(4.0, max(0.02, (shelf / product.ref_price) ** (-product.elasticity)))
    attract = (ep.rating / REFERENCE_RATING) ** 2 * (0.75 + 0.25 * in_stock_share)
    return (product.popularity * season_factor(product.season, doy) * traffic * price_factor * attract
            * copy_factor(product.copy_quality) * ep.events.demand_factor(product, t0)
            * competition_factor(ep, product, shelf, t0))


def _shoppers(ep: Episode, t0: int, t1: int) -> None:
    hours = ep.window_minutes // HOUR
    first_hour = simtime.hour_of_day(t0)
    weights = [DIURNAL[(first_hour + h) % 24] for h in range(hours)]
    share = sum(weights)
    cum = []
    acc = 0.0
    for w in weights:
        acc += w
        cum.append(acc)
    doy = simtime.day_of_year(t0 + ep.window_minutes // 2)
    traffic = share * store_season(doy) * BASE_TRAFFIC
    placed: list[tuple[int, int, VariantRec, int, bool]] = []
    for product in ep.products:
        if not product.active:
            continue
        shelf = shelf_price(product)
        if shelf is None:
            continue  # nothing in stock to show: no shoppers
        lam = _shoppers_at(ep, product, shelf, t0, traffic, doy)
        if lam <= 0.0:
            continue
        r = ep.stream("demand", ep.window, product.id)
        n = r.poisson(lam)
        for i in range(n):
            k = r.weighted_index(product.mix_cum)
            variant = product.variants[min(k, len(product.variants) - 1)]
            qty = 2 if r.random() < 0.08 else 1
            at = t0 + min(r.weighted_index(cum), hours - 1) * HOUR + r.randint(0, 59)
            backorder = False
            if variant.available < 1:
                roll = r.random()
                if roll < SUBSTITUTION:
                    variant = _same_size_substitute(product, variant) or variant
                if variant.available < 1:
                    if roll < SUBSTITUTION or at >= variant.offered_until or r.random() >= BACKORDER:
                        continue  # stockout: the shopper leaves, and nobody sees it
                    backorder = True  # the listing still offers the size: an order with no stock behind it
            if variant.price > shelf and r.random() >= (variant.price / shelf) ** -product.elasticity:
                continue  # dearer than the shelf price that drew them in: the shopper balks
            if not backorder and variant.available < qty:
                qty = 1
            variant.reserved += qty  # reserve now so later shoppers see the true availability
            if not backorder and variant.available < 1:
                variant.offered_until = at + int(LISTING_LAG * DAY)
            placed.append((at, i, variant, qty, backorder))
    placed.sort(key=lambda x: (x[0], x[2].idx, x[1]))
    for at, _i, variant, qty, backorder in placed:
        _create_order(ep, at, variant, qty, backorder)


SUBSTITUTION = 0.5  # share of shoppers who take another colour in their size when theirs is sold out
# Share of the others who order the sold-out size anyway: a listing keeps offering every size
# of an active line, so demand can outrun stock.  Such an order ships only if stock lands (or
# is freed) before its deadline; otherwise it is cancelled for want of stock, with a fine.
BACKORDER = 0.4


def _same_size_substitute(product: ProductRec, wanted: VariantRec) -> VariantRec | None:
    best = None
    for v in product.variants:
        if v.size == wanted.size and v.available > 0 and (best is None or v.mix > best.mix):
            best = v
    return best


def _create_order(ep: Episode, at: int, variant: VariantRec, qty: int, backorder: bool = False) -> None:
    no = ep.next_order_no
    ep.next_order_no += 1
    order_id = f"ORD-{no}"
    customer = ep.new_customer_for(no)
    r = ep.stream("order-terms", order_id)
    discount = 0
    roll = r.random()
    if roll < 0.1:
        discount = 1_000  # promotion code
    elif roll < 0.3 and customer in ep.returning_customers:
        discount = 333  # loyalty credit of 3.33%, which leaves sub-cent payments
    ep.returning_customers.add(customer)
    paid_subcents = variant.price * qty * (10_000 - discount) // 100
    order = OrderRec(order_id, customer, variant, qty, variant.price, paid_subcents, at, at + DAY,
                     OrderState.OPEN, backorder=backorder)
    order.receivable = ep._net_of_commission(order.paid_cents)
    ep.add_order(order)
    ep.ledger.post(at, ep.window, Account.RECEIVABLE, "sale", order.receivable, order_id)
    ep.schedule(order.deadline, DEADLINE, order_id)


# --- shipping ------------------------------------------------------------------------------


def take_units(ep: Episode, order: OrderRec) -> None:
    """Pick the order's units first-in first-out; each unit may be defective."""
    variant = order.variant
    left = order.quantity
    cost = 0
    n = 0
    r = ep.stream("defect", order.id)
    while left and variant.lots:
        lot = variant.lots[0]
        take = min(left, lot.units)
        for _ in range(take):
            cost += lot.unit_cost
            if r.random() < lot.defect_rate:
                order.defective_units += 1
            n += 1
        left -= take
        ep.take_from_lot(variant, lot, take)
    variant.reserved -= order.quantity
    order.unit_cost = cost // max(1, n)


def complete_shipment(ep: Episode, order: OrderRec, at: int) -> None:
    """The order has left: its payout and delivery are scheduled.  Who shipped it is read from
    the status its shipper set (the platform's AUTO_SHIPPED, the merchant's SHIPPED) and kept
    on the order, since delivery replaces that status."""
    order.by_platform = order.status == OrderState.AUTO_SHIPPED
    order.shipped_at = at
    order.settle_at = at + ep.econ.settlement_days * DAY
    ep.schedule(order.settle_at, SETTLEMENT, order.id)
    ep._schedule_delivery(order, at)


def cancel_order_money(ep: Episode, order: OrderRec, at: int, kind: str) -> None:
    """An unshipped order is cancelled: the platform hands the payment back, so the
    pending payout (net of commission) disappears and the reservation is released."""
    ep.ledger.post(at, ep.window, Account.RECEIVABLE, kind, -order.receivable, order.id)
    order.receivable = 0
    order.refunded = order.paid_cents
    order.variant.reserved -= order.quantity


def _deadline(ep: Episode, at: int, ref: str) -> None:
    order = ep.orders[ref]
    if order.status != OrderState.OPEN:
        return
    e = ep.econ
    if order.variant.on_hand < order.quantity:
        # Nobody can ship it: cancelled for want of stock, with a fine.
        order.status = OrderState.CANCELLED_STOCKOUT
        cancel_order_money(ep, order, at, "stockout_cancel")
        ep.ledger.post(at, ep.window, Account.CASH, "stockout_fine", -e.stockout_fine, order.id)
        ep.adjust_rating(-STOCKOUT_RATING)
        return
    day = at // DAY
    capacity = int(e.autoship_capacity_per_day * ep.capacity_factor)
    if ep.autoship_used.get(day, 0) >= capacity:
        ep.schedule((day + 1) * DAY, DEADLINE, order.id)  # the carrier is full: it waits, and is late
        return
    ep.autoship_used[day] = ep.autoship_used.get(day, 0) + 1
    take_units(ep, order)
    order.status = OrderState.AUTO_SHIPPED
    ep.ledger.post(at, ep.window, Account.CASH, "autoship_fee", -e.autoship_fee, order.id)
    complete_shipment(ep, order, at)


def _delivery(ep: Episode, at: int, ref: str) -> None:
    order = ep.orders[ref]
    if order.status not in (OrderState.SHIPPED, OrderState.AUTO_SHIPPED):
        return
    order.status = OrderState.DELIVERED
    if order.defective_units:
        ep.adjust_rating(-0.01 * order.defective_units)
    ep._maybe_schedule_return(order)


# --- returns ---------------------------------------------------------------------------------


def _return_request(ep: Episode, at: int, ref: str) -> None:
    order = ep.orders[ref]
    if order.refunded >= order.paid_cents:
        return
    no = ep.next_return_no
    ep.next_return_no += 1
    rid = f"RET-{no}"
    r = ep.stream("return-terms", rid)
    defective = order.defective_units > 0
    reason = r.choice(DEFECT_RETURN_REASONS if defective else NON_DEFECT_RETURN_REASONS)
    floor = 10_000 if defective else ep._floor_bp(rid)
    rec = ReturnRec(rid, order, reason, defective, at, at + ep.econ.return_escalate_days * DAY, floor)
    ep.add_return(rec)
    ep.schedule(rec.escalate_at, ESCALATION, rid)


def refund_money(ep: Episode, order: OrderRec, amount: int, at: int, kind: str) -> None:
    """Refunding an unsettled sale shrinks its pending payout; a settled one costs cash."""
    from_receivable = min(amount, order.receivable)
    if from_receivable:
        ep.ledger.post(at, ep.window, Account.RECEIVABLE, kind, -from_receivable, order.id)
        order.receivable -= from_receivable
    if amount - from_receivable:
        ep.ledger.post(at, ep.window, Account.CASH, kind, -(amount - from_receivable), order.id)
    order.refunded += amount


def escalate(ep: Episode, ret: ReturnRec, at: int) -> None:
    """Ignored too long: the platform refunds the customer in full and fines the store."""
    e = ep.econ
    if ret.capacity > 0:
        refund_money(ep, ret.order, ret.capacity, at, "escalated_refund")
    ep.ledger.post(at, ep.window, Account.CASH, "ignored_return_fine", -e.ignored_return_fine, ret.id)
    ret.status = ReturnState.ESCALATED
    ret.resolved_at = at
    ret.credit_bp = 0
    ep.adjust_rating(-ESCALATION_RATING)


def _escalation(ep: Episode, at: int, ref: str) -> None:
    ret = ep.returns[ref]
    if ret.status == ReturnState.OPEN:
        escalate(ep, ret, at)


MIN_ACCEPTABLE_BP = 8_000  # the lowest share of a payment any customer accepts as settlement
SHORT_REFUND_RATING = 0.02  # rating a customer's review takes off for an 80% refund (pro rata)


def apply_refund(ep: Episode, ret: ReturnRec, amount: int) -> bool:
    """Pay a refund on an open return; True when the customer accepts and the return closes.

    Refunds accumulate toward the customer's hidden floor.  The return's credit toward
    reliability scales with the refunded share above the lowest acceptable refund, so a
    refund paid in full earns full credit and one that barely clears acceptance earns
    almost none; a short-changed customer also reviews the store accordingly.
    """
    refund_money(ep, ret.order, amount, ep.now, "refund")
    paid = max(1, ret.order.paid_cents)
    if ret.order.refunded * 10_000 < ret.floor_bp * paid:
        return False
    share_bp = min(10_000, ret.order.refunded * 10_000 // paid)
    ret.status = ReturnState.RESOLVED
    ret.resolved_at = ep.now
    ret.credit_bp = max(0, share_bp - MIN_ACCEPTABLE_BP) * 10_000 // (10_000 - MIN_ACCEPTABLE_BP)
    if share_bp < 10_000:
        ep.adjust_rating(-SHORT_REFUND_RATING * (10_000 - share_bp) / (10_000 - MIN_ACCEPTABLE_BP))
    restock_return(ep, ret)
    return True


def restock_return(ep: Episode, ret: ReturnRec) -> None:
    """A resolved, non-defective return goes back on the shelf."""
    if ret.defective:
        return
    order = ret.order
    ep.put_lot(order.variant, Lot(f"return:{ret.id}", order.quantity,
                                  order.unit_cost or order.variant.unit_cost, 0.0))


# --- money and stock arriving -------------------------------------------------------------------


def _settlement(ep: Episode, at: int, ref: str) -> None:
    order = ep.orders[ref]
    if order.settled:
        return
    order.settled = True
    if order.receivable:
        ep.ledger.post(at, ep.window, Account.RECEIVABLE, "payout", -order.receivable, order.id)
        ep.ledger.post(at, ep.window, Account.CASH, "payout", order.receivable, order.id)
        order.receivable = 0


def _po_arrival(ep: Episode, at: int, ref: str) -> None:
    po = ep.pos[ref]
    if po.status not in (POState.PLACED, POState.IN_TRANSIT):
        return
    po.status = POState.RECEIVED
    po.received_at = at
    ep.ledger.post(at, ep.window, Account.IN_TRANSIT, "po_received", -po.cost, po.id)
    for _sku_id, variant_idx, qty, unit_cost in po.lines:
        ep.put_lot(ep.variants[variant_idx], Lot(po.id, qty, unit_cost, po.defect_rate))


def void_purchase_order(ep: Episode, po: PORec) -> None:
    """A supplier that stops trading refunds what it will never ship."""
    ep.ledger.post(ep.now, ep.window, Account.IN_TRANSIT, "po_voided", -po.cost, po.id)
    ep.ledger.post(ep.now, ep.window, Account.CASH, "po_voided_refund", po.cost, po.id)
    po.status = POState.VOIDED


HANDLERS = {
    DEADLINE: _deadline,
    DELIVERY: _delivery,
    RETURN_REQUEST: _return_request,
    ESCALATION: _escalation,
    SETTLEMENT: _settlement,
    PO_ARRIVAL: _po_arrival,
}


# --- running costs and drift ---------------------------------------------------------------------------


def _holding_cost(ep: Episode, t0: int, t1: int) -> None:
    hc = ep.stock_units * ep.econ.holding_hc_per_unit_day * (t1 - t0) // DAY + ep.holding_carry_hc
    charge, ep.holding_carry_hc = divmod(hc, 100)
    ep.ledger.post(t1 - 1, ep.window, Account.CASH, "holding_cost", -charge, "")


def _price_drift(ep: Episode, t0: int, t1: int) -> None:
    first_day = -(-t0 // DAY)
    for day in range(first_day, (t1 - 1) // DAY + 1):
        if day * DAY < t0 or day * DAY >= t1:
            continue
        for sp in ep.world.supply_products:
            r = ep.stream("cost-drift", day, sp.id)
            step = math.exp(r.gauss(0.0, 0.012))
            ep.cost_drift[sp.id] = min(1.25, max(0.85, ep.cost_drift[sp.id] * step))


def _suspension(ep: Episode, t1: int) -> None:
    if ep.cash() >= 0:
        ep.negative_cash_since = None
        return
    if ep.negative_cash_since is None:
        ep.negative_cash_since = t1
    elif t1 - ep.negative_cash_since >= ep.econ.suspend_after_days * DAY:
        ep.bankrupt = True

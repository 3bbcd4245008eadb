"""Orders: see them, ship them, cancel them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..engine.dynamics import cancel_order_money, complete_shipment, take_units
from ..engine.episode import Episode
from ..engine.ledger import Account
from ..engine.state import OrderRec, OrderState
from ..simtime import HOUR
from .format import usd, when
from .registry import Args, EntityId, Family, PageArgs, ToolError, ToolKind, page_of, tool

STATUS_GROUPS = {
    "awaiting_shipment": {OrderState.OPEN},
    "shipped": {OrderState.SHIPPED, OrderState.AUTO_SHIPPED},
    "delivered": {OrderState.DELIVERED},
    "cancelled": {OrderState.CANCELLED_STOCKOUT, OrderState.CANCELLED_MERCHANT, OrderState.CANCELLED_UNSHIPPED},
}


def needed_first(ep: Episode, o: OrderRec) -> int:
    """The units that the open orders for ``o``'s variant due before it (soonest deadline
    first, as the platform ships them; ties by id) still need."""
    key = (o.deadline, o.id)
    return sum(x.quantity for x in ep.open_orders() if x.variant is o.variant and (x.deadline, x.id) < key)


def order_row(ep: Episode, o: OrderRec) -> dict[str, Any]:
    return {
        "order_id": o.id, "status": str(o.status), "placed_at": when(o.placed_at), "deadline": when(o.deadline),
        "hours_to_deadline": round((o.deadline - ep.now) / HOUR, 1) if o.status == OrderState.OPEN else None,
        "product_id": o.variant.product.id, "variant_id": o.variant.id, "quantity": o.quantity,
        "total_paid": usd(o.paid_cents),
        "in_stock": o.variant.on_hand >= o.quantity if o.status == OrderState.OPEN else None,
    }


def delivered_by_now(o: OrderRec) -> int | None:
    """When the order was delivered; None while it is on its way (the carrier's scheduled
    time is the engine's, not something a merchant knows in advance).  Read from the status,
    not the clock: a delivery due exactly at a window's start is made when that window ends."""
    return o.delivered_at if o.status == OrderState.DELIVERED else None


def get_order_rec(ep: Episode, order_id: str) -> OrderRec:
    o = ep.orders.get(order_id)
    if o is None:
        raise ToolError("unknown_order", f"no order {order_id!r} open or recent; list_orders shows the ids "
                        "(they look like ORD-103400)",
                        order_id=order_id)
    return o


class ListOrdersArgs(PageArgs):
    status: Literal["awaiting_shipment", "shipped", "delivered", "cancelled", "all"] = Field(
        "awaiting_shipment", description="Which orders to list.")
    sort: Literal["deadline", "placed_newest"] = Field("deadline", description="Soonest deadline first, or newest.")


@tool("list_orders", title="List orders", family=Family.ORDERS, kind=ToolKind.READ, args=ListOrdersArgs,
      idempotent=True)
def list_orders(ep: Episode, args: ListOrdersArgs) -> dict[str, Any]:
    """List orders, by default those awaiting shipment with the soonest deadline first. Every
    order must ship within 1 day of being placed; at the deadline the platform ships it for
    you and charges its fulfilment fee, as far as its carrier's daily capacity allows (see
    platform_terms): an order beyond that capacity stays awaiting shipment past its deadline
    until the carrier has room the next day, and you can still ship it yourself, late. An
    order with no stock to ship at its deadline is cancelled and fined. For an order awaiting
    shipment, in_stock says whether the units on hand cover it, so that fulfill_order can ship
    it now, even if open orders for the same variant due before it are counting on those
    units (get_order says whether it is in stock in turn). Up to 100 rows a page."""
    if args.status == "awaiting_shipment":
        orders = ep.open_orders()  # the episode's index of open orders, not a scan of the shift's
    else:
        statuses = None if args.status == "all" else STATUS_GROUPS[args.status]
        orders = [o for o in ep.orders.values() if statuses is None or o.status in statuses]
    if args.sort == "deadline":
        orders.sort(key=lambda o: (o.deadline, o.id))
    else:
        orders.sort(key=lambda o: (-o.placed_at, o.id))
    return page_of(orders, args, lambda o: order_row(ep, o))


class OrderArgs(Args):
    order_id: EntityId = Field(..., max_length=40, description="An order id such as ORD-103400.")


@tool("get_order", title="Get order", family=Family.ORDERS, kind=ToolKind.READ, args=OrderArgs, idempotent=True)
def get_order(ep: Episode, args: OrderArgs) -> dict[str, Any]:
    """One order in full: customer, item, unit price, the discount taken off unit price times
    quantity (a promotion or a loyalty credit) and what the customer paid after it,
    deadline, whether stock covers it (while it awaits shipment: in_stock, the units on hand
    cover it and fulfill_order can ship it now; earlier_orders_need, the units that open
    orders for the same variant due before it still need; in_stock_in_turn, the units on hand
    cover those orders and this one), shipping and delivery, payout status, refunds and any
    return."""
    o = get_order_rec(ep, args.order_id)
    ret = next((r.id for r in ep.returns.values() if r.order is o), None)
    is_open = o.status == OrderState.OPEN
    first = needed_first(ep, o) if is_open else 0
    return {**order_row(ep, o), "earlier_orders_need": first if is_open else None,
            "in_stock_in_turn": o.variant.on_hand >= first + o.quantity if is_open else None,
            "customer_id": o.customer_id, "title": o.variant.product.title,
            "size": o.variant.size, "colour": o.variant.colour, "unit_price": usd(o.unit_price),
            "discount": usd(o.unit_price * o.quantity - o.paid_cents),
            "shipped_at": when(o.shipped_at), "delivered_at": when(delivered_by_now(o)),
            "shipped_by": None if o.shipped_at is None else ("platform" if o.by_platform else "you"),
            "payout": "paid out" if o.settled else ("pending" if o.receivable else None),
            "refunded": usd(o.refunded), "return_id": ret}


@tool("fulfill_order", title="Ship order", family=Family.ORDERS, kind=ToolKind.WRITE, args=OrderArgs)
def fulfill_order(ep: Episode, args: OrderArgs) -> dict[str, Any]:
    """Ship an order yourself now, buying the shipping label (see platform_terms). Shipping by
    the deadline counts as on time; shipping after it draws a late fine and hurts the store
    rating. Refused if the variant has no stock on hand."""
    o = get_order_rec(ep, args.order_id)
    if o.status != OrderState.OPEN:
        raise ToolError("not_awaiting_shipment", f"{o.id} is {o.status}, not awaiting shipment", status=str(o.status))
    if o.variant.on_hand < o.quantity:
        raise ToolError("out_of_stock", f"{o.variant.id} has {o.variant.on_hand} on hand; {o.id} needs "
                        f"{o.quantity}. Restock, or cancel the order", on_hand=o.variant.on_hand)
    take_units(ep, o)
    o.status = OrderState.SHIPPED
    e = ep.econ
    ep.ledger.post(ep.now, ep.window, Account.CASH, "shipping_label", -e.label_fee, o.id)
    o.on_time = ep.now <= o.deadline
    if o.on_time:
        ep.adjust_rating(0.002)
    else:
        ep.ledger.post(ep.now, ep.window, Account.CASH, "late_ship_fine", -e.late_ship_fine, o.id)
        ep.adjust_rating(-0.02)
    complete_shipment(ep, o, ep.now)
    return {"order_id": o.id, "status": str(o.status), "on_time": o.on_time, "label_fee": usd(e.label_fee),
            "late_fine": usd(0 if o.on_time else e.late_ship_fine)}


class CancelOrderArgs(OrderArgs):
    reason: str = Field("", max_length=200, description="Why (kept with the order).")


@tool("cancel_order", title="Cancel order", family=Family.ORDERS, kind=ToolKind.WRITE, args=CancelOrderArgs,
      destructive=True)
def cancel_order(ep: Episode, args: CancelOrderArgs) -> dict[str, Any]:
    """Cancel an order awaiting shipment and refund the customer in full. The platform fines a
    seller-cancelled order and the store rating suffers; it counts as not shipped on time."""
    o = get_order_rec(ep, args.order_id)
    if o.status != OrderState.OPEN:
        raise ToolError("not_awaiting_shipment", f"{o.id} is {o.status}; only orders awaiting shipment can be "
                        "cancelled", status=str(o.status))
    o.status = OrderState.CANCELLED_MERCHANT
    cancel_order_money(ep, o, ep.now, "merchant_cancel")
    ep.ledger.post(ep.now, ep.window, Account.CASH, "merchant_cancel_fine", -ep.econ.merchant_cancel_fine, o.id)
    ep.adjust_rating(-0.03)
    return {"order_id": o.id, "status": str(o.status), "refunded": usd(o.paid_cents),
            "fine": usd(ep.econ.merchant_cancel_fine)}

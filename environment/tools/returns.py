"""Returns: the inbox, one return in full, and refunds."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..engine.dynamics import apply_refund
from ..engine.episode import Episode
from ..engine.state import ReturnRec, ReturnState
from ..simtime import HOUR
from .format import usd, when
from .registry import Args, EntityId, Family, PageArgs, RefundAmount, ToolError, ToolKind, page_of, tool


def return_row(ep: Episode, r: ReturnRec) -> dict[str, Any]:
    return {
        "return_id": r.id, "order_id": r.order.id, "status": str(r.status), "reason": r.reason,
        "product_id": r.order.variant.product.id, "variant_id": r.order.variant.id,
        "requested_at": when(r.requested_at), "escalates_at": when(r.escalate_at),
        "hours_to_escalation": round((r.escalate_at - ep.now) / HOUR, 1) if r.status == ReturnState.OPEN else None,
        "paid": usd(r.order.paid_cents), "refunded": usd(r.order.refunded), "refundable": usd(max(0, r.capacity)),
    }


def get_return_rec(ep: Episode, return_id: str) -> ReturnRec:
    r = ep.returns.get(return_id)
    if r is None:
        raise ToolError("unknown_return", f"no return {return_id!r}; list_returns shows the ids (they look like "
                        "RET-20500)", return_id=return_id)
    return r


class ListReturnsArgs(PageArgs):
    status: Literal["open", "resolved", "escalated", "all"] = Field("open", description="Which returns to list.")


@tool("list_returns", title="List returns", family=Family.RETURNS, kind=ToolKind.READ, args=ListReturnsArgs,
      idempotent=True)
def list_returns(ep: Episode, args: ListReturnsArgs) -> dict[str, Any]:
    """The returns inbox, soonest escalation first. A return you leave unanswered past its
    escalation time is refunded in full by the platform, which also fines the store. Up to
    100 rows a page."""
    if args.status == "open":
        rows = ep.open_returns()  # the episode's index of open returns
    else:
        rows = [r for r in ep.returns.values() if args.status == "all" or str(r.status) == args.status]
    rows.sort(key=lambda r: (r.escalate_at, r.id))
    return page_of(rows, args, lambda r: return_row(ep, r))


class ReturnArgs(Args):
    return_id: EntityId = Field(..., max_length=40, description="A return id such as RET-20500.")


@tool("get_return", title="Get return", family=Family.RETURNS, kind=ToolKind.READ, args=ReturnArgs,
      idempotent=True)
def get_return(ep: Episode, args: ReturnArgs) -> dict[str, Any]:
    """One return in full: the customer's reason, the item (title, size, colour, quantity),
    when it was delivered, whether it comes back to stock once the return is resolved (not
    if it is defective), what the customer paid, what has been refunded, what can still be
    refunded, and when it escalates."""
    r = get_return_rec(ep, args.return_id)
    return {**return_row(ep, r), "title": r.order.variant.product.title, "size": r.order.variant.size,
            "colour": r.order.variant.colour, "quantity": r.order.quantity,
            "delivered_at": when(r.order.delivered_at), "resolved_at": when(r.resolved_at),
            "item_comes_back_to_stock": not r.defective}


class RefundArgs(ReturnArgs):
    amount: RefundAmount | None = Field(None, description="Dollars to refund now, at least 0.01 and at most what is "
                                        "still refundable (get_return); omit to refund everything refundable.")


@tool("refund_return", title="Refund a return", family=Family.RETURNS, kind=ToolKind.WRITE, args=RefundArgs)
def refund_return(ep: Episode, args: RefundArgs) -> dict[str, Any]:
    """Refund a return, in full by default. The customer closes the return once the refunds
    add up to what they find acceptable; a smaller refund is still paid but leaves the return
    open until it escalates. Refunding a sale that has not been paid out yet comes out of the
    pending payout first; only what the payout cannot cover (the platform keeps its commission)
    costs cash. A resolved, undamaged item goes back into stock."""
    r = get_return_rec(ep, args.return_id)
    if r.status != ReturnState.OPEN:
        raise ToolError("return_closed", f"{r.id} is already {r.status}", status=str(r.status))
    capacity = r.capacity
    amount = capacity if args.amount is None else int(args.amount * 100)
    if amount <= 0:
        raise ToolError("invalid_amount", "the refund must be more than zero", amount=usd(amount))
    if amount > capacity:
        raise ToolError("exceeds_refundable", f"{usd(amount)} is more than the {usd(capacity)} still refundable "
                        f"on {r.id}", refundable=usd(capacity))
    accepted = apply_refund(ep, r, amount)
    return {"return_id": r.id, "refunded_now": usd(amount), "refunded_total": usd(r.order.refunded),
            "status": str(r.status),
            "note": ("the customer accepted; the return is closed" if accepted else
                     "the customer has not accepted this refund as settlement; the return stays open")}

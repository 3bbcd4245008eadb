"""Status and time: the free status probe and ending the window."""

from __future__ import annotations

from typing import Any

from ..engine.episode import Episode
from ..engine.state import POState
from ..simtime import DAY, HOUR
from .format import usd, when
from .registry import Args, Family, ToolKind, tool


@tool("store_status", title="Store status", family=Family.STATUS, kind=ToolKind.READ, free=True,
      idempotent=True)
def store_status(ep: Episode, args: Args) -> dict[str, Any]:
    """Free: costs no operation. The store at a glance: the time, the window, operations left,
    money, rating, and the work waiting for you (orders to ship and how many fall due before
    the next window, open returns and how many escalate within a day, listings, purchase
    orders on the way). Use the other tools to see the details."""
    soon = ep.now + ep.window_minutes
    open_orders = ep.open_orders()
    open_returns = ep.open_returns()
    return {
        "time": when(ep.now),
        "window": min(ep.window + 1, ep.n_windows),
        "windows_total": ep.n_windows,
        "window_hours": ep.window_minutes // HOUR,
        "operations_left": ep.ops_left if not ep.over else 0,
        "operations_per_window": ep.task.ops_per_window,
        "cash": usd(ep.cash()),
        "net_assets": usd(ep.ledger.net_assets()),
        "rating": round(ep.rating, 2),
        "orders_awaiting_shipment": len(open_orders),
        "orders_due_before_next_window": sum(o.deadline <= soon for o in open_orders),
        "orders_past_deadline": sum(o.deadline < ep.now for o in open_orders),
        "open_returns": len(open_returns),
        "returns_escalating_within_24h": sum(r.escalate_at <= ep.now + DAY for r in open_returns),
        "active_listings": ep.active_listings(),
        "listing_cap": ep.econ.listing_cap,
        "purchase_orders_on_the_way": sum(p.status in (POState.PLACED, POState.IN_TRANSIT) for p in ep.pos.values()),
        "store_open": not ep.over,
    }


@tool("end_window", title="End the window", family=Family.STATUS, kind=ToolKind.CONTROL)
def end_window(ep: Episode, args: Args) -> dict[str, Any]:
    """End the current window now, giving up its remaining operations (they do not roll
    over). The world then moves on one window: orders arrive, deadlines pass, returns come
    in, payouts settle and purchase orders land. Spending the window's last operation does
    the same automatically."""
    ended = ep.window + 1
    ep.advance()
    return {"ended_window": ended, "now_window": min(ep.window + 1, ep.n_windows), "time": when(ep.now),
            "store_open": not ep.over}

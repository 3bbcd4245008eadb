"""The settlement pass and the graded score.

When the world freezes (horizon reached, store suspended, or the operator stops),
settlement enforces every obligation that came due within the task's horizon, not
just within the windows played, so walking off early cannot shed obligations:

- an order still unshipped whose deadline falls within the horizon is cancelled
  and fined; one not yet due (placed in the last day of a full run) is handed to
  the platform to ship, with its fee;
- an open return whose escalation falls within the horizon escalates (forced
  refund and fine);
- purchase orders still in flight realise their salvage value;
- stock left on the shelf is liquidated at the salvage rate.

The score reads only what settlement leaves: net assets, the orders and returns
that came due, and the windows attended.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any

from .dynamics import cancel_order_money, complete_shipment, escalate, take_units
from .ledger import Account
from .state import OrderState, POState, ReturnState

if TYPE_CHECKING:
    from .episode import Episode

WEIGHTS = (Decimal("0.7"), Decimal("0.2"), Decimal("0.1"))
SHAPED_FLOOR = Decimal(-2)


def settle(ep: Episode) -> None:
    at = ep.now
    e = ep.econ
    horizon = ep.horizon_end
    natural_end = ep.window >= ep.n_windows
    for order in sorted(ep.orders.values(), key=lambda o: (o.deadline, o.id)):
        if order.status != OrderState.OPEN:
            continue
        # At a natural end an order due exactly at the horizon is still the platform's to ship.
        if order.deadline < horizon or (order.deadline == horizon and not natural_end):
            order.status = OrderState.CANCELLED_UNSHIPPED
            cancel_order_money(ep, order, at, "unshipped_cancel")
            ep.ledger.post(at, ep.window, Account.CASH, "unshipped_fine", -e.unshipped_fine, order.id)
        elif order.variant.on_hand >= order.quantity:
            take_units(ep, order)
            order.status = OrderState.AUTO_SHIPPED
            ep.ledger.post(at, ep.window, Account.CASH, "autoship_fee", -e.autoship_fee, order.id)
            complete_shipment(ep, order, at)
    for ret in sorted(ep.returns.values(), key=lambda r: r.id):
        if ret.status == ReturnState.OPEN and ret.escalate_at <= horizon:
            escalate(ep, ret, at)
    for po in sorted(ep.pos.values(), key=lambda p: p.id):
        if po.status in (POState.PLACED, POState.IN_TRANSIT):
            ep.ledger.post(at, ep.window, Account.IN_TRANSIT, "po_salvage", -po.cost, po.id)
            ep.ledger.post(at, ep.window, Account.CASH, "po_salvage", po.cost * e.salvage_bp // 10_000, po.id)
            po.status = POState.CANCELLED
    stock_cost = ep.inventory_cost()
    ep.ledger.post(at, ep.window, Account.CASH, "liquidation", stock_cost * e.salvage_bp // 10_000, "")
    for v in ep.variants:
        for lot in list(v.lots):
            ep.take_from_lot(v, lot, lot.units)


@dataclass(frozen=True, slots=True)
class Score:
    seed: int
    windows_played: int
    net_assets: Decimal
    business_raw: Decimal
    business: Decimal
    reliability: Decimal
    on_time_rate: Decimal | None
    return_handled_rate: Decimal | None
    continuity: Decimal
    bankrupt: bool
    reward_composite: Decimal
    # Beyond the release's fields: the counts the rates come from.
    task: str
    windows_total: int
    windows_attended: int
    orders_due: int
    orders_on_time: int
    returns_due: int
    return_credit: Decimal
    business_zero_raw: Decimal | None
    business_scale: Decimal | None

    def as_json(self) -> dict[str, Any]:
        return {k: (float(v) if isinstance(v, Decimal) else v) for k, v in asdict(self).items()}


def _q(x: Decimal, places: str = "0.000001") -> Decimal:
    return x.quantize(Decimal(places), rounding=ROUND_HALF_EVEN)


def dollars(cents: int) -> Decimal:
    return Decimal(cents) / 100


def rates(ep: Episode) -> tuple[int, int, int, Decimal]:
    """(orders due, shipped on time by the merchant, returns due, summed return credit)."""
    due = on_time = 0
    for o in ep.orders.values():
        if ep.start <= o.deadline <= ep.horizon_end:
            due += 1
            on_time += o.on_time and o.status in (OrderState.SHIPPED, OrderState.DELIVERED)
    returns_due = 0
    credit = Decimal(0)
    for r in ep.returns.values():
        if r.status == ReturnState.RESOLVED or r.escalate_at <= ep.horizon_end:
            returns_due += 1
            credit += Decimal(r.credit_bp) / 10_000
    return due, on_time, returns_due, credit


def business_normalized(raw: Decimal, zero: Decimal | None, scale: Decimal | None, *,
                        floor: Decimal = Decimal(0)) -> Decimal:
    if zero is None or scale is None or scale <= 0:
        return Decimal(0)
    return _q(min(Decimal(1), max(floor, (raw - zero) / scale)))


def compose(business: Decimal, reliability: Decimal, continuity: Decimal) -> Decimal:
    return _q(WEIGHTS[0] * business + WEIGHTS[1] * reliability + WEIGHTS[2] * continuity)


def score(ep: Episode, zero_raw: Decimal | None = None, scale: Decimal | None = None) -> Score:
    due, on_time, returns_due, credit = rates(ep)
    on_time_rate = _q(Decimal(on_time) / due) if due else None
    handled_rate = _q(credit / returns_due) if returns_due else None
    defined = [r for r in (on_time_rate, handled_rate) if r is not None]
    reliability = _q(sum(defined, Decimal(0)) / len(defined)) if defined else Decimal(0)
    continuity = _q(Decimal(len(ep.attended)) / ep.n_windows)
    net = dollars(ep.ledger.net_assets())
    raw = net - dollars(ep.econ.opening_capital)
    business = business_normalized(raw, zero_raw, scale)
    return Score(
        seed=ep.seed, windows_played=ep.window, net_assets=net, business_raw=raw, business=business,
        reliability=reliability, on_time_rate=on_time_rate, return_handled_rate=handled_rate,
        continuity=continuity, bankrupt=ep.bankrupt,
        reward_composite=compose(business, reliability, continuity),
        task=ep.task.id, windows_total=ep.n_windows, windows_attended=len(ep.attended), orders_due=due,
        orders_on_time=on_time, returns_due=returns_due, return_credit=_q(credit),
        business_zero_raw=zero_raw, business_scale=scale,
    )

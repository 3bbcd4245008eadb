"""One episode: the live store for one (task, seed), behind a metered clock.

Arming copies what an episode mutates out of the shared world (prices, stock
lots, open obligations) in a few milliseconds.  From then on the store moves only
when the operator spends operations: every tool call but ``store_status`` costs
one; spending the window's last operation or calling ``end_window`` advances the
world one window (:mod:`.dynamics`).  Writes execute at the frozen window-start
time.  When the horizon is reached, the store is suspended, or the operator
stops, the world freezes and the settlement pass runs (:mod:`.settlement`).

Randomness is purpose-keyed through :meth:`Episode.stream`: every draw is named
by what it is for, the window and the entity it concerns.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from .. import simtime
from ..errors import check_seed
from ..rand import Stream
from ..simtime import DAY, HOUR
from ..tasks.model import Task
from ..world.model import OrderStatus, POStatus, ReturnStatus, SupplyRole, World
from ..world.params import season_factor
from .economics import economics_for
from .ledger import Account, Ledger
from .state import LISTING_LAG, Lot, OrderRec, OrderState, PORec, ProductRec, ReturnRec, ReturnState, VariantRec

if TYPE_CHECKING:
    from pydantic import ValidationError

    from ..tools.registry import ToolError
    from ..world.model import Order, SupplyProduct, SupplySku, Vendor


class ToolResult:
    """What one tool call returns: the store header, and data or a structured error."""

    __slots__ = ("tool", "header", "data", "error")

    def __init__(self, tool: str, header: str, data: dict[str, Any] | None, error: dict[str, Any] | None) -> None:
        self.tool = tool
        self.header = header
        self.data = data
        self.error = error

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        body = {"ok": True, "result": self.data} if self.ok else {"ok": False, "error": self.error}
        return {"header": self.header, **body}

    def text(self) -> str:
        """The result as an agent reads it: the header line, then JSON."""
        import json

        body = self.data if self.ok else {"error": self.error}
        return self.header + "\n" + json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def _validation_error(exc: ValidationError) -> ToolError:
    from ..tools.registry import ToolError

    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown argument")
        elif err["type"] == "missing":
            problems.append(f"{where}: is required")
        else:
            problems.append(f"{where}: {err['msg'].lower()}")
    first = exc.errors()[0]
    return ToolError("invalid_argument", "; ".join(problems),
                     field=".".join(str(p) for p in first["loc"]) or None)


# Kinds of scheduled happenings, processed in (time, sequence) order as windows close.
DEADLINE, DELIVERY, RETURN_REQUEST, ESCALATION, SETTLEMENT, PO_ARRIVAL = range(6)

# Per-window order counters in the window log (the window that just closed).
STOPPED_EARLY = "stopped before the horizon"  # end_reason of an episode its runner ended (Episode.stop)
ORDER_FLOW = ("orders_placed", "shipped_on_time", "shipped_late", "auto_shipped", "orders_cancelled")


def _still_open(index: dict[str, Any], open_state: object) -> list[Any]:
    """Drop what has closed from ``index`` (in place) and return the rest, in order."""
    for key in [key for key, rec in index.items() if rec.status != open_state]:
        del index[key]
    return list(index.values())


class Episode:
    def __init__(self, task: Task, seed: int, world: World | None = None, *, record: bool = False) -> None:
        from ..world import load_world

        self.observations: list[str] | None = [] if record else None
        self.world = world if world is not None else load_world()
        self.task = task
        self.seed = check_seed(seed)
        self.econ = economics_for(task.economics, task.listing_cap)
        self.start = simtime.parse(task.start)
        self.window_minutes = task.window_hours * HOUR
        self.n_windows = task.windows
        self.horizon_end = self.start + self.n_windows * self.window_minutes
        self.window = 0
        self.now = self.start
        self.ops_left = task.ops_per_window
        self.over = False
        self.end_reason = ""
        self.bankrupt = False
        self.ledger = Ledger()
        self.rating = self.econ.starting_rating
        self.attended: set[int] = set()
        self.calls = 0
        self.negative_cash_since: int | None = None
        self.holding_carry_hc = 0
        self.autoship_used: dict[int, int] = {}
        self._queue: list[tuple[int, int, int, str]] = []
        self._seq = 0
        self.event_log: list[dict[str, Any]] = []
        self.window_log: list[dict[str, Any]] = []
        self.action_log: list[dict[str, Any]] = []
        self._flow_mark = 0  # order numbers below this have been counted as placed
        self._awaiting: dict[str, OrderRec] = {}  # orders still awaiting shipment at the last row
        # An observer's last look at the store before settlement liquidates it (storebench analyze);
        # it must not change the episode.
        self.before_settlement: Callable[[], None] | None = None
        self._arm()

    # -- randomness -----------------------------------------------------------

    def stream(self, purpose: str, *parts: int | str) -> Stream:
        return Stream.of(self.seed, purpose, *parts)

    # -- scheduling -------------------------------------------------------------

    def schedule(self, at: int, kind: int, ref: str) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, kind, ref))

    def due(self, until: int) -> Iterator[tuple[int, int, str]]:
        """Pop scheduled happenings strictly before ``until``, in time order."""
        q = self._queue
        while q and q[0][0] < until:
            at, _seq, kind, ref = heapq.heappop(q)
            yield at, kind, ref

    # -- arming -------------------------------------------------------------------

    def _arm(self) -> None:
        w = self.world
        e = self.econ
        task = self.task
        sp_by_id = w.by_id("supply_products")
        vendors = w.by_id("vendors")
        self.vendors: dict[str, Vendor] = vendors
        self.supply_products: dict[str, SupplyProduct] = sp_by_id
        self.skus: dict[str, SupplySku] = w.by_id("supply_skus")
        self.sku_variant: dict[str, int] = {}
        self.stock_units = 0
        self.stock_cost = 0
        self.products: list[ProductRec] = []
        self.product_by_id: dict[str, ProductRec] = {}
        self.variant_by_id: dict[str, VariantRec] = {}
        self.variants: list[VariantRec] = []
        variants_w = w.by_id("variants")
        doy = simtime.day_of_year(self.start)
        for p in w.products:
            rec = ProductRec(len(self.products), p.id, p.title, p.description, p.category, str(p.season),
                             p.material, p.garment, p.active, (p.supply_product_id, *p.alt_supply_product_ids),
                             p.ref_price, p.popularity, p.elasticity, p.listed_since)
            acc = 0.0
            for vid in p.variant_ids:
                v = variants_w[vid]
                vr = VariantRec(len(self.variants), v.id, rec, v.size, v.colour, v.price, v.sku_ids, v.mix)
                acc += v.mix
                rec.mix_cum.append(acc)
                rec.variants.append(vr)
                self.variants.append(vr)
                self.variant_by_id[vr.id] = vr
                for sku_id in v.sku_ids:
                    self.sku_variant[sku_id] = vr.idx
            self.products.append(rec)
            self.product_by_id[rec.id] = rec
        from .copy import copy_quality

        for rec in self.products:
            rec.copy_quality = copy_quality(rec)

        # Supply market state.
        self.cost_drift: dict[str, float] = {sp.id: 1.0 for sp in w.supply_products}
        self.country_cost: dict[str, float] = {}
        self.global_cost = 1.0
        self.category_cost: dict[str, float] = {}
        self.country_lead: dict[str, int] = {}
        self.delisted: set[str] = set()
        self.failed_vendors: set[str] = set()
        self.vendor_defect: dict[str, float] = {v.id: v.defect_rate for v in w.vendors}
        self.capacity_factor = 1.0
        self.listed_supply: dict[str, str] = {}  # unlisted supply product -> product id once listed
        self.next_product_no = len(w.products) + 1

        # Ledger: opening balances.
        start = self.start
        self.ledger.post(start, 0, Account.CASH, "opening_cash", e.starting_cash, "")
        self.ledger.post(start, 0, Account.DEPOSIT, "opening_deposit", e.deposit, "")

        # Orders still open, shipped but unsettled, or recently delivered.
        self.orders: dict[str, OrderRec] = {}
        self._open_orders: dict[str, OrderRec] = {}  # see open_orders()
        self._open_returns: dict[str, ReturnRec] = {}
        self.customers_n = len(w.customers)
        self.customer_ids = [c.id for c in w.customers]
        self.returning_customers = set(self.customer_ids)
        history_returns = {r.order_id for r in w.returns}
        reserved_open: dict[str, int] = {}
        for o in w.orders:
            if o.status == OrderStatus.UNFULFILLED:
                orec = self._order_from_world(o, OrderState.OPEN)
                orec.receivable = self._net_of_commission(o.paid_cents)
                self.ledger.post(start, 0, Account.RECEIVABLE, "opening_receivable", orec.receivable, o.id)
                self.schedule(max(o.deadline, start), DEADLINE, o.id)
                if not o.backorder:
                    reserved_open[o.variant_id] = reserved_open.get(o.variant_id, 0) + o.quantity
            elif o.settled_at is None and o.shipped_at is not None:
                orec = self._order_from_world(o, OrderState.SHIPPED)
                orec.shipped_at = o.shipped_at
                orec.on_time = o.shipped_at <= o.deadline
                orec.receivable = self._net_of_commission(o.paid_cents)
                orec.settle_at = o.shipped_at + w.settlement_days * DAY
                self.ledger.post(start, 0, Account.RECEIVABLE, "opening_receivable", orec.receivable, o.id)
                self.schedule(orec.settle_at, SETTLEMENT, o.id)
                if o.delivered_at is None:
                    self._schedule_delivery(orec, o.shipped_at)
                else:
                    orec.status = OrderState.DELIVERED
                    orec.delivered_at = o.delivered_at
                    if o.id not in history_returns:
                        self._maybe_schedule_return(orec)
            elif (o.status == OrderStatus.DELIVERED and o.id not in history_returns
                  and o.delivered_at is not None and o.delivered_at >= start - 12 * DAY):
                orec = self._order_from_world(o, OrderState.DELIVERED)
                orec.shipped_at = o.shipped_at
                orec.delivered_at = o.delivered_at
                orec.settled = True
                orec.on_time = True
                self._maybe_schedule_return(orec)
        self.next_order_no = 100_001 + len(w.orders)

        # Stock: opening lots, trimmed for the task, with reservations for open orders.
        pos = w.by_id("purchase_orders")
        caps = self._trim_caps(doy) if task.trim_stock_days is not None else {}
        for v in w.variants:
            vr = self.variant_by_id[v.id]
            units = min(v.stock, caps.get(v.id, v.stock))
            if task.empty_shelf:
                units = 0
            units = max(units, reserved_open.get(v.id, 0))
            vr.reserved = reserved_open.get(v.id, 0)
            if v.stock > units:  # cleared or trimmed just now: the listing still offers the size for a while
                # (after a clear-out the listings stay live: every empty size takes orders until it is restocked)
                vr.offered_until = self.horizon_end if task.empty_shelf else start + int(LISTING_LAG * DAY)
            if units:
                po = pos.get(v.lot_po_id) if v.lot_po_id else None
                rate = self.vendor_defect[po.vendor_id] if po else 0.02
                self.put_lot(vr, Lot(v.lot_po_id or "opening", units, v.unit_cost, rate))
        for orec in self.orders.values():
            if orec.status == OrderState.OPEN and orec.backorder:
                orec.variant.reserved += orec.quantity

        # Returns still open.
        self.returns: dict[str, ReturnRec] = {}
        orders_w = w.by_id("orders")
        for r in w.returns:
            if r.status != ReturnStatus.OPEN:
                continue
            o = orders_w[r.order_id]
            orec = self.orders.get(o.id) or self._order_from_world(o, OrderState.DELIVERED)
            orec.shipped_at = o.shipped_at
            orec.delivered_at = o.delivered_at
            orec.settled = o.settled_at is not None
            orec.on_time = True
            escalate = max(r.requested_at + e.return_escalate_days * DAY, start + self.window_minutes)
            floor = 10_000 if r.defective else self._floor_bp(r.id)
            ret = ReturnRec(r.id, orec, r.reason, r.defective, r.requested_at, escalate, floor, opening=True)
            self.add_return(ret)
            self.schedule(escalate, ESCALATION, r.id)
        self.next_return_no = 20_001 + len(w.returns)

        # Purchase orders in transit (a cleared warehouse has had its incoming orders cancelled too).
        self.pos: dict[str, PORec] = {}
        for po in w.purchase_orders:
            if po.status != POStatus.IN_TRANSIT or task.empty_shelf:
                continue
            lines = [(line.sku_id, self.variant_by_id[cast(str, self.skus[line.sku_id].variant_id)].idx, line.quantity,
                      line.unit_cost) for line in po.lines]
            arrive = po.eta + self._po_delay(po.id, po.vendor_id)
            po_rec = PORec(po.id, po.vendor_id, po.supply_product_id, lines, po.cost, po.placed_at, po.eta,
                        arrive, self.vendor_defect[po.vendor_id], opening=True)
            self.pos[po.id] = po_rec
            self.ledger.post(start, 0, Account.IN_TRANSIT, "opening_in_transit", po.cost, po.id)
            self.schedule(arrive, PO_ARRIVAL, po.id)
        self.next_po_no = 5001 + len(w.purchase_orders)

        self.opening_net_assets = self.ledger.net_assets()
        from .events import EventBook

        self.events = EventBook(self)
        self.events.fire_due(self.now)
        self._record_window_balance()

    def _trim_caps(self, doy: int) -> dict[str, int]:
        """Opening units per variant when the task trims the shelf to ``trim_stock_days``.

        A line keeps that many days of its demand at the platform's traffic, but never fewer than ``trim_stock_floor``
        units for each size it comes in (so a longer trim keeps more of the busy lines only); the
        line's units go to its variants in proportion to their share of its sales, no
        variant keeping more than it holds.
        """
        from ..allocation import apportion
        from .dynamics import BASE_TRAFFIC

        stock = {v.id: v.stock for v in self.world.variants}
        caps: dict[str, int] = {}
        for product in self.products:
            daily = product.popularity * season_factor(product.season, doy) * BASE_TRAFFIC
            held = [stock[v.id] for v in product.variants]
            sizes = len({v.size for v in product.variants})
            keep = min(sum(held), max(self.task.trim_stock_floor * sizes, round(cast(float, self.task.trim_stock_days) * daily)))
            weights = [v.mix if n else 0.0 for v, n in zip(product.variants, held, strict=True)]
            shares = apportion(keep, weights) if keep and sum(weights) > 0 else [0] * len(held)
            spill = 0
            for v, n, q in zip(product.variants, held, shares, strict=True):
                caps[v.id] = min(n, q)
                spill += q - caps[v.id]
            for v, n in sorted(zip(product.variants, held, strict=True), key=lambda x: (-x[0].mix, x[0].id)):
                if spill <= 0:
                    break
                extra = min(spill, n - caps[v.id])
                caps[v.id] += extra
                spill -= extra
        return caps

    def _order_from_world(self, o: Order, status: OrderState) -> OrderRec:
        rec = OrderRec(o.id, o.customer_id, self.variant_by_id[o.variant_id], o.quantity, o.unit_price,
                       o.paid_subcents, o.placed_at, o.deadline, status, backorder=o.backorder, opening=True)
        rec.unit_cost = self.variant_by_id[o.variant_id].unit_cost or 0
        self.add_order(rec)
        return rec

    # -- shared helpers for dynamics and tools ---------------------------------------

    def add_order(self, order: OrderRec) -> None:
        """Enter an order in the store's books (every order comes in here)."""
        self.orders[order.id] = order
        self._open_orders[order.id] = order

    def add_return(self, ret: ReturnRec) -> None:
        """Enter a return request in the store's books (every return comes in here)."""
        self.returns[ret.id] = ret
        self._open_returns[ret.id] = ret

    def open_orders(self) -> list[OrderRec]:
        """The orders awaiting shipment, in the order they came in.

        Read on every status probe, so it is kept as an index rather than a scan of every
        order of the shift: an order enters it when it comes in and leaves it the first time
        it is read closed.  A closed order never reopens, so the index holds every open order
        and costs a read the orders still in it, not the whole history."""
        return _still_open(self._open_orders, OrderState.OPEN)

    def open_returns(self) -> list[ReturnRec]:
        """The return requests still open, in the order they came in (an index, as
        :meth:`open_orders`)."""
        return _still_open(self._open_returns, ReturnState.OPEN)

    def _net_of_commission(self, paid_cents: int) -> int:
        return paid_cents - paid_cents * self.econ.commission_bp // 10_000

    def _floor_bp(self, return_id: str) -> int:
        """Hidden acceptance floor: the share of the payment a customer accepts (80-100%)."""
        return 8_000 + 500 * self.stream("refund-floor", return_id).randint(0, 4)

    def _po_delay(self, po_id: str, vendor_id: str) -> int:
        vendor = self.vendors[vendor_id]
        r = self.stream("po-delay", po_id)
        if r.random() < vendor.on_time_rate:
            return 0
        return r.randint(1, 7) * DAY

    def _schedule_delivery(self, order: OrderRec, shipped_at: int) -> None:
        transit = self.stream("transit", order.id).randint(36, 110) * HOUR
        order.delivered_at = shipped_at + transit
        self.schedule(order.delivered_at, DELIVERY, order.id)

    def _maybe_schedule_return(self, order: OrderRec) -> None:
        """Decide, once per delivered order, whether and when the customer sends it back."""
        from ..world.vocab import CATEGORY_RETURN_WEIGHT

        r = self.stream("return", order.id)
        if order.defective_units:
            p = 0.85
        else:
            p = 0.118 * CATEGORY_RETURN_WEIGHT[order.variant.product.category]
        if r.random() >= p:
            return
        delay = r.randint(24, 10 * 24) * HOUR
        assert order.delivered_at is not None, "returns are scheduled for delivered orders only"
        at = order.delivered_at + delay
        if at < self.now:
            at = self.now + r.randint(1, 11) * HOUR
        self.schedule(at, RETURN_REQUEST, order.id)

    def unit_cost_now(self, sku_id: str) -> int:
        sku = self.skus[sku_id]
        sp = self.supply_products[sku.supply_product_id]
        country = self.vendors[sp.vendor_id].country
        factor = (self.cost_drift[sp.id] * self.country_cost.get(country, 1.0) * self.global_cost
                  * self.category_cost.get(sp.category, 1.0))
        return max(1, int(round(sku.unit_cost * factor)))

    def lead_days(self, vendor_id: str) -> int:
        vendor = self.vendors[vendor_id]
        base = max(1, round(vendor.lead_days * self.econ.lead_time_pct / 100))
        return base + self.country_lead.get(vendor.country, 0)

    def moq(self, vendor_id: str) -> int:
        """The vendor's minimum order on this platform (its catalogue MOQ, scaled by the terms)."""
        return max(1, round(self.vendors[vendor_id].moq * self.econ.moq_pct / 100))

    def supply_available(self, sp_id: str) -> bool:
        sp = self.supply_products[sp_id]
        return sp_id not in self.delisted and sp.vendor_id not in self.failed_vendors

    def active_listings(self) -> int:
        return sum(1 for p in self.products if p.active)

    def cash(self) -> int:
        return self.ledger.balance[Account.CASH]

    def put_lot(self, variant: VariantRec, lot: Lot) -> None:
        variant.lots.append(lot)
        variant.on_hand += lot.units
        self.stock_units += lot.units
        self.stock_cost += lot.units * lot.unit_cost

    def take_from_lot(self, variant: VariantRec, lot: Lot, units: int) -> None:
        lot.units -= units
        variant.on_hand -= units
        self.stock_units -= units
        self.stock_cost -= units * lot.unit_cost
        if not lot.units:
            variant.lots = [x for x in variant.lots if x.units]

    def inventory_cost(self) -> int:
        return self.stock_cost

    def dense_value(self) -> int:
        """Net assets plus salvage rate x inventory at cost: the dense reward channel's level."""
        return self.ledger.net_assets() + self.inventory_cost() * self.econ.salvage_bp // 10_000

    def adjust_rating(self, delta: float) -> None:
        self.rating = min(5.0, max(1.0, self.rating + delta))

    def new_customer_for(self, order_no: int) -> str:
        r = self.stream("customer", order_no)
        if r.random() < 0.22:
            return self.customer_ids[r.next64() % len(self.customer_ids)]
        self.customers_n += 1
        cid = f"CUS-{self.customers_n:05d}"
        self.customer_ids.append(cid)
        return cid

    def _record_window_balance(self) -> None:
        b = self.ledger.balance
        self.window_log.append({
            "window": self.window + 1, "at": simtime.iso(self.now), "cash_cents": b[Account.CASH],
            "receivable_cents": b[Account.RECEIVABLE], "in_transit_cents": b[Account.IN_TRANSIT],
            "deposit_cents": b[Account.DEPOSIT], "net_assets_cents": self.ledger.net_assets(),
            "inventory_units": self.stock_units,
            "inventory_cost_cents": self.inventory_cost(), "dense_value_cents": self.dense_value(),
            "rating": round(self.rating, 4), **self._order_flow(),
        })

    def _order_flow(self) -> dict[str, int]:
        """Orders placed, and orders that left "awaiting shipment", since the previous row.

        Counting only: nothing here moves the store.  The opening row counts nothing and
        starts the watch on the orders already open.
        """
        flow = dict.fromkeys(ORDER_FLOW, 0)
        if not self.window_log:
            self._awaiting = {o.id: o for o in self.orders.values() if o.status == OrderState.OPEN}
            self._flow_mark = self.next_order_no
            return flow
        for no in range(self._flow_mark, self.next_order_no):
            order = self.orders[f"ORD-{no}"]
            self._awaiting[order.id] = order
            flow["orders_placed"] += 1
        self._flow_mark = self.next_order_no
        for order in list(self._awaiting.values()):
            if order.status == OrderState.OPEN:
                continue
            del self._awaiting[order.id]
            if order.status == OrderState.AUTO_SHIPPED:
                flow["auto_shipped"] += 1
            elif order.status in (OrderState.SHIPPED, OrderState.DELIVERED):
                flow["shipped_on_time" if order.on_time else "shipped_late"] += 1
            else:
                flow["orders_cancelled"] += 1
        return flow

    # -- the tool surface ---------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call one merchant tool by name, exactly as an agent would through MCP.

        Every call but ``store_status`` spends one operation, a refused one included; a
        refusal is a structured :class:`ToolResult` error, never an exception.  Spending the
        window's last operation advances the world after the call has run.
        """
        from pydantic import ValidationError

        from ..tools.format import header
        from ..tools.registry import REGISTRY, ToolError

        arguments = {} if arguments is None else arguments
        spec = REGISTRY.get(name)
        entry = {"window": min(self.window + 1, self.n_windows), "tool": name, "op": False,
                 "arguments": arguments if isinstance(arguments, dict) else {"__not_an_object__": arguments}}
        if spec is None:
            error = ToolError("unknown_tool", f"there is no tool {name!r}; the tools are: "
                              + ", ".join(sorted(REGISTRY)), tool=name)
            return self._log(entry, ToolResult(name, header(self), None, error.as_dict()))
        if self.over and not spec.free:
            error = ToolError("store_closed", f"the shift has ended ({self.end_reason}); the store is frozen "
                              "for settlement and no further operations are accepted")
            return self._log(entry, ToolResult(name, header(self), None, error.as_dict()))
        window_before = self.window
        entry["op"] = not spec.free
        if not spec.free:
            self.spend_operation()
        try:
            if not isinstance(arguments, dict):
                raise ToolError("invalid_argument", "arguments must be an object of named values, "
                                f"not {type(arguments).__name__}")
            args = spec.args.model_validate(arguments)
            data = spec.handler(self, args)
            result = ToolResult(name, "", data, None)
        except ValidationError as exc:
            result = ToolResult(name, "", None, _validation_error(exc).as_dict())
        except ToolError as exc:
            result = ToolResult(name, "", None, exc.as_dict())
        if not spec.free and not self.over and self.window == window_before and self.ops_left <= 0:
            self.advance()  # the window's last operation, refused or not, moves the world
            if result.data is not None:
                result.data["window_ended"] = True
        result.header = header(self)
        return self._log(entry, result)

    def _log(self, entry: dict[str, Any], result: ToolResult) -> ToolResult:
        entry["ok"] = result.ok
        if result.error is not None:  # the same test as ``not result.ok``, spelled so mypy narrows
            entry["error"] = result.error["code"]
        self.action_log.append(entry)
        if self.observations is not None:
            self.observations.append(result.text())
        return result

    def stop(self, reason: str = STOPPED_EARLY) -> None:
        """Whoever runs the episode ends it before its horizon: the world freezes now and
        settlement runs.  ``reason`` is the episode's ``end_reason``; who stopped it (a client
        hanging up, an operator, a turn or step cap) is the runner's to record beside it."""
        self.finish(reason)

    def header_line(self) -> str:
        from ..tools.format import header

        return header(self)

    def dense_rewards(self) -> list[int]:
        """The dense channel: per played window, the change of (net assets + salvage rate x
        inventory at cost), in cents.  It starts from the opening capital and the last window
        ends at the settled net assets, so the rewards sum exactly to business_raw."""
        levels = [row["dense_value_cents"] for row in self.window_log[1:self.window + 1]]
        if self.over:
            levels = levels[:-1] + [self.ledger.net_assets()] if levels else [self.ledger.net_assets()]
        prev = self.econ.opening_capital
        out = []
        for level in levels:
            out.append(level - prev)
            prev = level
        return out

    # -- the clock ----------------------------------------------------------------------

    def spend_operation(self) -> None:
        self.ops_left -= 1
        self.calls += 1
        self.attended.add(self.window)

    def advance(self) -> None:
        """Close the current window: the world moves 12 (or 24) hours."""
        from .dynamics import run_window

        if self.over:
            return
        run_window(self)
        self.window += 1
        self.now = self.start + self.window * self.window_minutes
        self.ops_left = self.task.ops_per_window
        self.events.fire_due(self.now)
        self._record_window_balance()
        if self.bankrupt:
            self.finish("suspended: cash stayed below zero")
        elif self.window >= self.n_windows:
            self.finish("horizon reached")

    def finish(self, reason: str) -> None:
        from .settlement import settle

        if self.over:
            return
        if self.before_settlement is not None:
            self.before_settlement()
        self.over = True
        self.end_reason = reason
        settle(self)

    def is_unlisted_supply(self, sp_id: str) -> bool:
        return self.supply_products[sp_id].role == SupplyRole.UNLISTED and sp_id not in self.listed_supply

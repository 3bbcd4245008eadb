"""Eighteen months of operating history, ending at the shift start.

Orders come first (exactly 3,320, placed by a seasonal and diurnal intensity);
customers, fulfilment, settlement and returns follow from them; purchase orders
come last and are sized so every unit sold and every unit left on the shelf was
bought from the line's vendor before it was needed.  What is still open at the
shift start (unshipped orders, open returns, purchase orders in transit,
unsettled sales) is the operator's work in progress in window one.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from typing import TypedDict

from .. import simtime
from ..allocation import apportion
from ..rand import Stream
from ..simtime import DAY, HOUR
from . import vocab
from .model import (
    Customer,
    Order,
    OrderStatus,
    POLine,
    POStatus,
    Product,
    PurchaseOrder,
    Return,
    ReturnStatus,
    SupplyProduct,
    SupplySku,
    Variant,
    Vendor,
)
from .params import (
    DIURNAL,
    HISTORY_ORDERS,
    HISTORY_START,
    NEW_CUSTOMER_SHARE,
    RETURN_RATE,
    SETTLEMENT_DAYS,
    SHIFT_START,
    rng,
    season_factor,
    store_season,
)

HISTORY_DAYS = (SHIFT_START - HISTORY_START) // DAY
PO_PERIOD_DAYS = 75
OPENING_RETURN_WINDOW_DAYS = 5  # the previous operator left these returns unanswered


def trend(minutes: int) -> float:
    """The store grew over its history: traffic rose from 40% to 100% of today's."""
    return 0.4 + 0.6 * (minutes - HISTORY_START) / (SHIFT_START - HISTORY_START)


class VariantRow(TypedDict):
    """A listed variant as the catalog step hands it to the history: shelf price and cost in cents."""

    id: str
    size: str
    colour: str
    price: int
    unit_cost: int
    sku_ids: tuple[str, ...]
    mix: float


class History:
    def __init__(self, products: list[Product], variants_by_product: dict[str, list[VariantRow]],
                 supply_products: list[SupplyProduct], supply_skus: list[SupplySku], vendors: list[Vendor]) -> None:
        self.products: list[Product] = products
        self.variant_rows = variants_by_product
        self.sp = {sp.id: sp for sp in supply_products}
        self.sku = {s.id: s for s in supply_skus}
        self.vendor = {v.id: v for v in vendors}
        self.customers: list[Customer] = []
        self.orders: list[Order] = []
        self.returns: list[Return] = []
        self.purchase_orders: list[PurchaseOrder] = []
        self.final_variants: dict[str, list[Variant]] = {}

    def run(self) -> None:
        self._launch_dates()
        placed = self._order_times()
        self._orders(placed)
        self._returns()
        self._purchase_orders_and_stock()

    # -- products over time ---------------------------------------------------

    def _launch_dates(self) -> None:
        updated = []
        for p in self.products:
            r = rng("launch", p.id)
            if r.chance(0.8):
                since = HISTORY_START - r.randint(20, 700) * DAY
            else:
                since = HISTORY_START + r.randint(15, HISTORY_DAYS - 90) * DAY
            since -= since % DAY
            active = not r.chance(0.06)
            updated.append(dataclasses.replace(p, listed_since=since, active=active))
        self.products[:] = updated

    def _day_weight(self, day: int) -> tuple[float, list[float]]:
        start = HISTORY_START + day * DAY
        doy = simtime.day_of_year(start)
        per_product = [
            (p.popularity * season_factor(p.season, doy) if p.listed_since <= start else 0.0)
            for p in self.products
        ]
        return trend(start) * store_season(doy), per_product

    def _order_times(self) -> list[tuple[int, int]]:
        """Exactly HISTORY_ORDERS (time, product index) pairs, sorted by time."""
        r = rng("order-times")
        day_tables = []
        cumulative = []
        total = 0.0
        for day in range(HISTORY_DAYS):
            store, per_product = self._day_weight(day)
            weight = store * sum(per_product)
            running = 0.0
            table = []
            for w in per_product:
                running += w
                table.append(running)
            day_tables.append(table)
            total += weight
            cumulative.append(total)
        diurnal_cum = []
        running = 0.0
        for w in DIURNAL:
            running += w
            diurnal_cum.append(running)
        out = []
        for _ in range(HISTORY_ORDERS):
            day = min(r.weighted_index(cumulative), HISTORY_DAYS - 1)
            hour = min(r.weighted_index(diurnal_cum), 23)
            minute = r.randint(0, 59)
            product_index = min(r.weighted_index(day_tables[day]), len(self.products) - 1)
            out.append((HISTORY_START + day * DAY + hour * HOUR + minute, product_index))
        out.sort()
        return out

    # -- orders and customers -------------------------------------------------

    def _orders(self, placed: list[tuple[int, int]]) -> None:
        r = rng("orders")
        people = rng("customers")
        urn: list[int] = []  # one entry per order placed: a Yule (rich-get-richer) process
        counts: list[int] = []
        for n, (at, product_index) in enumerate(placed):
            product = self.products[product_index]
            rows = self.variant_rows[product.id]
            mix_cum = []
            acc = 0.0
            for row in rows:
                acc += row["mix"]
                mix_cum.append(acc)
            row = rows[min(r.weighted_index(mix_cum), len(rows) - 1)]
            if not urn or r.random() < NEW_CUSTOMER_SHARE:
                cid = len(self.customers)
                first = vocab.FIRST_NAMES[people.next64() % len(vocab.FIRST_NAMES)]
                last = vocab.LAST_NAMES[people.next64() % len(vocab.LAST_NAMES)]
                city, state = vocab.CITIES[people.next64() % len(vocab.CITIES)]
                self.customers.append(Customer(
                    id=f"CUS-{cid + 1:05d}", name=f"{first} {last}", city=city, state=state,
                    created_at=at - people.randint(10, 60 * 24 * 40)))
                counts.append(0)
            else:
                cid = urn[r.next64() % len(urn)]
            counts[cid] += 1
            urn.append(cid)
            quantity = 2 if r.chance(0.1) else 1
            discount = 0
            roll = r.random()
            if roll < 0.16:
                discount = r.choice((500, 1000, 1500, 2000))
            elif counts[cid] > 1 and roll < 0.4:
                discount = 333  # loyalty credit of 3.33%, which leaves sub-cent payments
            paid_subcents = row["price"] * quantity * (10_000 - discount) // 100
            shipped = at + self._ship_delay(r, at)
            if shipped >= SHIFT_START:
                status, shipped_at, delivered_at, settled_at = OrderStatus.UNFULFILLED, None, None, None
            else:
                delivered = shipped + r.randint(36, 120) * HOUR
                settle = shipped + SETTLEMENT_DAYS * DAY
                settled_at = settle if settle <= SHIFT_START else None
                if delivered <= SHIFT_START:
                    status, delivered_at = OrderStatus.DELIVERED, delivered
                else:
                    status, delivered_at = OrderStatus.SHIPPED, None
                shipped_at = shipped
            self.orders.append(Order(
                id=f"ORD-{100_001 + n}", customer_id=self.customers[cid].id, variant_id=row["id"],
                quantity=quantity, unit_price=row["price"], discount_bp=discount,
                paid_subcents=paid_subcents, placed_at=at, deadline=at + DAY, status=status,
                shipped_at=shipped_at, delivered_at=delivered_at, settled_at=settled_at,
            ))

    @staticmethod
    def _ship_delay(r: Stream, at: int) -> int:
        """The previous operator shipped most orders the same day, a few late."""
        if at >= SHIFT_START - 20 * HOUR:
            # Work in progress: the last day's orders are still waiting for the new operator.
            return SHIFT_START - at + 1
        roll = r.random()
        if roll < 0.955:
            return r.randint(2 * 60, 22 * 60)
        return r.randint(25 * 60, 40 * 60)

    # -- returns --------------------------------------------------------------

    def _returns(self) -> None:
        r = rng("returns")
        variant_vendor = {}
        for p in self.products:
            vendor = self.vendor[self.sp[p.supply_product_id].vendor_id]
            for row in self.variant_rows[p.id]:
                variant_vendor[row["id"]] = vendor
        category = {row["id"]: p.category for p in self.products for row in self.variant_rows[p.id]}
        target = round(RETURN_RATE * len(self.orders))
        eligible = []
        for o in self.orders:
            if o.delivered_at is None:
                continue
            request = o.delivered_at + r.randint(24, 14 * 24) * HOUR
            if request >= SHIFT_START:
                continue
            defective = r.chance(variant_vendor[o.variant_id].defect_rate)
            eligible.append((o, request, defective))
        chosen = [e for e in eligible if e[2] and r.chance(0.85)]
        rest = [e for e in eligible if not e[2]]
        keys = []
        for o, request, defective in rest:
            w = vocab.CATEGORY_RETURN_WEIGHT[category[o.variant_id]]
            # Weighted sampling without replacement (Efraimidis-Spirakis keys).
            keys.append((-(r.random() ** (1.0 / w)), o.id, (o, request, defective)))
        keys.sort()
        chosen += [k[2] for k in keys[: target - len(chosen)]]
        chosen.sort(key=lambda e: (e[1], e[0].id))
        for n, (o, request, defective) in enumerate(chosen):
            reason = r.choice(vocab.DEFECT_RETURN_REASONS if defective else vocab.NON_DEFECT_RETURN_REASONS)
            resolved = request + r.randint(6, 60) * HOUR
            is_open = request >= SHIFT_START - OPENING_RETURN_WINDOW_DAYS * DAY
            self.returns.append(Return(
                id=f"RET-{20_001 + n}", order_id=o.id, reason=reason, defective=defective,
                requested_at=request,
                status=ReturnStatus.OPEN if is_open else ReturnStatus.REFUNDED,
                refunded=0 if is_open else o.paid_cents,
                resolved_at=None if is_open else resolved,
                restocked=(not is_open) and not defective,
            ))

    # -- purchase orders and stock ----------------------------------------------

    def _purchase_orders_and_stock(self) -> None:
        sold: defaultdict[str, defaultdict[int, int]] = defaultdict(lambda: defaultdict(int))  # variant -> period -> units shipped
        reserved: defaultdict[str, int] = defaultdict(int)
        restocked: defaultdict[str, int] = defaultdict(int)
        by_order = {o.id: o for o in self.orders}
        for o in self.orders:
            if o.shipped_at is None:
                reserved[o.variant_id] += o.quantity
            else:
                sold[o.variant_id][(o.shipped_at - HISTORY_START) // (PO_PERIOD_DAYS * DAY)] += o.quantity
        for ret in self.returns:
            if ret.restocked:
                restocked[by_order[ret.order_id].variant_id] += by_order[ret.order_id].quantity
        po_no = 5000
        in_transit_products = self._in_transit_picks()
        backordered = self._mark_backorders(in_transit_products, reserved)
        for p in self.products:
            r = rng("stock", p.id)
            sp = self.sp[p.supply_product_id]
            vendor = self.vendor[sp.vendor_id]
            rows = self.variant_rows[p.id]
            cover = r.lognormal(math.log(14.0), 0.6)
            # How complete the previous operator kept this line's size run.
            completeness = r.uniform(0.3, 0.8) if rows[0]["price"] < 9000 else r.uniform(0.2, 0.55)
            top_mix = max(row["mix"] for row in rows)
            targets = {}
            for row in rows:
                base = p.popularity * row["mix"] * cover
                units = int(base) + (1 if r.random() < base - int(base) else 0)
                if units == 0 and r.random() < completeness * (0.5 + 0.5 * row["mix"] / top_mix):
                    units = 1  # one on the shelf so the size shows as available
                if r.chance(0.06) or row["id"] in backordered:
                    units = 0  # a broken size run
                targets[row["id"]] = units
            first_period_start = max(p.listed_since, HISTORY_START)
            start_period = (first_period_start - HISTORY_START) // (PO_PERIOD_DAYS * DAY)
            last_period = (SHIFT_START - 1 - HISTORY_START) // (PO_PERIOD_DAYS * DAY)
            for period in range(start_period, last_period + 1):
                receive = max(HISTORY_START + period * PO_PERIOD_DAYS * DAY, first_period_start)
                lines = []
                for row in rows:
                    units = sold[row["id"]].get(period, 0)
                    if period == last_period and row["id"] not in backordered:
                        units += targets[row["id"]] + reserved[row["id"]]
                    if units > 0:
                        lines.append(POLine(row["sku_ids"][0], units, self.sku[row["sku_ids"][0]].unit_cost))
                if not lines:
                    continue
                po_no += 1
                lead = max(2, vendor.lead_days + r.randint(-2, 3))
                self.purchase_orders.append(PurchaseOrder(
                    id=f"PO-{po_no}", vendor_id=vendor.id, supply_product_id=sp.id,
                    lines=tuple(lines), placed_at=receive - lead * DAY, eta=receive - r.randint(0, 1) * DAY,
                    status=POStatus.RECEIVED, received_at=receive,
                    defective_units=sum(1 for line in lines for _ in range(line.quantity)
                                        if r.chance(vendor.defect_rate)),
                ))
            last_po = self.purchase_orders[-1].id if self.purchase_orders else None
            variants = []
            for row in rows:
                on_hand = restocked[row["id"]] if row["id"] in backordered else (
                    targets[row["id"]] + reserved[row["id"]] + restocked[row["id"]])
                variants.append(Variant(
                    id=row["id"], product_id=p.id, size=row["size"], colour=row["colour"],
                    price=row["price"], unit_cost=row["unit_cost"], sku_ids=row["sku_ids"],
                    mix=row["mix"], stock=on_hand, lot_po_id=last_po,
                ))
            self.final_variants[p.id] = variants
            if p.id in in_transit_products:
                po_no += 1
                self.purchase_orders.append(self._in_transit_po(p, sp, vendor, rows, f"PO-{po_no}"))
        self.purchase_orders.sort(key=lambda po: (po.placed_at, po.id))

    def _mark_backorders(self, in_transit_products: set[str], reserved: dict[str, int]) -> set[str]:
        """Two of the unshipped orders were accepted against stock still in transit."""
        product_of = {row["id"]: p.id for p in self.products for row in self.variant_rows[p.id]}
        picked: set[str] = set()
        for i, o in enumerate(self.orders):
            if len(picked) >= 2:
                break
            if (o.status == OrderStatus.UNFULFILLED and product_of[o.variant_id] in in_transit_products
                    and reserved[o.variant_id] == o.quantity and o.variant_id not in picked):
                self.orders[i] = dataclasses.replace(o, backorder=True)
                picked.add(o.variant_id)
        return picked

    def _in_transit_picks(self) -> set[str]:
        r = rng("in-transit")
        ranked = sorted(self.products, key=lambda p: -p.popularity)[:30]
        return {p.id for p in r.sample(ranked, 7)}

    def _in_transit_po(self, p: Product, sp: SupplyProduct, vendor: Vendor, rows: list[VariantRow],
                       po_id: str) -> PurchaseOrder:
        r = rng("in-transit", p.id)
        total = max(vendor.moq, int(round(p.popularity * 30)))
        shares = apportion(total, [row["mix"] for row in rows])
        lines = [POLine(row["sku_ids"][0], units, self.sku[row["sku_ids"][0]].unit_cost)
                 for row, units in zip(rows, shares, strict=True) if units > 0]
        days_left = r.randint(1, max(1, vendor.lead_days - 1))
        eta = SHIFT_START + days_left * DAY
        return PurchaseOrder(
            id=po_id, vendor_id=vendor.id, supply_product_id=sp.id, lines=tuple(lines),
            placed_at=eta - vendor.lead_days * DAY, eta=eta, status=POStatus.IN_TRANSIT,
            received_at=None, defective_units=0,
        )

"""Mutable per-episode records.  Plain slotted classes: an episode creates
thousands of them and touches them in tight loops."""

from __future__ import annotations

from enum import StrEnum


class OrderState(StrEnum):
    OPEN = "awaiting_shipment"
    SHIPPED = "shipped"  # by the merchant
    AUTO_SHIPPED = "shipped_by_platform"
    DELIVERED = "delivered"
    CANCELLED_STOCKOUT = "cancelled_no_stock"
    CANCELLED_MERCHANT = "cancelled_by_merchant"
    CANCELLED_UNSHIPPED = "cancelled_at_settlement"


class ReturnState(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"
    ESCALATED = "escalated"


class POState(StrEnum):
    PLACED = "placed"
    IN_TRANSIT = "in_transit"
    RECEIVED = "received"
    CANCELLED = "cancelled"
    VOIDED = "voided_by_supplier"


class Lot:
    __slots__ = ("po_id", "units", "unit_cost", "defect_rate")

    def __init__(self, po_id: str, units: int, unit_cost: int, defect_rate: float) -> None:
        self.po_id = po_id
        self.units = units
        self.unit_cost = unit_cost
        self.defect_rate = defect_rate


# How long a size that has just sold out stays on offer (days): the listing catches up with
# the shelf after this, and a size that has been gone longer draws no orders at all.
LISTING_LAG = 1.0


class VariantRec:
    __slots__ = ("idx", "id", "product", "size", "colour", "price", "lots", "reserved", "sku_ids", "mix", "on_hand",
                 "offered_until")

    def __init__(self, idx: int, id: str, product: ProductRec, size: str, colour: str, price: int,
                 sku_ids: tuple[str, ...], mix: float) -> None:
        self.idx = idx
        self.id = id
        self.product = product  # ProductRec
        self.size = size
        self.colour = colour
        self.price = price
        self.lots: list[Lot] = []  # change only through Episode.put_lot / Episode.take_from_lot
        self.on_hand = 0  # units in all lots, kept by those two methods
        self.reserved = 0
        self.sku_ids = sku_ids
        self.mix = mix
        self.offered_until = 0  # a sold-out size stays on offer until then (see dynamics.LISTING_LAG)

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved

    @property
    def unit_cost(self) -> int:
        """Cost of the next unit to ship (first lot), or of the newest lot if empty."""
        for lot in self.lots:
            if lot.units:
                return lot.unit_cost
        return self.lots[-1].unit_cost if self.lots else 0


class ProductRec:
    __slots__ = ("idx", "id", "title", "description", "category", "season", "material", "garment",
                 "active", "variants", "supply_product_ids", "ref_price", "popularity", "elasticity",
                 "mix_cum", "copy_quality", "listed_at", "competitor_overlap")

    def __init__(self, idx: int, id: str, title: str, description: str, category: str, season: str, material: str,
                 garment: str, active: bool, supply_product_ids: tuple[str, ...], ref_price: int, popularity: float,
                 elasticity: float, listed_at: int) -> None:
        self.idx = idx
        self.id = id
        self.title = title
        self.description = description
        self.category = category
        self.season = season
        self.material = material
        self.garment = garment
        self.active = active
        self.variants: list[VariantRec] = []
        self.supply_product_ids = supply_product_ids
        self.ref_price = ref_price
        self.popularity = popularity
        self.elasticity = elasticity
        self.mix_cum: list[float] = []
        self.copy_quality = 0.0
        self.listed_at = listed_at
        self.competitor_overlap: dict[str, bool] = {}


class OrderRec:
    __slots__ = ("id", "customer_id", "variant", "quantity", "unit_price", "paid_subcents", "placed_at",
                 "deadline", "status", "shipped_at", "delivered_at", "settle_at", "settled", "receivable",
                 "on_time", "defective_units", "backorder", "refunded", "unit_cost", "opening", "by_platform")

    def __init__(self, id: str, customer_id: str, variant: VariantRec, quantity: int, unit_price: int,
                 paid_subcents: int, placed_at: int, deadline: int, status: OrderState, backorder: bool = False,
                 opening: bool = False) -> None:
        self.id = id
        self.customer_id = customer_id
        self.variant = variant  # VariantRec
        self.quantity = quantity
        self.unit_price = unit_price
        self.paid_subcents = paid_subcents
        self.placed_at = placed_at
        self.deadline = deadline
        self.status = status
        self.shipped_at: int | None = None
        self.delivered_at: int | None = None
        self.settle_at: int | None = None
        self.settled = False
        self.receivable = 0  # cents still to be paid out by the platform
        self.on_time = False
        self.defective_units = 0
        self.backorder = backorder
        self.refunded = 0
        self.unit_cost = 0
        self.opening = opening
        self.by_platform = False  # shipped by the platform's carrier, not by the merchant (see complete_shipment)

    @property
    def paid_cents(self) -> int:
        return self.paid_subcents // 100


class ReturnRec:
    __slots__ = ("id", "order", "reason", "defective", "requested_at", "escalate_at", "floor_bp",
                 "refunded", "status", "resolved_at", "credit_bp", "opening")

    def __init__(self, id: str, order: OrderRec, reason: str, defective: bool, requested_at: int, escalate_at: int,
                 floor_bp: int, opening: bool = False) -> None:
        self.id = id
        self.order = order  # OrderRec
        self.reason = reason
        self.defective = defective
        self.requested_at = requested_at
        self.escalate_at = escalate_at
        self.floor_bp = floor_bp  # hidden: share of the payment the customer accepts
        self.refunded = 0
        self.status = ReturnState.OPEN
        self.resolved_at: int | None = None
        self.credit_bp = 0
        self.opening = opening

    @property
    def capacity(self) -> int:
        """What can still be refunded: the payment floored to the cent, less refunds."""
        return self.order.paid_cents - self.order.refunded


class PORec:
    __slots__ = ("id", "vendor_id", "supply_product_id", "lines", "cost", "placed_at", "eta", "arrive_at",
                 "status", "defect_rate", "received_at", "opening")

    def __init__(self, id: str, vendor_id: str, supply_product_id: str, lines: list[tuple[str, int, int, int]],
                 cost: int, placed_at: int, eta: int, arrive_at: int, defect_rate: float,
                 opening: bool = False) -> None:
        self.id = id
        self.vendor_id = vendor_id
        self.supply_product_id = supply_product_id
        self.lines = lines  # list of (sku_id, variant_idx, quantity, unit_cost)
        self.cost = cost
        self.placed_at = placed_at
        self.eta = eta
        self.arrive_at = arrive_at  # hidden: eta plus any vendor delay
        self.status = POState.IN_TRANSIT
        self.defect_rate = defect_rate
        self.received_at: int | None = None
        self.opening = opening

    @property
    def units(self) -> int:
        return sum(line[2] for line in self.lines)

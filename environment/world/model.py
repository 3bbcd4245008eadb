"""Records of the world.  Frozen: the world is shared by every episode, which copies
what it mutates.  Money is integer cents (payments carry sub-cents, in 1/100 cent);
times are integer minutes of :mod:`environment.simtime`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Tier(StrEnum):
    BUDGET = "budget"
    STANDARD = "standard"
    PREMIUM = "premium"
    QUICK_TURN = "quick-turn"


class Season(StrEnum):
    WARM = "warm"
    COLD = "cold"
    ALL = "all-season"


class SupplyRole(StrEnum):
    PRIMARY = "primary"  # restocks a listed line
    ALTERNATE = "alternate"  # a second source for a listed line
    UNLISTED = "unlisted"  # on the market, not in the shop; can be listed


class OrderStatus(StrEnum):
    UNFULFILLED = "unfulfilled"
    SHIPPED = "shipped"
    DELIVERED = "delivered"


class ReturnStatus(StrEnum):
    OPEN = "open"
    REFUNDED = "refunded"


class POStatus(StrEnum):
    IN_TRANSIT = "in_transit"
    RECEIVED = "received"


@dataclass(frozen=True, slots=True)
class Vendor:
    id: str
    name: str
    country: str
    city: str
    tier: Tier
    lead_days: int  # typical door-to-door lead time
    moq: int  # minimum units per purchase order
    defect_rate: float  # share of units that arrive defective
    on_time_rate: float  # share of purchase orders that land by their ETA
    founded: int


@dataclass(frozen=True, slots=True)
class SupplySku:
    id: str
    supply_product_id: str
    size: str
    colour: str
    unit_cost: int  # cents
    variant_id: str | None  # the shop variant it restocks, if the line is listed


@dataclass(frozen=True, slots=True)
class SupplyProduct:
    id: str
    vendor_id: str
    title: str
    category: str
    season: Season
    material: str
    garment: str
    role: SupplyRole
    product_id: str | None  # listed line it restocks (primary or alternate)
    sizes: tuple[str, ...]
    colours: tuple[str, ...]
    sku_ids: tuple[str, ...]
    # Hidden market facts, used if the operator lists an unlisted product.
    ref_price: int
    popularity: float  # orders a day at reference price, average season
    elasticity: float


@dataclass(frozen=True, slots=True)
class Variant:
    id: str
    product_id: str
    size: str
    colour: str
    price: int  # opening shelf price, cents
    unit_cost: int  # landed cost from the primary source, cents
    sku_ids: tuple[str, ...]  # supply SKUs that restock it (primary first)
    mix: float  # hidden share of the line's demand
    stock: int  # on hand at the shift start
    lot_po_id: str | None  # purchase order the opening stock came from


@dataclass(frozen=True, slots=True)
class Product:
    id: str
    title: str
    category: str
    season: Season
    material: str
    garment: str
    description: str
    supply_product_id: str
    alt_supply_product_ids: tuple[str, ...]
    variant_ids: tuple[str, ...]
    listed_since: int
    active: bool
    # Hidden demand facts.
    ref_price: int
    popularity: float
    elasticity: float


@dataclass(frozen=True, slots=True)
class Customer:
    id: str
    name: str
    city: str
    state: str
    created_at: int


@dataclass(frozen=True, slots=True)
class Order:
    id: str
    customer_id: str
    variant_id: str
    quantity: int
    unit_price: int  # cents
    discount_bp: int  # promotion, basis points
    paid_subcents: int  # what the customer paid, 1/100 cent
    placed_at: int
    deadline: int
    status: OrderStatus
    shipped_at: int | None
    delivered_at: int | None
    settled_at: int | None
    backorder: bool = False

    @property
    def gross(self) -> int:
        return self.quantity * self.unit_price

    @property
    def paid_cents(self) -> int:
        """Refund capacity floors to the cent, as the payment provider validates it."""
        return self.paid_subcents // 100


@dataclass(frozen=True, slots=True)
class Return:
    id: str
    order_id: str
    reason: str
    defective: bool
    requested_at: int
    status: ReturnStatus
    refunded: int  # cents
    resolved_at: int | None
    restocked: bool


@dataclass(frozen=True, slots=True)
class POLine:
    sku_id: str
    quantity: int
    unit_cost: int


@dataclass(frozen=True, slots=True)
class PurchaseOrder:
    id: str
    vendor_id: str
    supply_product_id: str
    lines: tuple[POLine, ...]
    placed_at: int
    eta: int
    status: POStatus
    received_at: int | None
    defective_units: int

    @property
    def cost(self) -> int:
        return sum(line.quantity * line.unit_cost for line in self.lines)

    @property
    def units(self) -> int:
        return sum(line.quantity for line in self.lines)


@dataclass(frozen=True, slots=True)
class World:
    world_seed: str
    history_start: int
    shift_start: int
    settlement_days: int
    vendors: tuple[Vendor, ...]
    supply_products: tuple[SupplyProduct, ...]
    supply_skus: tuple[SupplySku, ...]
    products: tuple[Product, ...]
    variants: tuple[Variant, ...]
    customers: tuple[Customer, ...]
    orders: tuple[Order, ...]
    returns: tuple[Return, ...]
    purchase_orders: tuple[PurchaseOrder, ...]
    _index: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False, init=False)

    def by_id(self, kind: str) -> dict[str, Any]:
        """Lazily built id -> record maps, e.g. ``world.by_id("variants")``."""
        if kind not in self._index:
            self._index[kind] = {rec.id: rec for rec in getattr(self, kind)}
        return self._index[kind]

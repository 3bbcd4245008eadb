"""Headline figures of the world, as printed by ``storebench world stats``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .. import simtime
from .loader import world_hash
from .model import OrderStatus, POStatus, ReturnStatus, SupplyRole, World


def world_stats(world: World) -> dict[str, Any]:
    orders = world.orders
    unsettled = [o for o in orders if o.shipped_at is not None and o.settled_at is None]
    return {
        "supply_lines": len(world.products),
        "variants": len(world.variants),
        "vendors": len(world.vendors),
        "supply_skus": len(world.supply_skus),
        "supply_products": len(world.supply_products),
        "unlisted_supply_products": sum(sp.role == SupplyRole.UNLISTED for sp in world.supply_products),
        "customers": len(world.customers),
        "history_orders": len(orders),
        "history_returns": len(world.returns),
        "return_rate": round(len(world.returns) / len(orders), 4),
        "history_start": simtime.iso(world.history_start),
        "shift_start": simtime.iso(world.shift_start),
        "vendor_countries": dict(sorted(Counter(v.country for v in world.vendors).items())),
        "vendor_tiers": dict(sorted(Counter(str(v.tier) for v in world.vendors).items())),
        "categories": dict(sorted(Counter(p.category for p in world.products).items())),
        "active_listings": sum(p.active for p in world.products),
        "opening_stock_units": sum(v.stock for v in world.variants),
        "opening_stock_cost_cents": sum(v.stock * v.unit_cost for v in world.variants),
        "opening_unshipped_orders": sum(o.status == OrderStatus.UNFULFILLED for o in orders),
        "opening_open_returns": sum(r.status == ReturnStatus.OPEN for r in world.returns),
        "opening_in_transit_pos": sum(po.status == POStatus.IN_TRANSIT for po in world.purchase_orders),
        "opening_in_transit_cents": sum(po.cost for po in world.purchase_orders
                                        if po.status == POStatus.IN_TRANSIT),
        "opening_receivable_orders": len(unsettled),
        "opening_receivables_cents": sum(o.paid_cents for o in unsettled),
        "world_hash": world_hash(world),
    }

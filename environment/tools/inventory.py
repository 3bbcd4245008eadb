"""Inventory: stock by product or variant, and disposing of units."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..engine.episode import Episode
from .catalog import backordered_units, free_units, get_product_rec, incoming_by_variant, variant_row
from .format import usd
from .registry import Args, EntityId, Family, PageArgs, ToolError, ToolKind, page_of, tool


class ListInventoryArgs(PageArgs):
    level: Literal["product", "variant"] = Field("product", description="One row per product or per variant.")
    product_id: EntityId | None = Field(None, max_length=40, description="Only this product's variants or row.")
    only: Literal["all", "out_of_stock", "low", "in_stock"] = Field(
        "all", description="out_of_stock: nothing available; low: 2 units or fewer available; in_stock: some.")


@tool("list_inventory", title="List inventory", family=Family.INVENTORY, kind=ToolKind.READ,
      args=ListInventoryArgs, idempotent=True)
def list_inventory(ep: Episode, args: ListInventoryArgs) -> dict[str, Any]:
    """Stock levels. By variant (size and colour): units on hand, reserved for open orders,
    available to sell (on hand less reserved, never below zero), backordered (units open
    orders need beyond what is on hand: those orders cannot all ship unless stock lands) and
    incoming on purchase orders. By product (default): the same summed over its variants,
    except that available is on hand less reserved, so one variant's backordered units count
    against the others' stock and it can be below zero (available plus backordered is what
    the variants can still sell); plus how many variants are sold out. The filter counts the
    units the variants can still sell: out_of_stock none, low 2 or fewer, in_stock some. Up
    to 100 rows a page."""
    incoming = incoming_by_variant(ep)
    products = [get_product_rec(ep, args.product_id)] if args.product_id else ep.products

    def keep(available: int) -> bool:
        return (args.only == "all" or (args.only == "out_of_stock" and available <= 0)
                or (args.only == "low" and available <= 2) or (args.only == "in_stock" and available > 0))

    everything = args.only == "all"  # no filter: no unit is counted but the page's
    if args.level == "variant":
        chosen = [v for p in products for v in p.variants if everything or keep(free_units(v))]
        return page_of(chosen, args, lambda v: variant_row(v, incoming))
    kept = products if everything else [p for p in products if keep(sum(free_units(v) for v in p.variants))]
    out = page_of(kept, args)  # a row is written out for the page shown only
    out["rows"] = [{
        "product_id": p.id, "title": p.title, "status": "active" if p.active else "inactive",
        "on_hand": (on_hand := sum(v.on_hand for v in p.variants)),
        "reserved": (reserved := sum(v.reserved for v in p.variants)), "available": on_hand - reserved,
        "backordered": sum(backordered_units(v) for v in p.variants),
        "incoming": sum(incoming.get(v.idx, 0) for v in p.variants),
        "variants": len(p.variants), "variants_sold_out": sum(free_units(v) == 0 for v in p.variants),
        "stock_value_at_cost": usd(sum(lot.units * lot.unit_cost for v in p.variants for lot in v.lots)),
    } for p in out["rows"]]
    return out


class DisposeArgs(Args):
    variant_id: EntityId = Field(..., max_length=60, description="The variant to take units from.")
    quantity: int = Field(..., ge=1, le=10_000, description="Units to dispose of.")
    batch: str | None = Field(None, max_length=40,
                              description="Take them from this batch only (see get_product); omit for oldest first.")


@tool("dispose_stock", title="Dispose of stock", family=Family.INVENTORY, kind=ToolKind.WRITE, args=DisposeArgs,
      destructive=True)
def dispose_stock(ep: Episode, args: DisposeArgs) -> dict[str, Any]:
    """Write off units of a variant (for example a faulty batch), removing them from the shelf
    and from storage charges. Disposed units earn nothing. Units reserved for open orders
    cannot be disposed of."""
    v = ep.variant_by_id.get(args.variant_id)
    if v is None:
        raise ToolError("unknown_variant", f"no variant {args.variant_id!r}; get_product lists a product's variants "
                        "(they look like PRD-001-M-BLK)",
                        variant_id=args.variant_id)
    lots = [lot for lot in v.lots if lot.units and (args.batch is None or lot.po_id == args.batch)]
    if args.batch is not None and not lots:
        raise ToolError("unknown_batch", f"{v.id} holds no units of batch {args.batch!r}", batch=args.batch)
    in_scope = sum(lot.units for lot in lots)
    free = free_units(v)
    if args.quantity > min(in_scope, free):
        raise ToolError("not_enough_stock", f"{v.id} has {free} unreserved units ({in_scope} in scope); "
                        f"cannot dispose of {args.quantity}", available=free, in_scope=in_scope)
    left = args.quantity
    value = 0
    for lot in lots:
        take = min(left, lot.units)
        value += take * lot.unit_cost
        ep.take_from_lot(v, lot, take)
        left -= take
        if not left:
            break
    return {"variant_id": v.id, "disposed": args.quantity, "cost_written_off": usd(value),
            "on_hand": v.on_hand, "available": free_units(v)}

"""Inventory: stock by product or variant, and disposing of units."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..engine.episode import Episode
from .catalog import get_product_rec, incoming_by_variant, variant_row
from .format import usd
from .registry import Args, Family, PageArgs, ToolError, ToolKind, page_of, tool


class ListInventoryArgs(PageArgs):
    level: Literal["product", "variant"] = Field("product", description="One row per product or per variant.")
    product_id: str | None = Field(None, max_length=40, description="Only this product's variants or row.")
    only: Literal["all", "out_of_stock", "low", "in_stock"] = Field(
        "all", description="out_of_stock: nothing available; low: 2 units or fewer available; in_stock: some.")


@tool("list_inventory", title="List inventory", family=Family.INVENTORY, kind=ToolKind.READ,
      args=ListInventoryArgs, idempotent=True)
def list_inventory(ep: Episode, args: ListInventoryArgs) -> dict[str, Any]:
    """Stock levels. By product (default): units on hand, reserved for open orders, available,
    incoming on purchase orders, and how many variants are sold out. By variant: the same per
    size and colour. Filter to sold-out, low or in-stock rows; up to 100 rows a page."""
    incoming = incoming_by_variant(ep)
    products = [get_product_rec(ep, args.product_id)] if args.product_id else ep.products

    def keep(available: int) -> bool:
        return (args.only == "all" or (args.only == "out_of_stock" and available <= 0)
                or (args.only == "low" and available <= 2) or (args.only == "in_stock" and available > 0))

    if args.level == "variant":
        chosen = [v for p in products for v in p.variants if keep(v.available)]
        return page_of(chosen, args, lambda v: variant_row(v, incoming))
    kept = []  # the filter needs only the totals; a row is written out for the page shown
    for p in products:
        on_hand = sum(v.on_hand for v in p.variants)
        reserved = sum(v.reserved for v in p.variants)
        if keep(on_hand - reserved):
            kept.append((p, on_hand, reserved))
    out = page_of(kept, args)
    out["rows"] = [{
        "product_id": p.id, "title": p.title, "status": "active" if p.active else "inactive",
        "on_hand": on_hand, "reserved": reserved, "available": on_hand - reserved,
        "incoming": sum(incoming.get(v.idx, 0) for v in p.variants),
        "variants": len(p.variants), "variants_sold_out": sum(v.available <= 0 for v in p.variants),
        "stock_value_at_cost": usd(sum(lot.units * lot.unit_cost for v in p.variants for lot in v.lots)),
    } for p, on_hand, reserved in out["rows"]]
    return out


class DisposeArgs(Args):
    variant_id: str = Field(..., max_length=60, description="The variant to take units from.")
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
        raise ToolError("unknown_variant", f"no variant {args.variant_id!r}; get_product lists a product's variants",
                        variant_id=args.variant_id)
    lots = [lot for lot in v.lots if lot.units and (args.batch is None or lot.po_id == args.batch)]
    if args.batch is not None and not lots:
        raise ToolError("unknown_batch", f"{v.id} holds no units of batch {args.batch!r}", batch=args.batch)
    in_scope = sum(lot.units for lot in lots)
    free = v.available
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
            "on_hand": v.on_hand, "available": v.available}

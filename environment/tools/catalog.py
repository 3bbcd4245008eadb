"""Catalog and listings: what the shop sells, at what price, with what copy."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..engine.copy import copy_quality
from ..engine.dynamics import median_price
from ..engine.episode import Episode
from ..engine.ledger import Account
from ..engine.state import POState, ProductRec, VariantRec
from .format import usd, when
from .registry import Args, EntityId, Family, PageArgs, Price, ToolError, ToolKind, page_of, tool

MIN_PRICE, MAX_PRICE = 100, 100_000


def get_product_rec(ep: Episode, product_id: str) -> ProductRec:
    product = ep.product_by_id.get(product_id)
    if product is None:
        raise ToolError("unknown_product", f"no product {product_id!r}; list_products shows the ids (they look like "
                        "PRD-001)",
                        product_id=product_id)
    return product


def free_units(v: VariantRec) -> int:
    """Units of ``v`` available to sell: on hand less reserved for open orders, never below zero."""
    return max(0, v.on_hand - v.reserved)


def backordered_units(v: VariantRec) -> int:
    """Units open orders for ``v`` need beyond what is on hand (orders placed with no stock behind them)."""
    return max(0, v.reserved - v.on_hand)


def incoming_by_variant(ep: Episode) -> dict[int, int]:
    incoming: dict[int, int] = {}
    for po in ep.pos.values():
        if po.status in (POState.PLACED, POState.IN_TRANSIT):
            for _sku, idx, qty, _cost in po.lines:
                incoming[idx] = incoming.get(idx, 0) + qty
    return incoming


def product_row(ep: Episode, p: ProductRec) -> dict[str, Any]:
    low = high = p.variants[0].price
    on_hand = reserved = 0
    in_stock: list[int] = []
    for v in p.variants:
        price = v.price
        low = price if price < low else low
        high = price if price > high else high
        on_hand += v.on_hand
        reserved += v.reserved
        if v.on_hand > v.reserved:
            in_stock.append(price)
    shelf = median_price(in_stock)
    return {
        "product_id": p.id, "title": p.title, "category": p.category, "season": p.season,
        "status": "active" if p.active else "inactive", "price_min": usd(low), "price_max": usd(high),
        "shelf_price": usd(shelf) if shelf is not None else None,
        "variants": len(p.variants), "variants_in_stock": len(in_stock),
        "units_on_hand": on_hand, "units_available": on_hand - reserved,
    }


class ListProductsArgs(PageArgs):
    status: Literal["active", "inactive", "all"] = Field("all", description="Filter by listing status.")
    category: str | None = Field(None, max_length=40, description="Only this category, e.g. knitwear.")
    search: str | None = Field(None, max_length=80, description="Words that must appear in the title.")
    sort: Literal["id", "title", "units_available", "price"] = Field("id", description="Sort order.")


@tool("list_products", title="List products", family=Family.CATALOG, kind=ToolKind.READ, args=ListProductsArgs,
      idempotent=True)
def list_products(ep: Episode, args: ListProductsArgs) -> dict[str, Any]:
    """List the shop's products (listed lines): status, price range, the shelf price shoppers
    see (the median price of in-stock sizes and colours), and stock: units on hand, and units
    available (on hand less reserved, summed over sizes and colours as list_inventory's product
    rows are, so it can be below zero). Filter by status, category or title words; up to 100
    rows a page."""
    words = (args.search or "").lower().split()
    if args.category and args.category.lower() not in {p.category for p in ep.products}:
        known = ", ".join(sorted({p.category for p in ep.products}))
        raise ToolError("invalid_argument", f"category {args.category!r} is not one of the shop's: {known}")
    chosen = []
    for p in ep.products:
        if args.status != "all" and (p.active != (args.status == "active")):
            continue
        if args.category and p.category != args.category.lower():
            continue
        if words and not all(w in p.title.lower() for w in words):
            continue
        chosen.append(p)
    if args.sort == "title":
        chosen.sort(key=lambda p: (p.title, p.id))
    elif args.sort == "units_available":
        chosen.sort(key=lambda p: (sum(v.available for v in p.variants), p.id))
    elif args.sort == "price":
        chosen.sort(key=lambda p: (min(v.price for v in p.variants), p.id))
    return page_of(chosen, args, lambda p: product_row(ep, p))


class ProductArgs(Args):
    product_id: EntityId = Field(..., max_length=40, description="A product id such as PRD-001.")


def variant_row(v: VariantRec, incoming: dict[int, int]) -> dict[str, Any]:
    return {"variant_id": v.id, "size": v.size, "colour": v.colour, "price": usd(v.price),
            "on_hand": v.on_hand, "reserved": v.reserved, "available": free_units(v),
            "backordered": backordered_units(v), "incoming": incoming.get(v.idx, 0), "unit_cost": usd(v.unit_cost),
            "batches": [{"batch": lot.po_id, "units": lot.units} for lot in v.lots if lot.units]}


@tool("get_product", title="Get product", family=Family.CATALOG, kind=ToolKind.READ, args=ProductArgs,
      idempotent=True)
def get_product(ep: Episode, args: ProductArgs) -> dict[str, Any]:
    """One product in full: listing copy, status, every size-colour variant with its price,
    stock on hand, reserved by open orders, available to sell (on hand less reserved, never
    below zero), backordered (units open orders need beyond what is on hand), incoming on
    purchase orders, unit cost and the batches it came from, and the supply products that
    restock it."""
    p = get_product_rec(ep, args.product_id)
    incoming = incoming_by_variant(ep)
    sources = []
    for sp_id in p.supply_product_ids:
        sp = ep.supply_products[sp_id]
        vendor = ep.vendors[sp.vendor_id]
        sources.append({"supply_product_id": sp_id, "vendor_id": vendor.id, "vendor": vendor.name,
                        "country": vendor.country, "available": ep.supply_available(sp_id)})
    return {**product_row(ep, p), "description": p.description, "material": p.material,
            "listed_since": when(p.listed_at), "sources": sources,
            "variant_rows": [variant_row(v, incoming) for v in p.variants]}


class SetPriceArgs(Args):
    product_id: EntityId = Field(..., max_length=40, description="The product to reprice.")
    price: Price = Field(..., description="New price in dollars, 1.00 to 1000.00, e.g. 49.50.")
    variant_id: EntityId | None = Field(None, max_length=60,
                                   description="Reprice only this variant; omit to reprice every variant.")


@tool("set_price", title="Set price", family=Family.CATALOG, kind=ToolKind.WRITE, args=SetPriceArgs,
      idempotent=True)
def set_price(ep: Episode, args: SetPriceArgs) -> dict[str, Any]:
    """Set the shelf price of a product (all its variants) or of one variant, in dollars.
    Shoppers compare the median price of the sizes and colours in stock with what the garment
    is worth to them; open orders keep the price they were placed at."""
    p = get_product_rec(ep, args.product_id)
    cents = int(args.price * 100)
    if not MIN_PRICE <= cents <= MAX_PRICE:
        raise ToolError("price_out_of_range", f"price must be between {usd(MIN_PRICE)} and {usd(MAX_PRICE)}, "
                        f"got {usd(cents)}", price=usd(cents))
    if args.variant_id is not None:
        targets = [v for v in p.variants if v.id == args.variant_id]
        if not targets:
            raise ToolError("unknown_variant", f"{args.variant_id!r} is not a variant of {p.id}; get_product lists "
                            f"its variants (such as {p.variants[0].id})",
                            variant_id=args.variant_id)
    else:
        targets = p.variants
    old = sorted({v.price for v in targets})
    for v in targets:
        v.price = cents
    return {"product_id": p.id, "variants_repriced": len(targets), "old_prices": [usd(c) for c in old],
            "new_price": usd(cents)}


class ListingStatusArgs(ProductArgs):
    status: Literal["active", "inactive"] = Field(..., description="active publishes, inactive hides.")


def publish(ep: Episode, p: ProductRec) -> None:
    """Every way of publishing a listing charges the insertion fee and respects the cap."""
    if ep.active_listings() >= ep.econ.listing_cap:
        raise ToolError("listing_cap_reached", f"the shop already has {ep.econ.listing_cap} active listings, "
                        "the platform's cap; deactivate one first", listing_cap=ep.econ.listing_cap)
    ep.ledger.post(ep.now, ep.window, Account.CASH, "insertion_fee", -ep.econ.insertion_fee, p.id)
    p.active = True


@tool("set_listing_status", title="Set listing status", family=Family.CATALOG, kind=ToolKind.WRITE,
      args=ListingStatusArgs)
def set_listing_status(ep: Episode, args: ListingStatusArgs) -> dict[str, Any]:
    """Publish (active) or hide (inactive) a product. Publishing charges the platform's
    insertion fee and counts against the listing cap (see platform_terms); hiding is free and
    stops new orders, while open orders still need shipping."""
    p = get_product_rec(ep, args.product_id)
    want = args.status == "active"
    if p.active == want:
        return {"product_id": p.id, "status": args.status, "changed": False, "fee": usd(0)}
    if want:
        publish(ep, p)
        return {"product_id": p.id, "status": "active", "changed": True, "fee": usd(ep.econ.insertion_fee)}
    p.active = False
    return {"product_id": p.id, "status": "inactive", "changed": True, "fee": usd(0)}


class CopyArgs(ProductArgs):
    description: str = Field(..., min_length=10, max_length=4000, description="The new listing description.")
    title: str | None = Field(None, min_length=3, max_length=120, description="A new title; omit to keep it.")


@tool("update_listing_copy", title="Update listing copy", family=Family.CATALOG, kind=ToolKind.WRITE,
      args=CopyArgs, idempotent=True)
def update_listing_copy(ep: Episode, args: CopyArgs) -> dict[str, Any]:
    """Rewrite a product's listing description (and optionally its title). Shoppers buy a
    little more readily from copy that says what the garment is made of, how it fits, how to
    care for it and which colours it comes in; padding and repetition do not help."""
    p = get_product_rec(ep, args.product_id)
    description = args.description.strip()
    title = args.title.strip() if args.title is not None else None
    if len(description) < 10:
        raise ToolError("invalid_argument", "description: needs at least 10 characters besides spaces",
                        field="description")
    if title is not None and len(title) < 3:
        raise ToolError("invalid_argument", "title: needs at least 3 characters besides spaces", field="title")
    p.description = description
    if title:
        p.title = title
    p.copy_quality = copy_quality(p)
    return {"product_id": p.id, "title": p.title, "description_words": len(p.description.split())}


class ListSupplyArgs(Args):
    supply_product_id: EntityId = Field(..., max_length=40, description="An unlisted supply product, e.g. SP-0150.")
    price: Price = Field(..., description="Shelf price in dollars for every variant, 1.00 to 1000.00.")


@tool("list_supply_product", title="List a supply product", family=Family.CATALOG, kind=ToolKind.WRITE,
      args=ListSupplyArgs)
def list_supply_product(ep: Episode, args: ListSupplyArgs) -> dict[str, Any]:
    """Add a product from the supplier market to the shop as a new active listing, with one
    variant per supply SKU at the given price. It starts with no stock: place a purchase order
    to stock it. Charges the insertion fee and counts against the listing cap."""
    sp = ep.supply_products.get(args.supply_product_id)
    if sp is None:
        raise ToolError("unknown_supply_product", f"no supply product {args.supply_product_id!r}; "
                        "search_supply_catalog shows the ids (they look like SP-0042)",
                        supply_product_id=args.supply_product_id)
    if not ep.is_unlisted_supply(sp.id):
        listed = sp.product_id or ep.listed_supply.get(sp.id)
        raise ToolError("already_listed", f"{sp.id} already restocks product {listed}; to republish that "
                        "product use set_listing_status", product_id=listed)
    if not ep.supply_available(sp.id):
        raise ToolError("supply_unavailable", f"{sp.id} is no longer offered by its vendor")
    cents = int(args.price * 100)
    if not MIN_PRICE <= cents <= MAX_PRICE:
        raise ToolError("price_out_of_range", f"price must be between {usd(MIN_PRICE)} and {usd(MAX_PRICE)}, "
                        f"got {usd(cents)}", price=usd(cents))
    product_id = f"PRD-{ep.next_product_no:03d}"
    p = ProductRec(len(ep.products), product_id, sp.title, f"{sp.garment} in {sp.material.lower()}.", sp.category,
           str(sp.season), sp.material, sp.garment, False, (sp.id,), sp.ref_price, sp.popularity, sp.elasticity,
           ep.now)
    publish(ep, p)  # refuses before anything changes if the cap is reached
    ep.next_product_no += 1
    from .sourcing import size_curve

    weights = size_curve(ep, sp)
    skus = [ep.skus[s] for s in sp.sku_ids]
    total = sum(weights)
    acc = 0.0
    for sku, w in zip(skus, weights, strict=True):
        vid = f"{product_id}-{sku.size}-{sku.id.rsplit('-', 1)[1]}"
        v = VariantRec(len(ep.variants), vid, p, sku.size, sku.colour, cents, (sku.id,), w / total)
        acc += w / total
        p.mix_cum.append(acc)
        p.variants.append(v)
        ep.variants.append(v)
        ep.variant_by_id[vid] = v
        ep.sku_variant[sku.id] = v.idx
    p.copy_quality = copy_quality(p)
    ep.products.append(p)
    ep.product_by_id[product_id] = p
    ep.listed_supply[sp.id] = product_id
    return {"product_id": product_id, "title": p.title, "variants": len(p.variants), "price": usd(cents),
            "fee": usd(ep.econ.insertion_fee), "status": "active"}

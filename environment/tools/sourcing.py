"""Sourcing: the supplier market, purchase orders."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from ..allocation import apportion
from ..engine.episode import PO_ARRIVAL, Episode
from ..engine.ledger import Account
from ..engine.state import PORec, POState
from ..simtime import DAY, HOUR
from ..world.generate import size_weight
from ..world.model import SupplyProduct, World
from .format import usd, when
from .registry import Args, EntityId, Family, PageArgs, ToolError, ToolKind, page_of, tool

MAX_PO_UNITS = 5_000
MAX_PO_LINES = 200  # a supply product has at most 100 SKUs; a line may name the SKU or the shop variant


def size_curve(ep: Episode, sp: SupplyProduct) -> list[float]:
    """Each SKU's share of a supply product: the standard size curve, even over colours."""
    return [size_weight(ep.skus[s].size, sp.sizes) / len(sp.colours) for s in sp.sku_ids]


def get_supply(ep: Episode, sp_id: str) -> SupplyProduct:
    sp: SupplyProduct | None = ep.supply_products.get(sp_id)
    if sp is None:
        raise ToolError("unknown_supply_product", f"no supply product {sp_id!r}; search_supply_catalog shows the "
                        "ids (they look like SP-0042)", supply_product_id=sp_id)
    return sp


def restocks(ep: Episode, sp: SupplyProduct) -> str | None:
    return sp.product_id or ep.listed_supply.get(sp.id)


def supply_row(ep: Episode, sp: SupplyProduct) -> dict[str, Any]:
    vendor = ep.vendors[sp.vendor_id]
    cheapest, dearest = base_cost_range(ep.world)[sp.id]
    costs = [ep.unit_cost_now(cheapest), ep.unit_cost_now(dearest)]
    return {"supply_product_id": sp.id, "title": sp.title, "category": sp.category, "season": str(sp.season),
            "vendor_id": vendor.id, "vendor": vendor.name, "country": vendor.country,
            "unit_cost_min": usd(min(costs)), "unit_cost_max": usd(max(costs)), "moq": ep.moq(vendor.id),
            "lead_days": ep.lead_days(vendor.id), "skus": len(sp.sku_ids), "restocks_product": restocks(ep, sp),
            "available": ep.supply_available(sp.id)}


class SearchSupplyArgs(PageArgs):
    query: str | None = Field(None, max_length=80, description="Words that must appear in the title.")
    category: str | None = Field(None, max_length=40, description="Only this category.")
    vendor_id: EntityId | None = Field(None, max_length=20, description="Only this vendor.")
    country: str | None = Field(None, max_length=40, description="Only vendors in this country.")
    listed: Literal["any", "in_shop", "not_in_shop"] = Field("any", description="Whether it restocks a shop product.")


@tool("search_supply_catalog", title="Search supply catalog", family=Family.SOURCING, kind=ToolKind.READ,
      args=SearchSupplyArgs, idempotent=True)
def search_supply_catalog(ep: Episode, args: SearchSupplyArgs) -> dict[str, Any]:
    """Search the supplier market: supply products with their vendor, country, current unit
    cost range, minimum order (MOQ, units per purchase order), lead time, and which shop
    product each restocks (none means you could list it). Up to 100 rows a page."""
    words = (args.query or "").lower().split()
    rows = []
    for sp in ep.world.supply_products:
        vendor = ep.vendors[sp.vendor_id]
        if words and not all(w in sp.title.lower() for w in words):
            continue
        if args.category and sp.category != args.category.lower():
            continue
        if args.vendor_id and vendor.id != args.vendor_id:
            continue
        if args.country and vendor.country.lower() != args.country.lower():
            continue
        in_shop = restocks(ep, sp) is not None
        if (args.listed == "in_shop" and not in_shop) or (args.listed == "not_in_shop" and in_shop):
            continue
        rows.append(sp)
    return page_of(rows, args, lambda sp: supply_row(ep, sp))


class SupplyArgs(Args):
    supply_product_id: EntityId = Field(..., max_length=40, description="A supply product id such as SP-0042.")


@tool("supply_product_detail", title="Supply product detail", family=Family.SOURCING, kind=ToolKind.READ,
      args=SupplyArgs, idempotent=True)
def supply_product_detail(ep: Episode, args: SupplyArgs) -> dict[str, Any]:
    """One supply product: every SKU (size and colour) with its current unit cost and the shop
    variant it restocks, plus the vendor's MOQ and current lead time."""
    sp = get_supply(ep, args.supply_product_id)
    skus = []
    for sku_id in sp.sku_ids:
        sku = ep.skus[sku_id]
        idx = ep.sku_variant.get(sku_id)
        skus.append({"sku_id": sku_id, "size": sku.size, "colour": sku.colour,
                     "unit_cost": usd(ep.unit_cost_now(sku_id)),
                     "restocks_variant": ep.variants[idx].id if idx is not None else None})
    return {**supply_row(ep, sp), "material": sp.material, "sku_rows": skus}


class VendorArgs(Args):
    vendor_id: EntityId = Field(..., max_length=20, description="A vendor id such as VND-07.")


@tool("supplier_profile", title="Supplier profile", family=Family.SOURCING, kind=ToolKind.READ, args=VendorArgs,
      idempotent=True)
def supplier_profile(ep: Episode, args: VendorArgs) -> dict[str, Any]:
    """A vendor's profile: country, tier, current lead time, minimum order, its record on the
    shop's past purchase orders (how many were received, how many of those landed by their
    expected arrival, as a share), defect returns per 100 orders of its lines, and whether it
    is still trading."""
    vendor = ep.vendors.get(args.vendor_id)
    if vendor is None:
        raise ToolError("unknown_vendor", f"no vendor {args.vendor_id!r}; search_supply_catalog names each "
                        "supply product's vendor (ids look like VND-07)", vendor_id=args.vendor_id)
    record = vendor_record(ep.world)[vendor.id]
    # What the shop has seen, never the vendor's hidden chance of delay: the history's purchase
    # orders and those received since the shift began (the history's received ones are not in ep.pos).
    mine = [p for p in ep.pos.values() if p.vendor_id == vendor.id and p.received_at is not None]
    received = record["pos"] + len(mine)
    on_time = record["on_time"] + sum(p.received_at is not None and p.received_at <= p.eta for p in mine)
    return {"vendor_id": vendor.id, "name": vendor.name, "country": vendor.country, "city": vendor.city,
            "tier": str(vendor.tier), "founded": vendor.founded, "lead_days": ep.lead_days(vendor.id),
            "moq": ep.moq(vendor.id),
            "on_time_delivery_record": f"{round(100 * on_time / received)}%" if received else None,
            "purchase_orders_received": received, "purchase_orders_on_time": on_time,
            "defect_returns_per_100_sold":
                round(100 * record["defects"] / record["sold"], 1) if record["sold"] else None,
            "trading": vendor.id not in ep.failed_vendors,
            "supply_products": sorted(sp.id for sp in ep.world.supply_products if sp.vendor_id == vendor.id)}


_COST_RANGE: dict[int, dict[str, tuple[str, str]]] = {}


def base_cost_range(world: World) -> dict[str, tuple[str, str]]:
    """Per supply product, its cheapest and dearest SKU (every SKU drifts by the same factor)."""
    key = id(world)
    if key not in _COST_RANGE:
        skus = world.by_id("supply_skus")
        _COST_RANGE[key] = {
            sp.id: (min(sp.sku_ids, key=lambda s: (skus[s].unit_cost, s)),
                    max(sp.sku_ids, key=lambda s: (skus[s].unit_cost, s)))
            for sp in world.supply_products}
    return _COST_RANGE[key]


_RECORDS: dict[int, dict[str, Any]] = {}


def vendor_record(world: World) -> dict[str, Any]:
    """Observed history per vendor (received POs and how many landed by their ETA, units sold,
    defect returns), computed once."""
    key = id(world)
    if key not in _RECORDS:
        sps = world.by_id("supply_products")
        products = world.by_id("products")
        orders = world.by_id("orders")
        rec = {v.id: {"pos": 0, "on_time": 0, "sold": 0, "defects": 0} for v in world.vendors}
        for po in world.purchase_orders:
            if po.received_at is not None:
                rec[po.vendor_id]["pos"] += 1
                rec[po.vendor_id]["on_time"] += po.received_at <= po.eta
        vendor_of = {v.id: sps[products[v.product_id].supply_product_id].vendor_id for v in world.variants}
        for o in world.orders:
            rec[vendor_of[o.variant_id]]["sold"] += 1
        for r in world.returns:
            if r.defective:
                rec[vendor_of[orders[r.order_id].variant_id]]["defects"] += 1
        _RECORDS[key] = rec
    return _RECORDS[key]


class PlacePOArgs(Args):
    supply_product_id: EntityId = Field(..., max_length=40, description="What to buy (see search_supply_catalog).")
    quantity: int | None = Field(None, ge=1, le=MAX_PO_UNITS,
                                 description="Total units, split over sizes by the standard size curve and evenly "
                                             "over colours. Give this or lines, not both.")
    lines: dict[Annotated[str, StringConstraints(max_length=40)], int] | None = Field(
        None, max_length=MAX_PO_LINES, description="Units per SKU or shop variant id, e.g. "
        "{\"PRD-001-M-BLK\": 12}. Give this or quantity.")


@tool("place_purchase_order", title="Place purchase order", family=Family.SOURCING, kind=ToolKind.WRITE,
      args=PlacePOArgs)
def place_purchase_order(ep: Episode, args: PlacePOArgs) -> dict[str, Any]:
    """Buy stock from a vendor. Pays the vendor now (the money is in transit until the goods
    land after the lead time, sometimes later), must meet the vendor's MOQ in total units, and
    needs enough cash. Goods can only land on a product in the shop: list an unlisted supply
    product first. A share of units may arrive defective, depending on the vendor. The order
    stays placed, and can be cancelled, until its cancellation window closes (cancellable_until);
    the vendor then ships it."""
    sp = get_supply(ep, args.supply_product_id)
    if (args.quantity is None) == (args.lines is None):
        raise ToolError("invalid_argument", "give either quantity or lines, not both and not neither")
    if not ep.supply_available(sp.id):
        raise ToolError("supply_unavailable", f"{sp.id} is not offered any more (vendor stopped trading or the "
                        "line was withdrawn); search for another source")
    if restocks(ep, sp) is None:
        raise ToolError("not_in_shop", f"{sp.id} does not restock any shop product; list it first with "
                        "list_supply_product")
    vendor = ep.vendors[sp.vendor_id]
    if args.lines is not None:
        wanted: dict[str, int] = {}
        for key, qty in sorted(args.lines.items()):
            if isinstance(qty, bool) or not isinstance(qty, int) or qty < 0:
                raise ToolError("invalid_argument", f"lines[{key!r}] must be a whole number of units >= 0")
            sku_id = key if key in ep.skus and ep.skus[key].supply_product_id == sp.id else None
            if sku_id is None:
                idx = ep.variant_by_id.get(key)
                sku_id = next((s for s in sp.sku_ids if idx is not None and ep.sku_variant.get(s) == idx.idx), None)
            if sku_id is None:
                raise ToolError("unknown_sku", f"{key!r} is neither a SKU of {sp.id} nor a shop variant it restocks",
                                key=key)
            if qty:
                wanted[sku_id] = wanted.get(sku_id, 0) + qty
    else:
        assert args.quantity is not None  # exactly one of quantity and lines, checked above
        skus = [ep.skus[s] for s in sp.sku_ids]
        weights = size_curve(ep, sp)
        wanted = {s.id: q for s, q in zip(skus, apportion(args.quantity, weights), strict=True) if q}
    units = sum(wanted.values())
    if units > MAX_PO_UNITS:
        raise ToolError("too_many_units", f"{units} units is over the {MAX_PO_UNITS}-unit limit of one order")
    if units < ep.moq(vendor.id):
        raise ToolError("below_moq", f"{vendor.name} needs at least {ep.moq(vendor.id)} units per order; this one "
                        f"has {units}", moq=ep.moq(vendor.id), units=units)
    lines = []
    cost = 0
    for sku_id in sp.sku_ids:
        qty = wanted.get(sku_id, 0)
        if qty:
            unit = ep.unit_cost_now(sku_id)
            lines.append((sku_id, ep.sku_variant[sku_id], qty, unit))
            cost += qty * unit
    if cost > ep.cash():
        raise ToolError("insufficient_cash", f"the order costs {usd(cost)} but cash is {usd(ep.cash())}",
                        cost=usd(cost), cash=usd(ep.cash()))
    po_id = f"PO-{ep.next_po_no}"
    ep.next_po_no += 1
    lead = ep.lead_days(vendor.id)
    eta = ep.now + lead * DAY
    po = PORec(po_id, vendor.id, sp.id, lines, cost, ep.now, eta, eta + ep._po_delay(po_id, vendor.id),
               ep.vendor_defect[vendor.id])
    ep.pos[po_id] = po
    ep.ledger.post(ep.now, ep.window, Account.CASH, "po_payment", -cost, po_id)
    ep.ledger.post(ep.now, ep.window, Account.IN_TRANSIT, "po_payment", cost, po_id)
    ep.schedule(po.arrive_at, PO_ARRIVAL, po_id)
    return {"po_id": po_id, "vendor": vendor.name, "units": units, "cost": usd(cost), "eta": when(eta),
            "status": po_status(ep, po), "cancellable_until": when(cancel_deadline(ep, po)),
            "lines": [{"sku_id": s, "variant_id": ep.variants[i].id, "quantity": q, "unit_cost": usd(c)}
                      for s, i, q, c in lines]}


def cancel_deadline(ep: Episode, po: PORec) -> int | None:
    """Until when ``po`` can still be cancelled (the vendor ships it when its cancellation
    window closes), or None once it has shipped, landed or been cancelled."""
    closes = po.placed_at + ep.econ.po_cancel_window_hours * HOUR
    return closes if po.status in (POState.PLACED, POState.IN_TRANSIT) and ep.now <= closes else None


def po_status(ep: Episode, po: PORec) -> str:
    """``po``'s status as the merchant sees it: placed while the vendor has not shipped it
    (its cancellation window is open), in_transit once it has, then received or cancelled."""
    if po.status in (POState.PLACED, POState.IN_TRANSIT):
        return str(POState.PLACED if cancel_deadline(ep, po) is not None else POState.IN_TRANSIT)
    return str(po.status)


class POArgs(Args):
    po_id: EntityId = Field(..., max_length=20, description="A purchase order id such as PO-5800.")


@tool("cancel_purchase_order", title="Cancel purchase order", family=Family.SOURCING, kind=ToolKind.WRITE,
      args=POArgs, destructive=True)
def cancel_purchase_order(ep: Episode, args: POArgs) -> dict[str, Any]:
    """Cancel a purchase order before the vendor ships it (within its cancellation window, see
    platform_terms). The vendor refunds the cost less a cancellation fee."""
    po = ep.pos.get(args.po_id)
    if po is None:
        raise ToolError("unknown_purchase_order", f"no purchase order {args.po_id!r}; list_purchase_orders "
                        "shows the ids (they look like PO-5800)", po_id=args.po_id)
    if po.status not in (POState.PLACED, POState.IN_TRANSIT):
        raise ToolError("not_cancellable", f"{po.id} is {po.status}", status=str(po.status))
    if cancel_deadline(ep, po) is None:
        raise ToolError("already_shipped", f"{po.id} was placed more than {ep.econ.po_cancel_window_hours} hours "
                        "ago and has shipped; it can no longer be cancelled")
    fee = po.cost * ep.econ.po_cancel_fee_bp // 10_000
    ep.ledger.post(ep.now, ep.window, Account.IN_TRANSIT, "po_cancelled", -po.cost, po.id)
    ep.ledger.post(ep.now, ep.window, Account.CASH, "po_cancel_refund", po.cost - fee, po.id)
    po.status = POState.CANCELLED
    return {"po_id": po.id, "status": "cancelled", "refunded": usd(po.cost - fee), "fee": usd(fee)}


class ListPOArgs(PageArgs):
    status: Literal["open", "received", "cancelled", "all"] = Field("open", description="Which orders to list.")


@tool("list_purchase_orders", title="List purchase orders", family=Family.SOURCING, kind=ToolKind.READ,
      args=ListPOArgs, idempotent=True)
def list_purchase_orders(ep: Episode, args: ListPOArgs) -> dict[str, Any]:
    """Your purchase orders: vendor, supply product, units, cost, when placed, expected
    arrival and status. Open means paid and not yet landed: placed (the vendor has not shipped
    it yet, and cancel_purchase_order can cancel it until cancellable_until) or in_transit
    (shipped, on its way). Then received, cancelled, or voided_by_supplier (a vendor that
    stopped trading refunded it). Up to 100 rows a page."""
    groups = {"open": {POState.PLACED, POState.IN_TRANSIT}, "received": {POState.RECEIVED},
              "cancelled": {POState.CANCELLED, POState.VOIDED}}
    pos = [p for p in ep.pos.values() if args.status == "all" or p.status in groups[args.status]]
    pos.sort(key=lambda p: (p.placed_at, p.id))
    rows = [{"po_id": p.id, "vendor_id": p.vendor_id, "supply_product_id": p.supply_product_id,
             "restocks_product": restocks(ep, ep.supply_products[p.supply_product_id]), "units": p.units,
             "cost": usd(p.cost), "placed_at": when(p.placed_at), "eta": when(p.eta), "status": po_status(ep, p),
             "cancellable_until": when(cancel_deadline(ep, p)), "received_at": when(p.received_at)} for p in pos]
    return page_of(rows, args)

"""Scripted events: what they do to the hidden market and what the operator hears.

Each task event fires at ``at_days`` into the shift and, for effects with a span,
lasts until ``until_days`` (or the end).  What the operator learns depends on the
channel: an *announced* event posts a platform alert ``announce_lead_days``
ahead; a *rumoured* one posts the task's vague trade-press line when it fires;
a *silent* one posts nothing, so only the store's own sales show it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import simtime
from ..simtime import DAY
from ..tasks.model import Channel, Event, EventKind
from .state import POState

if TYPE_CHECKING:
    from .episode import Episode
    from .state import ProductRec


class EventBook:
    def __init__(self, ep: Episode) -> None:
        self.ep = ep
        self.scheduled: list[tuple[int, int, Event]] = []
        self.active: list[tuple[int, int | None, Event]] = []
        self.posts: list[dict[str, Any]] = []
        for i, ev in enumerate(ep.task.events):
            at = ep.start + int(round(ev.at_days * DAY))
            until = ep.start + int(round(ev.until_days * DAY)) if ev.until_days is not None else None
            self.scheduled.append((at, i, ev))
            if ev.channel == Channel.ANNOUNCED:
                post_at = max(ep.start, at - int(round(ev.announce_lead_days * DAY)))
                self.posts.append({"id": f"ANN-{100 + i}", "posted_at": post_at, "source": "platform alert",
                                   "text": ev.message or _platform_text(ev, at, until)})
            elif ev.channel == Channel.RUMOURED:
                self.posts.append({"id": f"ANN-{100 + i}", "posted_at": at, "source": "trade press",
                                   "text": ev.rumor})
        self.posts.sort(key=lambda p: (p["posted_at"], p["id"]))
        self._fired: set[int] = set()
        self._until_fired: set[int] = set()

    # -- effects on demand ----------------------------------------------------------

    def demand_factor(self, product: ProductRec, at: int) -> float:
        f = 1.0
        for start, until, ev in self.active:
            if at < start or (until is not None and at >= until):
                continue
            if ev.kind in (EventKind.DEMAND_MULTIPLIER, EventKind.MARKET_CRASH):
                if _matches(ev, product):
                    f *= ev.factor
            elif ev.kind == EventKind.CATEGORY_BIAS and _matches(ev, product):
                f *= ev.factor
        return f

    # -- firing ------------------------------------------------------------------------

    def fire_due(self, now: int) -> None:
        """Apply every event whose time has come by the start of this window."""
        ep = self.ep
        for at, i, ev in self.scheduled:
            if i not in self._fired and at <= now:
                self._fired.add(i)
                until = ep.start + int(round(ev.until_days * DAY)) if ev.until_days is not None else None
                self.active.append((at, until, ev))
                self._apply(ev, i)
                ep.event_log.append({"at": simtime.iso(at), "kind": str(ev.kind), "channel": str(ev.channel),
                                     "index": i})
            if i in self._fired and i not in self._until_fired and ev.until_days is not None:
                if ep.start + int(round(ev.until_days * DAY)) <= now:
                    self._until_fired.add(i)
                    self._revert(ev)

    def _apply(self, ev: Event, index: int) -> None:
        ep = self.ep
        if ev.kind == EventKind.SUPPLY_SHOCK_COUNTRY:
            assert ev.country is not None, "the task loader requires a country for country shocks"
            ep.country_cost[ev.country] = ep.country_cost.get(ev.country, 1.0) * ev.factor
            ep.country_lead[ev.country] = ep.country_lead.get(ev.country, 0) + ev.lead_time_days
            if ev.delist_share:
                pool = sorted(sp.id for sp in ep.world.supply_products
                              if ep.vendors[sp.vendor_id].country == ev.country and sp.id not in ep.delisted)
                r = ep.stream("delist", index)
                for sp_id in r.sample(pool, int(round(len(pool) * ev.delist_share))):
                    ep.delisted.add(sp_id)
        elif ev.kind == EventKind.COST_INFLATION:
            if ev.category:
                ep.category_cost[ev.category] = ep.category_cost.get(ev.category, 1.0) * ev.factor
            else:
                ep.global_cost *= ev.factor
        elif ev.kind == EventKind.SUPPLIER_FAILURE:
            vendor_id = self.resolve_vendor(ev.vendor)
            ep.failed_vendors.add(vendor_id)
            for po in ep.pos.values():
                if po.vendor_id == vendor_id and po.status in (POState.PLACED, POState.IN_TRANSIT):
                    from .dynamics import void_purchase_order

                    void_purchase_order(ep, po)
        elif ev.kind == EventKind.QUALITY_SHIFT:
            vendor_id = self.resolve_vendor(ev.vendor)
            ep.vendor_defect[vendor_id] = ev.defect_rate
            # The fault hits the vendor's recent batches: the last history delivery of each of
            # its lines, and whatever of its orders is still on the way.  Other stock is sound.
            batches = {po.id for po in ep.world.purchase_orders
                       if po.vendor_id == vendor_id and po.received_at is not None
                       and po.received_at >= ep.start - 90 * DAY}
            for po in ep.pos.values():
                if po.vendor_id == vendor_id:
                    batches.add(po.id)
                    if po.status in (POState.PLACED, POState.IN_TRANSIT):
                        po.defect_rate = max(po.defect_rate, ev.defect_rate)
            for v in ep.variants:
                for lot in v.lots:
                    if lot.po_id in batches:
                        lot.defect_rate = max(lot.defect_rate, ev.defect_rate)
        elif ev.kind == EventKind.CARRIER_SQUEEZE:
            ep.capacity_factor *= ev.factor

    def _revert(self, ev: Event) -> None:
        ep = self.ep
        if ev.kind == EventKind.COST_INFLATION:
            if ev.category:
                ep.category_cost[ev.category] /= ev.factor
            else:
                ep.global_cost /= ev.factor
        elif ev.kind == EventKind.CARRIER_SQUEEZE:
            ep.capacity_factor /= ev.factor
        elif ev.kind == EventKind.QUALITY_SHIFT:
            vendor_id = self.resolve_vendor(ev.vendor)
            ep.vendor_defect[vendor_id] = ep.vendors[vendor_id].defect_rate

    def resolve_vendor(self, name: str | None) -> str:
        """A vendor id, or ``largest``: the vendor behind the most listed demand."""
        assert name is not None, "the task loader requires a vendor for vendor events"
        ep = self.ep
        if name != "largest":
            return name
        weight: dict[str, float] = {}
        for p in ep.products:
            vid = ep.supply_products[p.supply_product_ids[0]].vendor_id
            weight[vid] = weight.get(vid, 0.0) + p.popularity
        return max(sorted(weight), key=lambda v: weight[v])

    def visible_posts(self, now: int) -> list[dict[str, Any]]:
        return [p for p in self.posts if p["posted_at"] <= now]


def _matches(ev: Event, product: ProductRec) -> bool:
    if ev.season_tag and product.season != ev.season_tag:
        return False
    if ev.category and product.category != ev.category:
        return False
    return True


def _platform_text(ev: Event, at: int, until: int | None) -> str:
    when = simtime.iso(at)[:10]
    span = f" until {simtime.iso(until)[:10]}" if until else ""
    scope = f" in {ev.category}" if ev.category else (f" for {ev.season_tag} lines" if ev.season_tag else "")
    if ev.kind in (EventKind.DEMAND_MULTIPLIER, EventKind.MARKET_CRASH, EventKind.CATEGORY_BIAS):
        if ev.factor >= 1:
            return (f"Platform alert: shopper traffic{scope} is expected to run at roughly "
                    f"{ev.factor:.1f}x recent levels from {when}{span}. Plan stock accordingly.")
        return f"Platform alert: shopper traffic{scope} is expected to soften from {when}{span}."
    if ev.kind == EventKind.SUPPLY_SHOCK_COUNTRY:
        return (f"Platform alert: sourcing from {ev.country} is disrupted from {when}: expect higher "
                f"supplier prices, longer lead times and some supply lines withdrawn.")
    if ev.kind == EventKind.SUPPLIER_FAILURE:
        return f"Platform alert: one of the marketplace's large suppliers stops trading on {when}."
    if ev.kind == EventKind.QUALITY_SHIFT:
        return f"Platform alert: a supplier has reported a production fault affecting recent batches ({when})."
    if ev.kind == EventKind.COST_INFLATION:
        return f"Platform alert: supplier prices{scope} are rising from {when}."
    if ev.kind == EventKind.CARRIER_SQUEEZE:
        return f"Platform alert: carrier capacity for platform fulfilment is limited from {when}{span}."
    return f"Platform alert: market conditions change on {when}."

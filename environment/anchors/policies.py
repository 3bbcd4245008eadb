"""The anchors: scripted operators that act only through the 29 tools.

Every anchor plays through :meth:`Episode.call` with the same per-window budget
as an agent and learns about the store only from tool results (``store_status``,
being free, is the cheap way to know the budget).  Money in results is a dollar
string; anchors convert it with :func:`cents`.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..engine import Episode
from ..engine.episode import ToolResult
from ..errors import ErrorCode, StoreBenchError


def data_of(result: ToolResult) -> dict[str, Any]:
    """The data of a call the caller knows succeeded (a failed call carries an error instead)."""
    assert result.data is not None, f"{result.tool} failed: {result.error}"
    return result.data


def cents(text: str | None) -> int:
    return 0 if text is None else int(Decimal(text) * 100)


class Policy:
    """A scripted operator.  :meth:`window` plays one window; the loop ends it if the
    policy leaves operations unspent.  Work planned in a window belongs to that window:
    once the window's last operation has moved the store on, :meth:`ops` answers 0 and
    paginated reads stop, so no loop carries on into the next window with stale rows."""

    name = "policy"
    buys = True  # False: the policy reviews stock as usual but places no purchase order (lens ablation)
    _window = -1

    def run(self, ep: Episode) -> None:
        self.play_until(ep, None)

    def play_until(self, ep: Episode, window: int | None) -> None:
        """Play window after window, as :meth:`run` does, until the store closes or
        ``ep.window`` reaches ``window`` (a store part-way through a shift, for tests)."""
        while not ep.over and (window is None or ep.window < window):
            status = data_of(ep.call("store_status"))
            self._window = status["window"]
            self.window(ep, status)
            if not ep.over and data_of(ep.call("store_status"))["window"] == status["window"]:
                ep.call("end_window")

    def window(self, ep: Episode, status: dict[str, Any]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def ops(self, ep: Episode) -> int:
        """Operations left in the window being played (0 once it has ended)."""
        status = data_of(ep.call("store_status"))
        return 0 if ep.over or status["window"] != self._window else status["operations_left"]

    def rows(self, ep: Episode, tool: str, **args: Any) -> list[dict[str, Any]]:
        """Every row of a paginated read (one operation per page), within this window."""
        out: list[dict[str, Any]] = []
        page = 1
        while True:
            result = ep.call(tool, {**args, "page": page, "page_size": 100})
            if not result.ok:
                return out
            out += data_of(result)["rows"]
            if page >= data_of(result)["pages"] or self.ops(ep) < 1:
                return out
            page += 1


class DoNothing(Policy):
    """Never calls a tool: the episode ends at once."""

    name = "do-nothing"

    def run(self, ep: Episode) -> None:
        ep.stop()


class Absentee(Policy):
    """Attends every window (ends it) and does nothing else."""

    name = "absentee"

    def run(self, ep: Episode) -> None:
        while not ep.over:
            ep.call("end_window")


class BlastList(Policy):
    """The volume play: every operation ships an order that has stock, soonest deadline
    first.  It decides nothing else: it never answers a return, reads a report, buys or
    prices.  (Answering every return as well is the diligence clerk below, which the
    judgment-gap and diligence gates hold down as the other zero-judgment play.)"""

    name = "blast-list"

    def window(self, ep: Episode, status: dict[str, Any]) -> None:
        if status["orders_awaiting_shipment"]:
            for row in self.rows(ep, "list_orders", status="awaiting_shipment"):
                if self.ops(ep) < 1:
                    return
                if row["in_stock"]:
                    ep.call("fulfill_order", {"order_id": row["order_id"]})


class Diligence(Policy):
    """Diligence without judgment, as a new user would first try it: one page of orders (ship
    each that has stock), one page of returns (refund each in full), end the window.  Not an
    anchor: calibration plays it on every cell and fails a cell where it reaches the threshold,
    or where the best judgment anchor clears it by less than the judgment gap."""

    name = "diligence"

    def run(self, ep: Episode) -> None:
        while not ep.over:
            w = data_of(ep.call("store_status"))["window"]
            for tool, act, key in (("list_orders", "fulfill_order", "order_id"),
                                   ("list_returns", "refund_return", "return_id")):
                status = "awaiting_shipment" if tool == "list_orders" else "open"
                rows = (ep.call(tool, {"status": status, "page_size": 100}).data or {"rows": []})["rows"]
                for row in rows:
                    if ep.over or data_of(ep.call("store_status"))["window"] != w:
                        break
                    if row.get("in_stock", True):
                        ep.call(act, {key: row[key]})
            if not ep.over and data_of(ep.call("store_status"))["window"] == w:
                ep.call("end_window")


class RuleBased(Policy):
    """A checklist clerk: ship, refund in full, and reorder what sold on a fixed rule."""

    name = "rule-based"
    reorder_point = 3
    min_weekly_units = 4  # the checklist reorders only lines that sell at least this many a week
    # And orders nothing that would land within this many days of the end.  Chosen by the
    # calibration between 10 and 14: at 10 the clerk ties smart-triage on nine evaluation cells,
    # at 12 a short-runway threshold rounds up to 0.77, past the paper's span.
    stop_days = 11.5
    sales_days = 14  # the sales the checklist reads: the last two weeks, history included

    def __init__(self) -> None:
        self.sources: dict[str, dict[str, Any]] = {}
        self.open_po: dict[str, float] = {}  # line -> the day its purchase order should have landed
        self.window_no = 0
        self.day = 0.0
        self.review_days = 1.0

    def window(self, ep: Episode, status: dict[str, Any]) -> None:
        self.window_no += 1
        self.day = (status["window"] - 1) * status["window_hours"] / 24
        days_left = (status["windows_total"] - status["window"] + 1) * status["window_hours"] / 24
        self.review_days = 2 * status["window_hours"] / 24  # the reorder pass comes every other window
        reorder = self.window_no % 2 == 1 and days_left > self.stop_days
        keep = 3 if reorder else 0  # operations held back for the reorder pass, only when it is due
        if status["returns_escalating_within_24h"]:  # the checklist's first line: returns about to escalate
            for row in self.rows(ep, "list_returns", status="open"):
                if self.ops(ep) <= keep or ep.over or row["hours_to_escalation"] > 24:
                    break
                ep.call("refund_return", {"return_id": row["return_id"]})
        if status["orders_awaiting_shipment"]:
            for row in self.rows(ep, "list_orders", status="awaiting_shipment", sort="placed_newest")[::-1]:
                if self.ops(ep) <= keep or ep.over:
                    break
                if row["in_stock"]:
                    ep.call("fulfill_order", {"order_id": row["order_id"]})
        if status["open_returns"] and self.ops(ep) > keep and not ep.over:
            for row in self.rows(ep, "list_returns", status="open"):
                if self.ops(ep) <= keep or ep.over:
                    break
                ep.call("refund_return", {"return_id": row["return_id"]})
        if reorder and self.ops(ep) > 2 and not ep.over:
            self._reorder(ep, days_left)

    def _reorder(self, ep: Episode, days_left: float) -> None:
        if not self.sources:
            for row in self.rows(ep, "search_supply_catalog", listed="in_shop"):
                pid = row["restocks_product"]
                if row["available"] and (pid not in self.sources
                                         or cents(row["unit_cost_min"]) < cents(self.sources[pid]["unit_cost_min"])):
                    self.sources[pid] = row
        result = ep.call("sales_report", {"days": self.sales_days, "group_by": "product", "page_size": 100})
        if not result.ok:
            return
        for row in data_of(result)["rows"]:
            if self.ops(ep) < 1 or ep.over:
                return
            pid = row["product_id"]
            source = self.sources.get(pid)
            weekly = row["units"] * 7 / self.sales_days
            # The textbook reorder point: reorder once stock would not outlast the supplier's lead time
            # plus the wait for the next reorder pass.
            cover = (source["lead_days"] + self.review_days) / 7 * weekly if source else 0.0
            if (source is None or self.open_po.get(pid, -1.0) > self.day
                    or row["units_available_now"] > max(self.reorder_point, cover)
                    or weekly < self.min_weekly_units or source["moq"] > 3 * weekly
                    or source["lead_days"] > days_left - self.stop_days):
                continue  # the checklist skips lines whose minimum order would not sell in three weeks
            if not self.buys:
                continue
            quantity = max(source["moq"], int(2 * weekly + 0.5))
            placed = ep.call("place_purchase_order", {"supply_product_id": source["supply_product_id"],
                                                      "quantity": quantity})
            if placed.ok:
                self.open_po[pid] = self.day + source["lead_days"] + 1  # one order a line until it lands


class SmartTriage(Policy):
    """A heuristic operator: urgent work first, then restock by forecast, then price, and mark
    down what will not sell before the shift ends."""

    name = "smart-triage"
    cover_days = 9
    cash_reserve = 150_000
    match_share = 1.0  # how far toward a rival's lower price to go
    max_cut = 0.8  # the deepest markdown in one clearance review (as a share of the price)
    return_share = 0.15  # share of sold units expected back (the store's history: about 15%)
    sell_through = 0.8  # buy only what is expected to sell before the end: leftovers fetch a fraction of cost
    max_traffic = 8.0  # the most the store's traffic is trusted to exceed its history
    clear_within_days = 8.0  # markdowns wait for the last days: earlier, full-price demand may still come

    def __init__(self) -> None:
        self.sources: dict[str, list[dict[str, Any]]] = {}
        self.variant_mix: dict[str, list[dict[str, Any]]] = {}
        self.long_rate: dict[str, float] = {}
        self.unit_price: dict[str, float] = {}
        self.rates: dict[str, float] = {}
        self.scarce: dict[str, float] = {}
        self.scarce_done: set[str] = set()
        self.last_stock: dict[str, dict[str, Any]] = {}
        self.days_left = 0.0
        self.label = 450
        self.salvage = 0.4
        self.priced = False
        self.clear_due = False
        self.due = {"sources": 0, "restock": 0, "rivals": 0}  # the window each review is next due
        self.window_no = 0

    # -- a window ------------------------------------------------------------------

    def window(self, ep: Episode, status: dict[str, Any]) -> None:
        """Urgent returns first, then the restock review when it is due, then shipping.

        Shipping alone can fill a busy window, and an order left unshipped still goes
        out (the platform ships it at its deadline, for a fee), while a line that runs
        dry loses every sale until stock lands.  So a due restock review is paid for
        before the bulk of the shipping; the other reviews take what is left.
        """
        self.window_no += 1
        per_day = 24 // status["window_hours"]
        # Spare operations per 12 hours decide how often a full restock review is affordable.
        spare = status["operations_per_window"] * 12 / status["window_hours"]
        every_days = 1 if spare >= 16 else 2 if spare >= 12 else 3
        if status["returns_escalating_within_24h"]:
            self._refund(ep, urgent_hours=24.0)  # a missed return costs a fine; a missed shipment, a fee
        if not self.sources:
            if self.ops(ep) >= 6:
                self._learn_market(ep)
        elif self.window_no >= self.due["sources"] and self.ops(ep) >= 8:
            self._refresh_sources(ep)
            self.due["sources"] = self.window_no + per_day * 5
        restock_due = self.sources and self.window_no >= self.due["restock"]
        overdue = restock_due and self.window_no >= self.due["restock"] + 2 * per_day
        room = self.ops(ep) - status["orders_awaiting_shipment"]
        if restock_due and self.ops(ep) >= 6 and (room >= 8 or overdue):
            self._restock(ep, status)
            self.due["restock"] = self.window_no + per_day * every_days
        self._ship(ep, status)
        if status["open_returns"] and self.ops(ep) > 0:
            self._refund(ep)
        if self.ops(ep) < 3:
            return
        if self.sources and self.window_no >= self.due["restock"] and self.ops(ep) >= 6:
            self._restock(ep, status)
            self.due["restock"] = self.window_no + per_day * every_days
        if self.window_no >= self.due["rivals"] and self.ops(ep) >= 4:
            self._watch_rivals(ep)
            self.due["rivals"] = self.window_no + per_day * 2
        if not self.priced and self.ops(ep) > 2:
            self._price(ep)
        if self.clear_due and self.ops(ep) >= 5:
            self._clear(ep)
        if self.ops(ep) > 2:
            self._ship(ep, data_of(ep.call("store_status")))

    def _watch_rivals(self, ep: Episode) -> None:
        """Meet a rival's price on shared lines where the margin allows; ignore it elsewhere."""
        watch = ep.call("competitor_watch").data or {}
        for rival in watch.get("rivals", []):
            for row in rival["products"]:
                if ep.over or self.ops(ep) < 3:
                    return
                pid = row["product_id"]
                ours, theirs = cents(row["your_shelf_price"]), cents(row["their_price"])
                sources = self.sources.get(pid)
                if not ours or not sources or theirs >= ours * 0.97:
                    continue
                inv = self.last_stock.get(pid)
                rate = self.rates.get(pid, 0.0)
                if inv is None or inv["available"] < rate * self.days_left * 1.2:
                    continue  # stock will sell out anyway: a cut would only give margin away
                floor = int(cents(sources[0]["unit_cost_max"]) * 1.6)
                target = max(int(ours - (ours - theirs) * self.match_share), floor)
                if target < ours * 0.97:
                    ep.call("set_price", {"product_id": pid, "price": f"{target / 100:.2f}"})

    def _ship(self, ep: Episode, status: dict[str, Any]) -> None:
        if not status["orders_awaiting_shipment"] or ep.over:
            return
        rows = self.rows(ep, "list_orders", status="awaiting_shipment", sort="deadline")
        # An order past its deadline is late whoever ships it, and the platform's carrier takes it
        # without the late fine and review: orders still on time come first.
        for row in sorted(rows, key=lambda r: r["hours_to_deadline"] is not None and r["hours_to_deadline"] < 0):
            if ep.over or self.ops(ep) < 1:
                return
            if row["in_stock"]:
                ep.call("fulfill_order", {"order_id": row["order_id"]})

    def _refund(self, ep: Episode, urgent_hours: float | None = None) -> None:
        for row in self.rows(ep, "list_returns", status="open"):
            if ep.over or self.ops(ep) < 1:
                return
            if urgent_hours is not None and row["hours_to_escalation"] > urgent_hours:
                return  # soonest escalation first: the rest can wait for the regular pass
            ep.call("refund_return", {"return_id": row["return_id"]})

    # -- restocking by forecast ----------------------------------------------------------

    def _learn_market(self, ep: Episode) -> None:
        for row in self.rows(ep, "search_supply_catalog", listed="in_shop"):
            if row["available"]:
                self.sources.setdefault(row["restocks_product"], []).append(row)
        for row in self.rows(ep, "sales_report", days=120, group_by="product"):
            self.long_rate[row["product_id"]] = row["units"] / 120.0
            if row["units"]:
                self.unit_price[row["product_id"]] = cents(row["revenue"]) / row["units"]
        terms = ep.call("platform_terms").data or {}
        self.label = cents(terms.get("shipping_label_fee", "4.50"))
        self.salvage = float(terms.get("liquidation_rate_percent", 40)) / 100

    def _refresh_sources(self, ep: Episode) -> None:
        """Supplier prices, lead times and availability move: look again every few days."""
        fresh: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows(ep, "search_supply_catalog", listed="in_shop"):
            fresh.setdefault(row["restocks_product"], []).append(row)
        if fresh:
            self.sources = fresh

    def _restock(self, ep: Episode, status: dict[str, Any]) -> None:
        """Order what will sell before the shift ends, from the source that pays best.

        Demand per line is the recent sales rate, or the longer history when the line has
        been selling out (sold-out sizes leave no sales to see).  For each source the
        expected profit of an order weighs units likely sold before the end (at the line's
        price, less commission and label) against units left for the liquidator.
        """
        recent = {r["product_id"]: r for r in self.rows(ep, "sales_report", days=4, group_by="product")}
        stock = {r["product_id"]: r for r in self.rows(ep, "list_inventory", level="product")}
        now_day = ep.window * status["window_hours"] / 24.0  # the policy's own count of elapsed days
        days_left = status["windows_total"] * status["window_hours"] / 24.0 - now_day
        cash = cents(data_of(ep.call("store_status"))["cash"])
        reserve = min(self.cash_reserve, cash // 4)
        self.last_stock = stock
        self.days_left = days_left
        self.clear_due = True
        plans = []
        # The store's traffic against its history: lines still in stock show it in their recent
        # sales, and a sold-out line's history is scaled by it (its own recent sales are censored).
        seen = [pid for pid, inv in stock.items() if inv["variants_sold_out"] * 2 < inv["variants"]]
        expected = 4.0 * sum(self.long_rate.get(pid, 0.0) for pid in seen)
        traffic = min(self.max_traffic, max(1.0, sum(recent.get(pid, {}).get("units", 0) for pid in seen)
                                            / expected)) if expected > 0 else 1.0
        for pid, inv in stock.items():
            if inv["status"] != "active" or pid not in self.unit_price:
                continue
            sold_out_share = inv["variants_sold_out"] / max(1, inv["variants"])
            rate_recent = recent.get(pid, {}).get("units", 0) / 4.0
            rate = max(rate_recent, self.long_rate.get(pid, 0.0) * traffic * (1.0 if sold_out_share > 0.4 else 0.6))
            self.rates[pid] = rate
            if rate <= 0.02:
                continue
            have = inv["available"] + inv["incoming"]
            price = self.unit_price[pid]
            options = []
            for src in self.sources.get(pid, []):
                if not src["available"]:
                    continue
                lead = src["lead_days"]
                sell_days = days_left - lead
                if sell_days < 1.5:
                    continue
                need = rate * min(lead + self.cover_days, days_left) - have
                if need <= 0.5:
                    continue
                quantity = max(src["moq"], int(need + 0.5))
                cost = cents(src["unit_cost_max"])
                left_at_arrival = max(0.0, have - rate * lead)
                sold = min(quantity, max(0.0, rate * sell_days - left_at_arrival))
                # A returned unit comes back to the shelf, but its label is spent all the same.
                margin = (1 - self.return_share) * (price * 0.9 - cost) - self.label
                profit = sold * margin - (quantity - sold) * cost * (1 - self.salvage)
                if profit > 0 and sold >= self.sell_through * quantity:
                    options.append((profit, src["supply_product_id"], src, quantity, quantity * cost))
            options.sort(key=lambda o: (-o[0], o[1]))
            best = options or None
            fastest = min((s["lead_days"] for s in self.sources.get(pid, []) if s["available"]), default=None)
            if (pid not in self.scarce and inv["available"] > 0 and rate * days_left > 1.3 * have
                    and (fastest is None or fastest >= days_left - 1)):
                self.scarce[pid] = price  # will sell out before any restock can land: price for scarcity
            if best:
                plans.append((have / rate, pid, best))
        plans.sort(key=lambda p: (p[0], p[1]))
        for pid, price in sorted(self.scarce.items()):
            if pid in self.scarce_done or ep.over or self.ops(ep) < 4:
                continue
            self.scarce_done.add(pid)
            ep.call("set_price", {"product_id": pid, "price": f"{int(price * 1.12) // 50 * 50 / 100:.2f}"})
        for _cover, pid, options in plans:
            if not self.buys:
                break
            for _profit, _sp, src, quantity, cost in options:
                if ep.over or self.ops(ep) < 3:
                    return
                if cash - cost < reserve:
                    break
                placed = ep.call("place_purchase_order", {"supply_product_id": src["supply_product_id"],
                                                          "lines": self._lines(ep, pid, quantity)})
                if placed.ok:
                    cash -= cents(data_of(placed)["cost"])
                    break
                if placed.error is not None and placed.error["code"] == "supply_unavailable":
                    src["available"] = False  # withdrawn since we looked: try the next source
                    continue
                break

    def _lines(self, ep: Episode, pid: str, quantity: int) -> dict[str, int]:
        """Split an order over the sizes and colours that have sold, not over every colour."""
        from ..allocation import apportion

        if pid not in self.variant_mix:  # half a year of sales by size and colour hardly moves in a shift
            self.variant_mix[pid] = self.rows(ep, "sales_report", days=180, group_by="variant", product_id=pid)
        rows = self.variant_mix[pid]
        if not rows:
            product = ep.call("get_product", {"product_id": pid}).data or {}
            rows = [{"variant_id": v["variant_id"], "units": 0} for v in product.get("variant_rows", [])]
        weights = [row["units"] + 0.02 for row in rows]
        shares = apportion(quantity, weights)
        return {row["variant_id"]: q for row, q in zip(rows, shares, strict=True) if q}

    # -- clearance ----------------------------------------------------------------------

    def _clear(self, ep: Episode) -> None:
        """Mark down lines holding more stock than will sell before the shift ends.

        Stock left at the end goes to the liquidator at a fraction of cost, so a unit that
        would otherwise be left over is worth selling at any price that still covers its
        cost and label.  The cut aims to move the excess: demand is assumed to rise at
        least with the square of a price cut, so the price falls by the square root of the
        expected sell-through, at most a fifth per review.
        """
        self.clear_due = False
        if not self.last_stock or self.days_left < 1.0 or self.days_left > self.clear_within_days:
            return
        shelf = {p["product_id"]: cents(p["shelf_price"]) for p in self.rows(ep, "list_products", status="active")
                 if p["shelf_price"] is not None}
        plans = []
        for pid, inv in sorted(self.last_stock.items()):
            rate, price, sources = self.rates.get(pid, 0.0), shelf.get(pid), self.sources.get(pid)
            if not price or not sources or rate <= 0.02 or pid in self.scarce:
                continue
            sell_through = rate * self.days_left / max(1, inv["available"])
            if sell_through >= 0.67:
                continue
            floor = int((cents(sources[0]["unit_cost_max"]) + self.label) / 0.9 * 1.1)
            target = max(floor, int(price * max(self.max_cut, sell_through ** 0.5)) // 50 * 50 - 1)
            if target < price * 0.97:
                plans.append((-rate * price, pid, target))  # the busiest lines first: the cut moves most there
        for _gain, pid, target in sorted(plans):
            if ep.over or self.ops(ep) < 3:
                return
            ep.call("set_price", {"product_id": pid, "price": f"{target / 100:.2f}"})

    # -- pricing against peers ------------------------------------------------------------

    def _price(self, ep: Episode) -> None:
        self.priced = True
        products = self.rows(ep, "list_products", status="active")
        markups: dict[str, list[float]] = {}
        line_markup = {}
        for p in products:
            sources = self.sources.get(p["product_id"])
            if not sources or p["shelf_price"] is None:
                continue
            primary = sources[0]
            cost = cents(primary["unit_cost_min"])
            markup = cents(p["shelf_price"]) / max(1, cost)
            line_markup[p["product_id"]] = (markup, cost, primary["vendor_id"])
            markups.setdefault(primary["vendor_id"][:0] + primary["country"], []).append(markup)
        all_markups = sorted(m for m, _c, _v in line_markup.values())
        if not all_markups:
            return
        median = all_markups[len(all_markups) // 2]
        for pid, (markup, cost, _vendor) in sorted(line_markup.items()):
            if ep.over or self.ops(ep) < 3:
                return
            if markup > 1.25 * median or markup < 0.8 * median:
                target = int(cost * median / 50) * 50 + 50
                ep.call("set_price", {"product_id": pid, "price": f"{target / 100:.2f}"})


class Exploiter(Policy):
    """Plays every closed exploit of the catalogue, then walks off a third of the way in."""

    name = "exploiter"

    def run(self, ep: Episode) -> None:
        from .exploits import play_catalogue

        play_catalogue(ep)


ANCHORS: dict[str, Callable[[], Policy]] = {
    "do-nothing": DoNothing,
    "absentee": Absentee,
    "blast-list": BlastList,
    "rule-based": RuleBased,
    "smart-triage": SmartTriage,
    "exploiter": Exploiter,
}


# Scripted policies that are not anchors: calibration plays them as checks on each cell.
CHECKS: dict[str, Callable[[], Policy]] = {"diligence": Diligence}


class UnknownPolicy(StoreBenchError):
    code = ErrorCode.UNKNOWN_POLICY


def get_anchor(name: str | None) -> Policy:
    """The policy called ``name``; None, like any unknown name, raises :class:`UnknownPolicy`."""
    if name in CHECKS:
        return CHECKS[name]()
    if name not in ANCHORS:
        raise UnknownPolicy(f"unknown policy {name!r}; the anchors are {', '.join(ANCHORS)} "
                            f"(and the calibration check {', '.join(CHECKS)})")
    return ANCHORS[name]()


def run_policy(ep: Episode, name: str) -> Episode:
    get_anchor(name).run(ep)
    if not ep.over:
        ep.stop()
    return ep

"""The per-window measures the explorer charts, and how each reads the stored windows.

A *level* (cash, net assets, stock on hand) is read at the end of each window,
from window 0 (the opening) on; a *flow* (dense reward, orders, shipments)
happened during a window and is drawn at the window's middle, from window 1 on.
A measure may carry several series (shipments: on time, by the platform, late);
a comparison overlays trials on a measure's first series.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    slug: str
    title: str
    unit: str  # "usd" (stored in cents), "units" or "count"
    fields: tuple[tuple[str, str], ...]  # (TrialWindow field, series label)
    flow: bool
    bars: bool = False
    cumulative_in_compare: bool = False  # overlaid, the running total reads better than the bars
    carries_opening: bool = False  # window 1's value also counts the store's opening value (the dense reward)

    def compare_title(self) -> str:
        if self.cumulative_in_compare:
            return f"{self.fields[0][1].capitalize()}, cumulative"
        return self.title if len(self.fields) == 1 else f"{self.fields[0][1].capitalize()} per window"


MEASURES = (
    Measure("cash", "Cash", "usd", (("cash_cents", "cash"),), flow=False),
    Measure("net-assets", "Net assets", "usd", (("net_assets_cents", "net assets"),), flow=False),
    Measure("dense-reward", "Dense reward per window", "usd", (("dense_reward_cents", "dense reward"),),
            flow=True, bars=True, cumulative_in_compare=True, carries_opening=True),
    Measure("stock", "Stock on hand", "units", (("inventory_units", "units on hand"),), flow=False),
    Measure("orders", "Orders placed per window", "count", (("orders_placed", "orders placed"),), flow=True),
    Measure("shipments", "Shipments per window", "count",
            (("shipped_on_time", "shipped on time"), ("auto_shipped", "shipped by the platform"),
             ("shipped_late", "shipped late")), flow=True),
)
BY_SLUG = {m.slug: m for m in MEASURES}
SERIES_COLOURS = ("#0f766e", "#94a3b8", "#dc2626")

# The per-window table, as downloaded: every stored column.
WINDOW_COLUMNS = ("window", "at", "cash_cents", "receivable_cents", "in_transit_cents", "net_assets_cents",
                  "inventory_units", "inventory_cost_cents", "dense_value_cents", "dense_reward_cents", "rating",
                  "orders_placed", "shipped_on_time", "shipped_late", "auto_shipped", "orders_cancelled")


def points(rows: list[dict], measure: Measure, field: str) -> list[tuple[float, float | None]]:
    """(x, value) for one series; money in dollars. Flows skip the opening row."""
    scale = 100 if measure.unit == "usd" else 1
    out = []
    for row in rows:
        window = row["window"]
        if measure.flow and window == 0:
            continue
        value = row[field]
        out.append((window - 0.5 if measure.flow else window, None if value is None else value / scale))
    return out


def opening_offset(rows: list[dict], measure: Measure) -> int | None:
    """What window 1's value carries besides the window's own change, in cents, or None.

    The dense reward starts from the opening capital, not from the opening level, so window
    1's reward also counts the store's opening value above its starting capital (stock at
    the salvage rate, receivables): the rewards add up to business_raw.  That part is window
    1's reward less the change of the dense level over window 1.  Not told when window 1 is
    the last one played (its reward then ends at the settled net assets)."""
    if not measure.carries_opening:
        return None
    by_window = {row["window"]: row for row in rows[:3]}
    if not {0, 1, 2} <= set(by_window):
        return None
    first, opening = by_window[1], by_window[0]
    if first["dense_reward_cents"] is None:
        return None
    return first["dense_reward_cents"] - (first["dense_value_cents"] - opening["dense_value_cents"])


def running_total(rows: list[dict], measure: Measure, field: str) -> list[tuple[float, float | None]]:
    """A flow summed from the opening, at the end of each window (the dense reward's ends at business_raw).

    A measure whose first window carries the opening value starts at that value at window 0,
    so the curve does not show it as earned during window 1."""
    scale = 100 if measure.unit == "usd" else 1
    offset = opening_offset(rows, measure) or 0
    total = offset
    out: list[tuple[float, float | None]] = [(0, total / scale)]
    for row in rows:
        if row["window"] == 0 or row[field] is None:
            continue
        total += row[field] - (offset if row["window"] == 1 else 0)
        out.append((row["window"], total / scale))
    return out


def played(rows: list[dict]) -> bool:
    """Whether any window was played (a trial stopped in its first window has only the opening row)."""
    return any(row["window"] > 0 for row in rows)


def recorded(rows: list[dict], measure: Measure) -> bool:
    """False when the trial's folder predates the measure (every value missing).  A flow of a trial
    that played no window has nothing to record, which is not the same: that is True."""
    field = measure.fields[0][0]
    if measure.flow and not played(rows):
        return True
    return any(row[field] is not None for row in rows if not (measure.flow and row["window"] == 0))

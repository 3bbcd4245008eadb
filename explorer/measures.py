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

    def compare_title(self) -> str:
        if self.cumulative_in_compare:
            return f"{self.fields[0][1].capitalize()}, cumulative"
        return self.title if len(self.fields) == 1 else f"{self.fields[0][1].capitalize()} per window"


MEASURES = (
    Measure("cash", "Cash", "usd", (("cash_cents", "cash"),), flow=False),
    Measure("net-assets", "Net assets", "usd", (("net_assets_cents", "net assets"),), flow=False),
    Measure("dense-reward", "Dense reward per window", "usd", (("dense_reward_cents", "dense reward"),),
            flow=True, bars=True, cumulative_in_compare=True),
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


def running_total(rows: list[dict], measure: Measure, field: str) -> list[tuple[float, float | None]]:
    """A flow summed from the opening, at the end of each window (the dense reward's ends at business_raw)."""
    scale = 100 if measure.unit == "usd" else 1
    total = 0
    out: list[tuple[float, float | None]] = [(0, 0.0)]
    for row in rows:
        if row["window"] == 0 or row[field] is None:
            continue
        total += row[field]
        out.append((row["window"], total / scale))
    return out


def recorded(rows: list[dict], measure: Measure) -> bool:
    """False when the trial's folder predates the measure (every value missing)."""
    field = measure.fields[0][0]
    return any(row[field] is not None for row in rows if not (measure.flow and row["window"] == 0))

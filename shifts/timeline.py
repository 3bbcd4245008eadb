"""A shift's timeline: cash, net assets and stock on hand at every window boundary.

The series is read from the shift's episode with its stored calls applied: the
episode records its balances each time a window opens (``Episode.window_log``). If
the store is still open, it is stopped, so the last point is the settled store
(stock liquidated). Money stays in integer cents.
"""
from __future__ import annotations

from environment.engine import Episode

from .cache import replay_episode
from .models import Shift


def series_of(episode: Episode) -> list[dict]:
    """Points ``{"window", "label", "at", "cash_cents", "net_assets_cents", "stock_units"}``:
    one per window opened, then the settled store."""
    points = [{"window": row["window"], "at": row["at"],
               "label": f"W{row['window']}" if row["window"] <= episode.n_windows else "horizon",
               "cash_cents": row["cash_cents"], "net_assets_cents": row["net_assets_cents"],
               "stock_units": row["inventory_units"]}
              for row in episode.window_log]
    if not episode.over:
        episode.stop()
    points.append({"window": episode.window + 1, "label": "settled", "at": points[-1]["at"] if points else "",
                   "cash_cents": episode.cash(), "net_assets_cents": episode.ledger.net_assets(),
                   "stock_units": episode.stock_units})
    return points


def timeline_of(shift: Shift) -> list[dict]:
    """The ended shift's series, stored when it ended (a shift ended before timelines
    were stored gets one computed by replay, not saved: a page view writes nothing);
    none for a shift that has not ended."""
    if shift.status != Shift.Status.ENDED:
        return []
    return shift.timeline or series_of(replay_episode(shift))

"""A shift's timeline: cash, net assets and stock on hand at every window boundary.

The series is read from the shift's episode with its stored calls applied: the
episode records its balances each time a window opens (``Episode.window_log``). If
the store is still open, it is stopped, so the last point is the settled store
(stock liquidated). Money stays in integer cents.

A shift ended before timelines were stored has its series computed by replay on each
view; when the replay cannot run (its task has since been removed from this
installation, say), :func:`timeline_of` raises :class:`TimelineUnavailable` naming why,
and the coach's view shows that in place of the chart.  (The participant's end page
needs the task for more than the chart: it reads each window's length from it.)
"""
from __future__ import annotations

from environment.engine import Episode
from environment.errors import StoreBenchError

from .cache import replay_episode
from .errors import ShiftError, TaskUnavailable
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


class TimelineUnavailable(ShiftError):
    """An ended shift's timeline was not stored and its replay cannot run: the message says
    so in plain words, ``reason`` is the core's own account of the failure."""

    def __init__(self, reason: str) -> None:
        super().__init__("This shift's timeline cannot be drawn: it was not stored when the shift ended, "
                         "and the shift can no longer be replayed on this server.")
        self.reason = reason


def timeline_of(shift: Shift) -> list[dict]:
    """The ended shift's series, stored when it ended (a shift ended before timelines
    were stored gets one computed by replay, not saved: a page view writes nothing);
    none for a shift that has not ended.  Raises :class:`TimelineUnavailable` when that
    replay cannot run."""
    if shift.status != Shift.Status.ENDED:
        return []
    if shift.timeline:
        return shift.timeline
    try:
        return series_of(replay_episode(shift))
    except TaskUnavailable as error:
        raise TimelineUnavailable(error.reason) from error
    except StoreBenchError as error:
        raise TimelineUnavailable(str(error)) from error

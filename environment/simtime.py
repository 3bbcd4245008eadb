"""Simulated time as integer minutes since 2024-01-01 00:00 UTC.

The core never reads the wall clock.  Integer minutes keep arithmetic exact and
fast; conversion to ISO text happens only at the edges (tool results, exports).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
MINUTE = 1
HOUR = 60
DAY = 24 * HOUR


def from_datetime(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int((moment - EPOCH).total_seconds()) // 60


def to_datetime(minutes: int) -> datetime:
    return EPOCH + timedelta(minutes=minutes)


def parse(text: str) -> int:
    """Parse ``2026-08-01T00:00`` / ``2026-08-01 00:00`` / with ``Z`` or offset."""
    cleaned = text.strip().replace(" ", "T").replace("Z", "+00:00")
    return from_datetime(datetime.fromisoformat(cleaned))


@lru_cache(maxsize=1 << 16)
def iso(minutes: int) -> str:
    """``2026-08-01T00:00Z``: minute precision, always UTC.  Remembered: results name the
    same few thousand moments (orders' deadlines, the clock) over and over."""
    return to_datetime(minutes).strftime("%Y-%m-%dT%H:%MZ")


def day_of_year(minutes: int) -> int:
    return to_datetime(minutes).timetuple().tm_yday


def hour_of_day(minutes: int) -> int:
    return (minutes // HOUR) % 24


def day_index(minutes: int) -> int:
    return minutes // DAY

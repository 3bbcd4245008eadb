"""Fixed parameters of the world and the hidden seasonal and diurnal curves.

Shared by the generator, the history and the live engine's demand model.
"""

from __future__ import annotations

import math

from .. import simtime
from ..rand import Stream
from .model import Season

WORLD_SEED = "ostrelle-2026"
SHIFT_START = simtime.parse("2026-08-01T00:00")
HISTORY_START = simtime.parse("2025-02-01T00:00")
SETTLEMENT_DAYS = 7

LISTED_LINES = 111
UNLISTED_DESIGNS = 22
TARGET_VARIANTS = 3448
HISTORY_ORDERS = 3320
RETURN_RATE = 0.147
CURRENT_DAILY_ORDERS = 10.0  # store traffic at the shift start, average season (the store grew)
NEW_CUSTOMER_SHARE = 0.752
FITS = ("", "Relaxed", "Classic", "Slim", "Oversized", "Cropped", "Essential")


def rng(*purpose: str | int) -> Stream:
    return Stream.of(WORLD_SEED, *purpose)


def season_factor(season: str, doy: int) -> float:
    """Hidden seasonal demand curve of a season tag on a day of the year."""
    if season == Season.WARM:
        return 1.0 + 0.65 * math.cos(2 * math.pi * (doy - 190) / 365.0)
    if season == Season.COLD:
        return 1.0 + 0.7 * math.cos(2 * math.pi * (doy - 10) / 365.0)
    return 1.0 + 0.08 * math.cos(2 * math.pi * (doy - 330) / 365.0)


def store_season(doy: int) -> float:
    """Store-wide traffic: a November-December gifting peak and a February lull."""
    holiday = 0.45 * math.exp(-(((doy - 340) / 22.0) ** 2))
    lull = -0.12 * math.exp(-(((doy - 45) / 25.0) ** 2))
    return 1.0 + holiday + lull


# Share of a day's orders placed in each hour (peak in the evening, trough at night).
DIURNAL = (0.020, 0.012, 0.008, 0.006, 0.006, 0.009, 0.017, 0.028, 0.036, 0.042, 0.046, 0.050,
           0.055, 0.054, 0.050, 0.048, 0.049, 0.054, 0.062, 0.070, 0.074, 0.068, 0.053, 0.033)

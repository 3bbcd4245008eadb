"""The task record.  Money here is dollars as written in the files; the engine
converts to cents once, when it arms an episode."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any


class Channel(StrEnum):
    ANNOUNCED = "announced"
    RUMOURED = "rumoured"
    SILENT = "silent"


class EventKind(StrEnum):
    DEMAND_MULTIPLIER = "demand_multiplier"
    CATEGORY_BIAS = "category_bias"
    MARKET_CRASH = "market_crash"
    SUPPLY_SHOCK_COUNTRY = "supply_shock_country"
    SUPPLIER_FAILURE = "supplier_failure"
    QUALITY_SHIFT = "quality_shift"
    COST_INFLATION = "cost_inflation"
    CARRIER_SQUEEZE = "carrier_squeeze"


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    at_days: float
    channel: Channel
    rumor: str | None = None
    # Magnitudes; each kind reads the ones it needs (see engine.events).
    factor: float = 1.0
    season_tag: str | None = None
    category: str | None = None
    country: str | None = None
    vendor: str | None = None  # a vendor id, or "largest" for the biggest supplier of listed lines
    until_days: float | None = None  # the effect ends here (None: to the end)
    lead_time_days: int = 0
    delist_share: float = 0.0
    defect_rate: float = 0.0
    announce_lead_days: float = 1.0
    message: str | None = None  # what the platform alert says, for announced events


@dataclass(frozen=True, slots=True)
class Competitor:
    id: str
    name: str
    archetype: str
    entry_at_days: float
    base_pressure: float
    price_index: float
    overlap: float
    volatility: float


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    title: str
    prompt: str
    split: str  # "train", "eval" or "practice", from the folder the file lives in
    start: str
    horizon_days: int
    window_hours: int
    ops_per_window: int
    listing_cap: int
    trim_stock_days: float | None
    trim_stock_floor: int
    empty_shelf: bool
    economics: dict[str, Decimal | int]
    loyal_share: float
    competitors: tuple[Competitor, ...]
    events: tuple[Event, ...]
    source: str = ""  # file path it was read from
    file_hash: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def windows(self) -> int:
        return self.horizon_days * 24 // self.window_hours

"""How money, time and the store header read in tool results.

The store header is a typed value (:class:`StoreHeader`) built from the episode; the
one-line text an agent reads is rendered from it (:meth:`StoreHeader.line`).  Adapters
that show the header (the console, the study monitor) keep the typed value and never
parse the text back: a tool result may echo arbitrary argument text, and only the
value built here is the store's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from .. import simtime

if TYPE_CHECKING:
    from ..engine import Episode


def usd(cents: int) -> str:
    """Integer cents as a dollar string with two decimals: 123456 -> "1234.56"."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def usd_pretty(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def when(minutes: int | None) -> str | None:
    return None if minutes is None else simtime.iso(minutes)


@dataclass(frozen=True)
class StoreHeader:
    """The store's state as every tool result opens with it.

    ``time`` is the simulated time as "YYYY-MM-DD HH:MM" (UTC); money in integer cents;
    ``rating`` as shown, with two decimals.
    """

    time: str
    window: int
    windows: int
    ops_left: int
    ops_total: int
    cash_cents: int
    net_assets_cents: int
    rating: str
    closed: bool

    def time_of_window(self, window: int, window_minutes: int) -> str:
        """The store time of ``window`` (the clock moves a whole window at a time), counted
        back from this header's: a call that spent a window's last operation is answered with
        the next window's header, though what it read is as of the window it was made in."""
        minutes = simtime.parse(self.time) - (self.window - window) * window_minutes
        return simtime.iso(minutes).replace("T", " ").rstrip("Z")

    @property
    def cash(self) -> str:
        return usd_pretty(self.cash_cents)

    @property
    def net_assets(self) -> str:
        return usd_pretty(self.net_assets_cents)

    @property
    def line(self) -> str:
        """The header as the one line an agent reads."""
        return (f"{self.time} UTC | window {self.window} of {self.windows} | operations left "
                f"{self.ops_left} of {self.ops_total} | cash {self.cash} | net assets {self.net_assets}"
                f" | rating {self.rating}" + (" | store closed" if self.closed else ""))

    def as_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict`` of the header, without its deep copy (every field is immutable):
        stored with every console call."""
        return {name: getattr(self, name) for name in _HEADER_FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoreHeader:
        return cls(time=str(data["time"]), window=int(data["window"]), windows=int(data["windows"]),
                   ops_left=int(data["ops_left"]), ops_total=int(data["ops_total"]),
                   cash_cents=int(data["cash_cents"]), net_assets_cents=int(data["net_assets_cents"]),
                   rating=str(data["rating"]), closed=bool(data["closed"]))


_HEADER_FIELDS = tuple(field.name for field in fields(StoreHeader))


def store_header(ep: Episode) -> StoreHeader:
    """The typed header of ``ep`` as it stands now."""
    return StoreHeader(
        time=simtime.iso(ep.now).replace("T", " ").rstrip("Z"),
        window=min(ep.window + 1, ep.n_windows), windows=ep.n_windows,
        ops_left=ep.ops_left if not ep.over else 0, ops_total=ep.task.ops_per_window,
        cash_cents=ep.cash(), net_assets_cents=ep.ledger.net_assets(),
        rating=f"{ep.rating:.2f}", closed=bool(ep.over))


def header(ep: Episode) -> str:
    """The header line of ``ep`` (rendered from :func:`store_header`)."""
    return store_header(ep).line

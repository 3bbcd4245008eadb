"""The platform's terms of trade, in integer money.

Defaults describe the marketplace Ostrelle sells on; a task overrides any of them
in its ``[economics]`` table (dollars in the file, converted here once).  Rates
that need sub-cent precision are kept in hundredths of a cent ("hc") or basis
points ("bp").
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from decimal import ROUND_HALF_EVEN, Decimal


def cents(dollars: Decimal | int | float | str) -> int:
    return int((Decimal(str(dollars)) * 100).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


@dataclass(frozen=True, slots=True)
class Economics:
    starting_cash: int = 2_800_000
    deposit: int = 200_000
    settlement_days: int = 7
    commission_bp: int = 1_000
    label_fee: int = 450  # merchant-bought shipping label, per order
    # Platform fulfilment at the deadline, per order (label included): a late-hour pick and
    # pack costs well over a label bought by hand, which is what makes shipping by hand pay.
    autoship_fee: int = 1_150
    autoship_capacity_per_day: int = 60  # orders the platform's carrier takes a day
    stockout_fine: int = 1_500  # an order nobody could ship
    late_ship_fine: int = 800  # self-shipped after the deadline
    unshipped_fine: int = 1_500  # still unshipped when it fell due at settlement
    merchant_cancel_fine: int = 1_000
    return_escalate_days: int = 4
    ignored_return_fine: int = 700  # on top of the full refund the platform pays out of the store
    insertion_fee: int = 1_500  # per listing published
    listing_cap: int = 120
    holding_hc_per_unit_day: int = 200  # 0.02 dollars
    salvage_bp: int = 4_000
    suspend_after_days: int = 3  # cash below zero this long suspends the store
    po_cancel_fee_bp: int = 1_000
    po_cancel_window_hours: int = 48
    starting_rating: float = 4.6
    lead_time_pct: int = 60  # vendors' catalogue lead times, as a percentage, on this platform
    moq_pct: int = 100  # vendors' catalogue minimum orders, as a percentage

    @property
    def opening_capital(self) -> int:
        return self.starting_cash + self.deposit


_MONEY = {"starting_cash", "deposit", "label_fee", "autoship_fee", "stockout_fine", "late_ship_fine",
          "unshipped_fine", "ignored_return_fine", "insertion_fee"}


def economics_for(overrides: dict[str, Decimal | int], listing_cap: int) -> Economics:
    """Apply a task's ``[economics]`` table (dollars and plain rates) to the defaults."""
    changes: dict[str, int] = {"listing_cap": listing_cap}
    for key, value in overrides.items():
        if key in _MONEY:
            changes[key] = cents(value)
        elif key == "salvage_rate":
            changes["salvage_bp"] = int(Decimal(str(value)) * 10_000)
        elif key == "commission_rate":
            changes["commission_bp"] = int(Decimal(str(value)) * 10_000)
        elif key == "holding_cost_per_unit_day":
            changes["holding_hc_per_unit_day"] = int(Decimal(str(value)) * 10_000)
        elif key in {f.name for f in fields(Economics)}:
            changes[key] = int(value)
        else:
            raise KeyError(f"economics field {key!r} has no engine meaning")
    return replace(Economics(), **changes)

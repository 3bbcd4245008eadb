"""How money, time and the store header read in tool results."""

from __future__ import annotations

from .. import simtime


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


def header(ep) -> str:
    return (f"{simtime.iso(ep.now).replace('T', ' ').rstrip('Z')} UTC | window {min(ep.window + 1, ep.n_windows)}"
            f" of {ep.n_windows} | operations left {ep.ops_left if not ep.over else 0} of "
            f"{ep.task.ops_per_window} | cash {usd_pretty(ep.cash())} | net assets "
            f"{usd_pretty(ep.ledger.net_assets())} | rating {ep.rating:.2f}"
            + (" | store closed" if ep.over else ""))

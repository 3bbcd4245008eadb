"""``Episode.before_settlement``: an observer's last look before settlement liquidates the store."""
from __future__ import annotations

from environment.api import arm
from environment.tasks import get_task


def _stock_units(ep) -> int:
    return sum(v.on_hand for v in ep.variants)


def test_the_hook_sees_the_store_before_settlement_once():
    ep = arm(get_task("practice"), 1)
    seen: list[tuple[bool, int]] = []
    ep.before_settlement = lambda: seen.append((ep.over, _stock_units(ep)))
    ep.stop()
    ep.stop()  # a second stop finds the episode over: no second look
    assert len(seen) == 1
    over, units = seen[0]
    assert not over and units > 0  # settlement's liquidation had not run yet
    assert _stock_units(ep) < units


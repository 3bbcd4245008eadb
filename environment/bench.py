"""Speed of the engine, measured (not asserted): ``storebench bench``.

Figures are medians over repeated runs in one process, so they can be compared
side by side; absolute times drift on shared machines, ratios less so.  This
module reads the wall clock only to measure; nothing here feeds the simulation.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from .anchors import run_policy
from .api import arm
from .engine.state import OrderState
from .world import load_world


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 4)


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_engine(repeats: int = 5) -> dict:
    started = time.perf_counter()
    load_world()
    world_load = time.perf_counter() - started

    arm_times = [_timed(lambda: arm("steady", 7)) for _ in range(max(5, repeats * 2))]

    # One in-process tool call, per tool, on a live mid-episode store.
    ep = arm("steady", 7)
    for _ in range(6):
        ep.call("end_window")
    product = ep.products[2].id
    variant = ep.products[2].variants[0].id
    calls = {
        "store_status": {}, "list_orders": {"page_size": 100}, "list_products": {"page_size": 100},
        "get_product": {"product_id": product}, "list_inventory": {"level": "variant", "page_size": 100},
        "list_returns": {}, "sales_report": {"days": 30, "page_size": 100},
        "search_supply_catalog": {"page_size": 100}, "finance_summary": {}, "ledger_entries": {"page_size": 100},
        "set_price": {"product_id": product, "price": "55.00"},
        "update_listing_copy": {"product_id": product, "description": "Soft merino with a relaxed fit."},
        "dispose_stock": {"variant_id": variant, "quantity": 1},
    }
    per_tool = {}
    all_samples = []
    for name, args in calls.items():
        samples = []
        for _ in range(repeats * 8):
            ep.ops_left = 10_000  # measure calls, not window advances
            samples.append(_timed(lambda: ep.call(name, args)))
        per_tool[name] = _median_ms(samples)
        all_samples += samples
    ship = []
    for o in sorted(ep.orders.values(), key=lambda o: o.id):
        if o.status == OrderState.OPEN and o.variant.on_hand >= o.quantity:
            ep.ops_left = 10_000
            ship.append(_timed(lambda o=o: ep.call("fulfill_order", {"order_id": o.id})))
    per_tool["fulfill_order"] = _median_ms(ship) if ship else None
    all_samples += ship

    # Window advance: end_window on an otherwise idle store.
    advances = []
    ep = arm("steady", 7)
    while not ep.over:
        advances.append(_timed(lambda: ep.call("end_window")))

    # A 60-window episode that makes 20 calls every window (19 + the last one advances).
    def busy_episode() -> None:
        e = arm("steady", 7)
        reads = [("list_orders", {}), ("list_returns", {}), ("list_inventory", {}), ("sales_report", {}),
                 ("get_product", {"product_id": product}), ("finance_summary", {})]
        i = 0
        while not e.over:
            open_orders = [o for o in e.orders.values() if o.status == OrderState.OPEN and o.variant.on_hand]
            if open_orders and i % 2:
                e.call("fulfill_order", {"order_id": min(open_orders, key=lambda o: o.deadline).id})
            else:
                e.call(*reads[i % len(reads)])
            i += 1

    busy = [_timed(busy_episode) for _ in range(max(3, repeats))]
    steady_st = [_timed(lambda: run_policy(arm("steady", 7), "smart-triage")) for _ in range(max(3, repeats))]
    full_year = [_timed(lambda: run_policy(arm("full-year", 7), "smart-triage")) for _ in range(2)]
    return {
        "world_generate_and_check_s": round(world_load, 3),
        "arm_episode_ms_p50": _median_ms(arm_times),
        "tool_call_ms_p50": _median_ms(all_samples),
        "tool_call_ms_p50_by_tool": per_tool,
        "window_advance_ms_p50": _median_ms(advances),
        "episode_60_windows_20_calls_s_p50": round(statistics.median(busy), 3),
        "smart_triage_steady_s_p50": round(statistics.median(steady_st), 3),
        "smart_triage_full_year_s_p50": round(statistics.median(full_year), 3),
        "medusa_reference_ms": {"trivial_read": 2.7, "read_one_product": 30, "update_price": 53,
                                "list_100_orders": 215, "list_100_products": "500-1100"},
    }

"""The economy makes judgment pay: demand can outrun stock, running dry is a visible
failure, budgets bind on busy windows, and a trimmed shelf is really trimmed."""

from __future__ import annotations

from decimal import Decimal

from environment.anchors import run_policy
from environment.anchors.exploits import CATALOGUE, play_catalogue
from environment.api import arm
from environment.engine.settlement import rates, score
from environment.engine.state import OrderState


def test_orders_outrun_stock_and_a_backorder_with_no_stock_is_cancelled_fined_and_counts_against_on_time():
    ep = arm("steady", 7)
    for _ in range(12):
        ep.call("end_window")
    backorders = [o for o in ep.orders.values() if o.backorder and not o.opening]
    assert backorders, "no order was ever placed beyond the stock on hand"
    cancelled = [o for o in backorders if o.status == OrderState.CANCELLED_STOCKOUT]
    assert cancelled
    fines = {e["ref"] for e in ep.ledger.rows() if e["kind"] == "stockout_fine"}
    assert {o.id for o in cancelled} <= fines
    due, on_time, _r, _c = rates(ep)
    assert due >= len(cancelled) and not any(o.on_time for o in cancelled)


def test_trim_stock_days_really_trims_and_two_trims_differ():
    untrimmed, four, six = arm("steady", 7), arm("short-runway", 7), arm("cash-crunch", 7)
    assert four.stock_units < untrimmed.stock_units
    assert four.stock_units < six.stock_units  # 4 days keep less than 6 days of the busy lines
    assert six.stock_units - four.stock_units < 0.1 * four.stock_units  # close, as in the release


def test_budgets_bind_on_busy_windows_so_diligence_leaves_work_to_the_platform():
    ep = run_policy(arm("steady", 7), "diligence")
    assert sum(row["auto_shipped"] for row in ep.window_log) > 0
    s = score(ep)
    assert s.on_time_rate < 1 and s.return_handled_rate < 1


def test_judgment_out_earns_diligence_on_the_steady_lens():
    diligence = score(run_policy(arm("steady", 7), "diligence"))
    triage = score(run_policy(arm("steady", 7), "smart-triage"))
    assert triage.business_raw > diligence.business_raw
    assert triage.reliability > diligence.reliability


def test_the_volume_play_ships_and_answers_no_return():
    """Blast-list spends its operations on shipping only: every return it was due escalates, so
    its reliability is about half its on-time rate, as the paper's blast-list (0.39 to 0.45)."""
    ep = run_policy(arm("steady", 7), "blast-list")
    tools = {e["tool"] for e in ep.action_log}
    assert tools == {"store_status", "list_orders", "fulfill_order", "end_window"}
    s = score(ep)
    assert s.returns_due > 0 and s.return_handled_rate == 0
    assert s.on_time_rate > Decimal("0.8") and abs(s.reliability - s.on_time_rate / 2) <= Decimal("0.000001")


def test_the_exploiter_attempts_every_catalogue_entry():
    attempted = play_catalogue(arm("steady", 11))
    assert attempted == [name for name, _how in CATALOGUE]


def _over_buy(ep) -> list[str]:
    """Place one minimum order for each of the first 20 restockable lines; the refusals' codes."""
    rows = ep.call("search_supply_catalog", {"listed": "in_shop", "page_size": 20}).data["rows"]
    codes = []
    for row in rows:
        result = ep.call("place_purchase_order", {"supply_product_id": row["supply_product_id"],
                                                  "quantity": row["moq"]})
        if not result.ok:
            codes.append(result.error["code"])
    return codes


def test_cash_crunch_small_cash_binds_on_an_over_buyer_where_short_runway_does_not():
    assert "insufficient_cash" in _over_buy(arm("cash-crunch", 7))
    assert "insufficient_cash" not in _over_buy(arm("short-runway", 7))


def test_a_cleared_warehouse_has_nothing_on_order_and_its_empty_sizes_stay_on_offer():
    cleared, stocked = arm("cold-start", 7), arm("steady", 7)
    assert not cleared.pos and stocked.pos  # the clear-out cancelled the purchase orders in transit
    assert cleared.stock_units == sum(v.reserved for v in cleared.variant_by_id.values())
    live = [v for v in cleared.variant_by_id.values() if v.offered_until == cleared.horizon_end]
    assert live and not any(v.offered_until == stocked.horizon_end for v in stocked.variant_by_id.values())


def test_a_store_that_never_restocks_a_cleared_shelf_loses_orders_to_the_live_listings():
    # the clerk's refunds bring a few units back to the shelf, so shoppers come, and the
    # empty sizes still on offer take orders nobody can ship
    ep = run_policy(arm("cold-start", 7), "diligence")
    cancelled = [o for o in ep.orders.values() if o.status == OrderState.CANCELLED_STOCKOUT]
    assert len(cancelled) >= 10
    assert score(ep).on_time_rate < 0.8


def test_the_rule_based_clerk_reorders_before_a_line_runs_dry():
    """Its reorder point is the textbook one (lead time plus the wait for its next pass), so over a
    year it keeps restocking (59 orders on seed 7); with the old rule (a line down to 3 units, by
    when its sold-out sizes had stopped selling) it placed 16."""
    ep = run_policy(arm("full-year", 7), "rule-based")
    placed = [e for e in ep.action_log if e["tool"] == "place_purchase_order" and e["ok"]]
    assert len(placed) >= 40

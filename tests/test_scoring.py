"""The floor of the scale: do-nothing scores exactly 0 and absentee exactly 0.1 on
every task, whatever the business scale; and the score's parts add up."""

from __future__ import annotations

from decimal import Decimal

import pytest

from environment.anchors import run_policy
from environment.api import arm, grade
from environment.calibration import CalibrationError
from environment.engine.settlement import compose, score
from environment.tasks import TaskFileError, all_tasks

TASKS = [t.id for t in all_tasks()]


def _zero_and_runs(task_id: str, seed: int):
    dn = run_policy(arm(task_id, seed), "do-nothing")
    ab = run_policy(arm(task_id, seed), "absentee")
    zero = max(score(dn).business_raw, score(ab).business_raw)
    return dn, ab, zero


@pytest.mark.parametrize("task_id", TASKS)
def test_do_nothing_scores_zero_and_absentee_one_tenth(task_id):
    dn, ab, zero = _zero_and_runs(task_id, 7)
    for scale in (Decimal("1"), Decimal("1000"), Decimal("123456")):
        assert score(dn, zero, scale).reward_composite == Decimal("0")
        assert score(ab, zero, scale).reward_composite == Decimal("0.1")
    assert score(ab).reliability == 0 and score(ab).continuity == 1
    assert score(dn).continuity == 0 and score(dn).windows_played == 0


def test_composite_is_the_weighted_sum():
    ep = run_policy(arm("short-runway", 11), "smart-triage")
    s = score(ep, Decimal("20000"), Decimal("5000"))
    assert s.reward_composite == compose(s.business, s.reliability, s.continuity)
    assert s.business == min(Decimal(1), max(Decimal(0), (s.business_raw - Decimal("20000")) / Decimal("5000"))
                             ).quantize(Decimal("0.000001"))


def test_business_raw_is_net_asset_growth_over_opening_capital():
    ep = run_policy(arm("cash-crunch", 7), "blast-list")
    s = score(ep)
    assert s.business_raw == s.net_assets - Decimal("3000")  # $2,000 cash and a $1,000 deposit
    assert s.net_assets == Decimal(ep.ledger.net_assets()) / 100


def test_settlement_leaves_nothing_in_transit_or_on_the_shelf():
    ep = run_policy(arm("steady", 7), "rule-based")
    from environment.engine.ledger import Account

    assert ep.ledger.balance[Account.IN_TRANSIT] == 0
    assert ep.stock_units == 0 and all(v.on_hand == 0 for v in ep.variants)


def test_dense_rewards_telescope_to_business_raw():
    ep = run_policy(arm("steady", 11), "smart-triage")
    dense = ep.dense_rewards()
    assert len(dense) == ep.n_windows
    assert Decimal(sum(dense)) / 100 == score(ep).business_raw


def test_dense_rewards_of_a_walk_off_also_telescope():
    ep = arm("steady", 11)
    for _ in range(5):
        ep.call("end_window")
    ep.stop()
    dense = ep.dense_rewards()
    assert len(dense) == 5
    assert Decimal(sum(dense)) / 100 == score(ep).business_raw


def test_grade_without_a_calibration_cell_says_so_and_leaves_the_store_open():
    ep = arm("steady", 7)
    with pytest.raises(CalibrationError, match="no calibration cell: grading steady seed 7 needs its calibration "
                                               "constants; give cell_of"):
        grade(ep, None)  # what cell_of returns for a cell the calibration does not have
    assert not ep.over


def test_the_constants_grades_error_points_to_take_a_task_name_as_arm_does():
    from pathlib import Path

    from environment.api import cell_constants
    from environment.calibration import load_calibration
    from environment.tasks import get_task

    calibration, _digest = load_calibration(Path(__file__).resolve().parent.parent / "calibration" / "public.json")
    by_name = cell_constants("steady", 7, calibration)
    assert by_name == cell_constants(get_task("steady"), 7, calibration) and by_name[1] == "calibration file"


def test_arm_without_a_task_names_the_known_tasks():
    with pytest.raises(TaskFileError, match="unknown task None; known tasks: .*steady"):
        arm(None, 7)

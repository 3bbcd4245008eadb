"""Lens ablation: each defining ingredient removed in turn, the anchors replayed."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from environment.ablation import BITE, ingredients
from environment.tasks import get_task

REPO = Path(__file__).resolve().parents[1]


def test_each_ingredient_is_the_lens_without_exactly_that_ingredient():
    peak = get_task("peak-season")
    names = [i.name for i in ingredients(peak)]
    assert names == ["event 1: demand_multiplier at day 12", "event 2: carrier_squeeze at day 12"]
    assert [len(i.task.events) for i in ingredients(peak)] == [1, 1]
    runway = {i.name.split(":")[0]: i.task for i in ingredients(get_task("short-runway"))}
    assert runway["shelf trimmed to 4 days"].trim_stock_days is None
    assert set(runway["terms"].economics) == set()
    liquidity = ingredients(get_task("liquidity"))
    assert [i.name.split(":")[0] for i in liquidity] == ["cash", "shelf trimmed to 10 days"]
    assert "starting_cash" not in liquidity[0].task.economics
    assert liquidity[0].task.trim_stock_days == 10 and liquidity[1].task.economics == get_task("liquidity").economics


def test_cli_ablate_prints_each_anchors_change_and_whether_it_bites():
    proc = subprocess.run([sys.executable, "-m", "environment", "tasks", "ablate", "counter-punch", "--json"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["task"] == "counter-punch" and out["seed"] == 7
    rows = {r["ingredient"].split(" (")[0].split(":")[0]: r for r in out["ingredients"]}
    assert set(rows) == {"event 1", "rivals", "terms", "shelf trimmed to 6 days"}
    for row in rows.values():
        for anchor, change in row["change"].items():
            assert abs(row["composite"][anchor] - out["base"][anchor] - change) < 1e-9
        assert row["bites"] == any(abs(c) >= float(BITE) for c in row["change"].values())


def test_the_report_table_names_the_inert_ingredients_and_the_plain_lenses():
    from environment.ablation import document

    def result(task, rows):
        return {"task": task, "seed": 7, "criterion": "x", "threshold": 0.7,
                "base": dict.fromkeys(("blast-list", "rule-based", "smart-triage"), 0.5),
                "ingredients": [{"ingredient": name, "bites": bites,
                                 "composite": dict.fromkeys(("blast-list", "rule-based", "smart-triage"), 0.5),
                                 "change": dict.fromkeys(("blast-list", "rule-based", "smart-triage"), 0.0)}
                                for name, bites in rows]}

    text = document([result("steady", [("event 1", True), ("event 2", False)]), result("full-year", [])])
    head = text.splitlines()[0]
    assert "Inert today (NO): steady: event 2." in head and "event 1" not in head
    assert head.endswith("full-year has no ingredient to remove.")
    assert "#### steady" in text and "#### full-year" in text and "criterion:" not in text


def test_a_cash_squeeze_is_read_on_the_over_buyer_probe():
    """The honest anchors are frugal buyers; the over-buyer commits cash, so a thin balance binds on it."""
    from environment.ablation import PROBE, ablate

    out = ablate(get_task("liquidity"), 7)
    (row,) = [r for r in out["ingredients"] if r["ingredient"].startswith("cash:")]
    assert all("probe" not in r for r in out["ingredients"] if r is not row)  # the probe reads cash only
    probe = row["probe"]
    assert probe["name"] == PROBE
    assert abs(probe["composite"] - probe["base"] - probe["change"]) < 1e-9
    assert abs(probe["change"]) >= float(BITE) and row["bites"]
    assert PROBE in out["criterion"]


@pytest.mark.parametrize("anchor", ["rule-based", "smart-triage"])
def test_a_never_buying_anchor_keeps_its_reviews_but_places_no_purchase_order(anchor):
    from environment.anchors.policies import get_anchor
    from environment.engine import Episode

    def played(buys):
        ep = Episode(get_task("steady"), 7)
        policy = get_anchor(anchor)
        policy.buys = buys
        policy.play_until(ep, 12)
        tools = [e["tool"] for e in ep.action_log]
        return tools.count("place_purchase_order"), tools.count("search_supply_catalog")

    placed, searched = played(True)
    assert placed > 0
    assert played(False) == (0, searched)


def test_restocking_pays_on_steady():
    """Steady promises popular lines that run dry unless reordered: judgment that never buys loses."""
    from environment.ablation import buying, grader
    from environment.calibration import calibrate_cell

    cell = calibrate_cell(get_task("steady"), 7)
    base = {a: Decimal(str(cell["anchors"][a]["reward_composite"])) for a in ("rule-based", "smart-triage")}
    out = buying(get_task("steady"), 7, None, base, grader(cell))
    assert out["best"] - out["best_without"] >= float(BITE) and out["pays"]
    for anchor, change in out["change"].items():
        assert abs(out["composite"][anchor] - float(base[anchor]) - change) < 1e-9


def test_the_report_names_the_lenses_where_restocking_does_not_pay():
    from environment.ablation import document

    def result(task, pays):
        return {"task": task, "seed": 7, "criterion": "x", "threshold": 0.7, "ingredients": [],
                "base": dict.fromkeys(("blast-list", "rule-based", "smart-triage"), 0.5),
                "buying": {"composite": dict.fromkeys(("rule-based", "smart-triage"), 0.5),
                           "change": dict.fromkeys(("rule-based", "smart-triage"), 0.0),
                           "best": 0.5, "best_without": 0.5 if not pays else 0.4, "pays": pays}}

    head = document([result("steady", True), result("liquidity", False)]).splitlines()[0]
    assert head.endswith("Restocking does not pay on: liquidity.")
    assert "Restocking pays on every lens." in document([result("steady", True)]).splitlines()[0]

"""Lens ablation: each defining ingredient removed in turn, the anchors replayed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    assert [i.name.split(":")[0] for i in liquidity] == ["cash"]
    assert "starting_cash" not in liquidity[0].task.economics


def test_cli_ablate_prints_each_anchors_change_and_whether_it_bites():
    proc = subprocess.run([sys.executable, "-m", "environment", "tasks", "ablate", "counter-punch", "--json"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["task"] == "counter-punch" and out["seed"] == 7
    rows = {r["ingredient"].split(" (")[0].split(":")[0]: r for r in out["ingredients"]}
    assert set(rows) == {"rivals", "terms", "shelf trimmed to 6 days"}
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
    (row,) = out["ingredients"]
    probe = row["probe"]
    assert probe["name"] == PROBE
    assert abs(probe["composite"] - probe["base"] - probe["change"]) < 1e-9
    assert abs(probe["change"]) >= float(BITE) and row["bites"]
    assert PROBE in out["criterion"]

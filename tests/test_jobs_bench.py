"""``storebench bench``: the targets table and how an unavailable part is reported
(the figures themselves are measured, never asserted)."""
import sys

from environment import bench


def _figures(**over):
    figures = {
        "engine": {"tool_call_ms_p50": 0.05, "tool_call_ms_p50_by_tool": {"list_orders": 0.4, "sales_report": 0.9},
                   "window_advance_ms_p50": 2.0},
        "anchors": {"steady": {"smart-triage": 0.8}, "full-year": {"smart-triage": 4.0}},
        "calibration": {"wall_s_1_workers": 90.0, "wall_s_2_workers": 50.0},
        "mcp": {"http_ratio": 1.4, "stdio_ratio": 1.2},
        "console": {"ratio": 2.5, "participants": 20, "tool_page_median_ms": 25.0, "noop_median_ms": 10.0},
    }
    figures.update(over)
    return figures


def test_every_target_is_reported_met_when_the_figures_meet_it():
    rows = bench.targets(_figures())
    assert len(rows) == 7
    assert all(row["met"] is True for row in rows), rows


def test_a_missed_target_and_an_unavailable_part_are_named():
    rows = bench.targets(_figures(engine={"tool_call_ms_p50": 0.2, "window_advance_ms_p50": 9.0,
                                          "tool_call_ms_p50_by_tool": {"list_products": 1.7}},
                                  console={"unavailable": "exit 1: no such command"}, calibration={}))
    by = {row["target"].split(" ")[1]: row for row in rows}
    assert by["in-process"]["met"] is False and by["in-process"]["measured"]["slowest_tool_p50_ms"] == 1.7
    assert by["window"]["met"] is False
    console = next(row for row in rows if "console page" in row["target"])
    assert console["met"] is None and console["note"] == "exit 1: no such command"
    calibration = next(row for row in rows if "calibration" in row["target"])
    assert calibration["met"] is None and "not measured" in calibration["note"]


def test_a_failing_subprocess_is_unavailable_with_its_reason():
    failed = bench._run_json([sys.executable, "-c", "import sys; sys.exit('no console here')"], timeout=60)
    assert failed == {"unavailable": "exit 1: no console here"}
    silent = bench._run_json([sys.executable, "-c", "print('not json')"], timeout=60)
    assert silent["unavailable"].startswith("no JSON")
    slow = bench._run_json([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.5)
    assert slow["unavailable"].startswith("timed out")
    assert bench._run_json([sys.executable, "-c", "print('{\"a\": 1}')"], timeout=60) == {"a": 1}

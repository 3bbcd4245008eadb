"""The task suite and its strict loader (spec: ../shared/spec/tasks.md).

The bundled suite must hold the five training tasks (the release's stories, tuned to its
magnitudes) and
the twelve evaluation lenses of Table 4; the CLI must list them; and the loader
must refuse every malformed file with ``<file>: <section.field>: <reason>``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from environment.tasks import PUBLIC_SEEDS, TaskFileError, all_tasks, get_task, load_task, load_task_text, loader
from environment.tasks.model import Channel, EventKind

REPO = Path(__file__).resolve().parents[1]
FILES = REPO / "environment" / "tasks" / "files"

TRAIN = ("cash-crunch", "counter-punch", "final-clearance", "season-flip", "short-runway")

# id: (days, ops/window, trim_stock_days, economics overrides).  The spec's table "The five
# training tasks" gives the release's files; ours keep its stories and horizons but set the
# budgets, the shelf's floor (1 unit a size, not 4) and some terms so that the cells land at
# the release's magnitudes (docs/calibration.md, "The training cells at the release's magnitudes").
TRAIN_SPEC = {
    "cash-crunch": (15, 6, 6.0, {"starting_cash": Decimal("2000"), "deposit": Decimal("1000"),
                                 "return_escalate_days": 5, "ignored_return_fine": Decimal("10")}),
    "counter-punch": (7, 5, 6.0, {"return_escalate_days": 3, "ignored_return_fine": Decimal("0")}),
    "final-clearance": (15, 5, 20.0, {"salvage_rate": Decimal("0.1"),
                                      "holding_cost_per_unit_day": Decimal("0.045"),
                                      "return_escalate_days": 5, "ignored_return_fine": Decimal("25")}),
    "season-flip": (15, 6, 5.0, {}),
    "short-runway": (15, 5, 4.0, {"return_escalate_days": 5, "ignored_return_fine": Decimal("10")}),
}

# id: (days, windows, window_hours, ops/window, events, competition)  -- Table 4
EVAL_SPEC = {
    "steady": (30, 60, 12, 20, 1, False),
    "cold-start": (30, 60, 12, 12, 1, False),
    "supply-shock": (30, 60, 12, 20, 4, False),
    "quality-crisis": (30, 60, 12, 20, 2, False),
    "liquidity": (30, 60, 12, 11, 0, False),
    "peak-season": (30, 60, 12, 16, 2, False),
    "slow-drift": (45, 90, 12, 12, 8, False),
    "black-swan": (30, 60, 12, 20, 2, False),
    "new-entrant": (30, 60, 12, 20, 1, True),
    "trade-war": (35, 70, 12, 20, 3, False),
    "perfect-storm": (35, 70, 12, 20, 3, True),
    "full-year": (365, 365, 24, 12, 0, False),
}


def storebench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "environment", *args], cwd=REPO, capture_output=True, text=True)


# --- the bundled suite -------------------------------------------------------------------


def test_suite_is_exactly_five_training_tasks_and_twelve_lenses():
    assert sorted(t.id for t in all_tasks("train")) == sorted(TRAIN)
    assert sorted(t.id for t in all_tasks("eval")) == sorted(EVAL_SPEC)
    assert len(all_tasks()) == 17
    assert sorted(p.stem for p in (FILES / "train").glob("*.toml")) == sorted(TRAIN)
    assert sorted(p.stem for p in (FILES / "eval").glob("*.toml")) == sorted(EVAL_SPEC)


@pytest.mark.parametrize("task_id", TRAIN)
def test_training_task_has_its_values(task_id):
    days, ops, trim_days, economics = TRAIN_SPEC[task_id]
    t = get_task(task_id)
    assert t.split == "train"
    assert t.start == "2026-08-01T00:00"
    assert (t.horizon_days, t.window_hours, t.windows, t.ops_per_window) == (days, 12, days * 2, ops)
    assert t.listing_cap == 120
    assert t.trim_stock_days == trim_days
    assert t.trim_stock_floor == 1
    assert t.empty_shelf is False
    assert t.economics == economics


def test_training_tasks_without_competition_or_events():
    assert get_task("short-runway").competitors == () and get_task("short-runway").events == ()
    assert get_task("cash-crunch").competitors == ()
    for task_id in ("final-clearance", "season-flip"):
        assert get_task(task_id).competitors == ()
    (event,) = get_task("counter-punch").events  # traffic a little below normal, announced
    assert (event.kind, event.at_days, event.factor, event.channel) == (
        EventKind.DEMAND_MULTIPLIER, 0, 0.9, Channel.ANNOUNCED)


def test_counter_punch_brings_one_discounter_on_day_zero():
    t = get_task("counter-punch")
    assert t.loyal_share == 0.5
    (rival,) = t.competitors
    assert rival.archetype == "discounter"
    assert (rival.entry_at_days, rival.base_pressure, rival.price_index, rival.overlap, rival.volatility) == (
        0, 0.6, 0.85, 0.7, 0.04)


def test_final_clearance_announces_softer_demand_on_day_zero():
    (event,) = get_task("final-clearance").events
    assert event.kind == EventKind.DEMAND_MULTIPLIER
    assert (event.at_days, event.factor, event.channel) == (0, 0.4, Channel.ANNOUNCED)
    assert "well under half its usual level" in event.message and "well under half" in get_task("final-clearance").prompt


def test_cash_crunch_announces_thinner_traffic_on_day_zero():
    (event,) = get_task("cash-crunch").events
    assert (event.kind, event.at_days, event.factor, event.channel) == (
        EventKind.DEMAND_MULTIPLIER, 0, 0.8, Channel.ANNOUNCED)


def test_season_flip_turns_silently_on_day_two():
    events = get_task("season-flip").events
    assert {(e.kind, e.at_days, e.season_tag, e.factor, e.channel) for e in events} == {
        (EventKind.CATEGORY_BIAS, 2, "warm", 0.55, Channel.SILENT),
        (EventKind.CATEGORY_BIAS, 2, "cold", 1.9, Channel.SILENT),
    }


def test_opening_capital_is_three_thousand_for_cash_crunch_and_thirty_thousand_otherwise():
    from environment.api import arm

    assert arm("cash-crunch", 7).econ.opening_capital == 3_000 * 100
    assert arm("short-runway", 7).econ.opening_capital == 30_000 * 100


@pytest.mark.parametrize("task_id", sorted(EVAL_SPEC))
def test_evaluation_lens_matches_table_4(task_id):
    days, windows, hours, ops, n_events, competition = EVAL_SPEC[task_id]
    t = get_task(task_id)
    assert t.split == "eval"
    assert (t.horizon_days, t.windows, t.window_hours, t.ops_per_window) == (days, windows, hours, ops)
    assert len(t.events) == n_events
    assert bool(t.competitors) is competition
    if competition:
        assert len(t.competitors) == 1  # new-entrant: one rival; perfect-storm: one rival among the shocks


def test_lenses_the_paper_describes():
    steady = get_task("steady").events
    assert [(e.kind, e.at_days, e.channel) for e in steady] == [(EventKind.DEMAND_MULTIPLIER, 0, Channel.ANNOUNCED)]

    swan = get_task("black-swan").events
    assert swan[0].kind == EventKind.DEMAND_MULTIPLIER and swan[0].channel == Channel.ANNOUNCED
    assert swan[0].at_days == 0
    crash = swan[1]
    assert (crash.kind, crash.channel, crash.at_days, crash.until_days) == (
        EventKind.MARKET_CRASH, Channel.SILENT, 10, 23)

    war = [e for e in get_task("trade-war").events if e.kind == EventKind.SUPPLY_SHOCK_COUNTRY]
    assert [(e.at_days, e.channel) for e in war] == [(5, Channel.RUMOURED), (9, Channel.ANNOUNCED)]
    assert {e.country for e in war} == {"China"}
    assert war[0].factor * war[1].factor == pytest.approx(1.5)
    assert sum(e.lead_time_days for e in war) == 15

    drift = get_task("slow-drift").events
    assert all(e.channel in (Channel.SILENT, Channel.RUMOURED) for e in drift)
    assert get_task("cold-start").empty_shelf is True


def test_cli_lists_all_seventeen_tasks_with_their_figures():
    proc = storebench("tasks", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["public_seeds"] == [7, 11, 13] == list(PUBLIC_SEEDS)
    rows = {r["id"]: r for r in data["tasks"]}
    assert len(data["tasks"]) == 17 and set(rows) == set(TRAIN) | set(EVAL_SPEC)
    for task_id in TRAIN:
        days, ops, _, _ = TRAIN_SPEC[task_id]
        r = rows[task_id]
        assert (r["split"], r["days"], r["windows"], r["window_hours"], r["ops_per_window"]) == (
            "train", days, days * 2, 12, ops)
        assert r["competition"] is (task_id == "counter-punch")
        assert r["events"] == {"cash-crunch": 1, "counter-punch": 1, "final-clearance": 1, "season-flip": 2}.get(task_id, 0)
    for task_id, (days, windows, hours, ops, n_events, competition) in EVAL_SPEC.items():
        r = rows[task_id]
        assert (r["split"], r["days"], r["windows"], r["window_hours"], r["ops_per_window"], r["events"],
                r["competition"]) == ("eval", days, windows, hours, ops, n_events, competition)
    for r in data["tasks"]:
        assert r["file_hash"] == get_task(r["id"]).file_hash


def test_get_task_refuses_an_unknown_id_and_names_it():
    with pytest.raises(TaskFileError, match="unknown task 'no-such-task'"):
        get_task("no-such-task")


# --- the strict loader ---------------------------------------------------------------------

TASK = """\
[task]
id = "probe"
title = "Probe"
prompt = "You run a store."
"""
SHIFT = """\
[shift]
start = 2026-08-01T00:00:00
horizon_days = 7
window_hours = 12
ops_per_window = 12
"""
STORE = """\
[competition]
loyal_share = 0.5

[[competition.stores]]
id = "rival-1"
name = "Rival"
archetype = "discounter"
entry_at_days = 0
base_pressure = 0.6
price_index = 0.85
volatility = 0.04
"""


def _shift(**changes: str | None) -> str:
    lines = []
    for line in SHIFT.splitlines():
        key = line.split(" = ")[0]
        if key in changes:
            if changes[key] is not None:
                lines.append(f"{key} = {changes[key]}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


BAD = [
    # (case id, file text, field, reason fragment)
    ("unknown-section", TASK + SHIFT + "[shfit]\nhorizon_days = 7\n", "shfit", "unknown section"),
    ("unknown-field", TASK + SHIFT.replace("horizon_days", "horizon_day"), "shift.horizon_day",
     "unknown field (allowed: horizon_days, listing_cap, ops_per_window, start, window_hours)"),
    ("wrong-type", TASK + _shift(horizon_days='"7"'), "shift.horizon_days", "must be an integer"),
    ("negative-horizon", TASK + _shift(horizon_days="-3"), "shift.horizon_days", "must be between 1 and 400"),
    ("zero-ops", TASK + _shift(ops_per_window="0"), "shift.ops_per_window", "must be between 1 and 500"),
    ("window-not-dividing-a-day", TASK + _shift(window_hours="5"), "shift.window_hours", "must divide a day"),
    # horizon_days is an integer and window_hours divides 24, so the only way to write a horizon
    # that is not a whole number of windows is a fractional day count, refused at the field itself.
    ("horizon-not-whole-windows", TASK + _shift(horizon_days="2.5", window_hours="24"), "shift.horizon_days",
     "must be an integer"),
    ("missing-required", TASK + _shift(ops_per_window=None), "shift.ops_per_window", "is required"),
    ("missing-task-title", TASK.replace('title = "Probe"\n', "") + SHIFT, "task.title", "is required"),
    ("bad-timestamp", TASK + _shift(start='"next tuesday"'), "shift.start", "must be a timestamp"),
    ("event-unknown-kind", TASK + SHIFT + '[[events]]\nkind = "meteor"\nat_days = 1\n', "events[0].kind",
     "must be one of"),
    ("event-missing-magnitude", TASK + SHIFT + '[[events]]\nkind = "demand_multiplier"\nat_days = 1\n',
     "events[0].factor", "is required for a demand_multiplier event"),
    ("second-event-missing-magnitude", TASK + SHIFT + '[[events]]\nkind = "demand_multiplier"\nat_days = 3\n'
     'factor = 1.2\n\n[[events]]\nkind = "market_crash"\nat_days = 1\n', "events[1].factor",
     "is required for a market_crash event"),
    ("category-bias-without-target", TASK + SHIFT + '[[events]]\nkind = "category_bias"\nat_days = 1\n'
     "factor = 1.5\n", "events[0].season_tag", "needs season_tag or category"),
    ("rumoured-and-silent", TASK + SHIFT + '[[events]]\nkind = "demand_multiplier"\nat_days = 1\nfactor = 1.5\n'
     'rumor = "Trade press: something."\nannounce = false\n', "events[0].announce", "cannot also be silent"),
    ("until-before-at", TASK + SHIFT + '[[events]]\nkind = "market_crash"\nat_days = 5\nuntil_days = 3\n'
     "factor = 0.5\n", "events[0].until_days", "must be after at_days"),
    ("event-beyond-horizon", TASK + SHIFT + '[[events]]\nkind = "demand_multiplier"\nat_days = 9\nfactor = 1.5\n',
     "events[0].at_days", "beyond the 7-day horizon"),
    ("store-missing-field", TASK + SHIFT + STORE, "competition.stores[0].overlap", "is required"),
    ("store-out-of-range", TASK + SHIFT + STORE + "overlap = 1.5\n", "competition.stores[0].overlap",
     "must be between 0 and 1"),
]


def test_the_base_file_of_the_bad_cases_loads():
    t = load_task_text(TASK + SHIFT, "ok.toml")
    assert (t.id, t.horizon_days, t.windows, t.listing_cap, t.trim_stock_floor, t.loyal_share) == (
        "probe", 7, 14, 120, 4, 1.0)
    t = load_task_text(TASK + SHIFT + STORE + "overlap = 0.7\n", "ok.toml")
    assert t.competitors[0].overlap == 0.7


@pytest.mark.parametrize(("text", "field", "reason"), [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_loader_refuses_a_bad_file_naming_file_field_and_reason(tmp_path, text, field, reason):
    path = tmp_path / "bad-task.toml"
    path.write_text(text)
    with pytest.raises(TaskFileError) as info:
        load_task(path)
    exc = info.value
    message = str(exc)
    assert message.startswith(f"{path}: {field}: "), message
    assert reason in message
    assert exc.details["file"] == str(path)
    assert exc.details["field"] == field
    assert reason in exc.details["reason"]
    assert message == f"{path}: {exc.details['field']}: {exc.details['reason']}"
    assert exc.code == "task_file_invalid"


def test_loader_refuses_invalid_toml_naming_the_file_and_the_line(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text(TASK + SHIFT + "ops_per_window = = 3\n")
    with pytest.raises(TaskFileError) as info:
        load_task(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not valid TOML: ")
    assert "line 10" in message
    assert info.value.details["file"] == str(path)


def test_invalid_toml_details_have_the_same_shape_as_other_refusals():
    with pytest.raises(TaskFileError) as info:
        load_task_text(TASK + "[shift\n", "broken.toml")
    assert {"file", "field", "reason"} <= set(info.value.details)
    assert info.value.details["reason"]


def test_loader_refuses_an_unreadable_file(tmp_path):
    path = tmp_path / "missing.toml"
    with pytest.raises(TaskFileError, match=f"^{path}: cannot read the task file"):
        load_task(path)


def test_channel_follows_from_the_fields():
    text = TASK + SHIFT + """
[[events]]
kind = "demand_multiplier"
at_days = 1
factor = 1.5

[[events]]
kind = "demand_multiplier"
at_days = 2
factor = 1.2
rumor = "Trade press: traffic is said to be picking up."

[[events]]
kind = "market_crash"
at_days = 3
factor = 0.5
announce = false

[[events]]
kind = "market_crash"
at_days = 4
factor = 0.9
announce = true
"""
    events = load_task_text(text, "channels.toml").events
    assert [e.channel for e in events] == [Channel.ANNOUNCED, Channel.RUMOURED, Channel.SILENT, Channel.ANNOUNCED]
    assert events[1].rumor == "Trade press: traffic is said to be picking up."


def test_events_are_ordered_by_time():
    text = TASK + SHIFT + """
[[events]]
kind = "market_crash"
at_days = 5
factor = 0.5

[[events]]
kind = "demand_multiplier"
at_days = 1
factor = 1.5
"""
    assert [e.at_days for e in load_task_text(text).events] == [1, 5]


def test_file_hash_is_the_sha256_of_the_text_and_follows_it(tmp_path):
    source = FILES / "train" / "counter-punch.toml"
    text = source.read_text()
    task = load_task(source)
    assert task.file_hash == "sha256:" + hashlib.sha256(source.read_bytes()).hexdigest()
    assert task.file_hash == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert load_task_text(text, "elsewhere.toml").file_hash == task.file_hash

    copy = tmp_path / "train" / "counter-punch.toml"
    copy.parent.mkdir()
    copy.write_text(text + "\n# a comment changes the file, not the task\n")
    changed = load_task(copy)
    assert changed.file_hash != task.file_hash
    assert changed.file_hash == "sha256:" + hashlib.sha256(copy.read_bytes()).hexdigest()
    assert (changed.id, changed.horizon_days, changed.competitors, changed.split) == (
        task.id, task.horizon_days, task.competitors, "train")


def test_split_follows_the_folder(tmp_path):
    for split, expected in (("train", "train"), ("eval", "eval"), ("elsewhere", "eval")):
        path = tmp_path / split / "probe.toml"
        path.parent.mkdir()
        path.write_text(TASK + SHIFT)
        assert load_task(path).split == expected


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    """A stand-in for the bundled folder, with ``train/`` and ``eval/``; the cache is cleared around it."""
    for split in ("train", "eval"):
        (tmp_path / split).mkdir()
    loader._bundled.cache_clear()
    monkeypatch.setattr(loader, "FILES", tmp_path)
    yield tmp_path
    monkeypatch.undo()
    loader._bundled.cache_clear()


def test_bundle_loads_a_well_named_file(bundle):
    (bundle / "train" / "probe.toml").write_text(TASK + SHIFT)
    assert [(t.id, t.split) for t in all_tasks()] == [("probe", "train")]
    assert get_task("probe").horizon_days == 7


def test_bundle_refuses_a_task_id_that_does_not_match_the_file_name(bundle):
    path = bundle / "eval" / "other-name.toml"
    path.write_text(TASK + SHIFT)
    assert load_task(path).id == "probe"  # the file itself is valid
    with pytest.raises(TaskFileError) as info:
        all_tasks()
    message = str(info.value)
    assert message.startswith(f"{path}: task.id: ")
    assert "'probe'" in message and "'other-name'" in message


def test_bundle_refuses_the_same_id_twice(bundle):
    (bundle / "eval" / "probe.toml").write_text(TASK + SHIFT)
    (bundle / "train" / "probe.toml").write_text(TASK + SHIFT)
    with pytest.raises(TaskFileError, match="task.id: 'probe' is already defined by"):
        get_task("probe")


def test_bundle_refusal_details_name_file_field_and_reason(bundle):
    path = bundle / "eval" / "other-name.toml"
    path.write_text(TASK + SHIFT)
    with pytest.raises(TaskFileError) as info:
        all_tasks()
    assert info.value.details.get("file") == str(path)
    assert info.value.details.get("field") == "task.id"
    assert "must match the file name" in info.value.details.get("reason", "")


def test_bundle_cache_is_restored_after_the_stand_in():
    assert len(all_tasks()) == 17


def test_tasks_list_as_text_has_a_header_and_each_tasks_title():
    proc = storebench("tasks", "list")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[0].split() == ["TASK", "SPLIT", "LENGTH", "WINDOWS", "OPS/WINDOW", "EVENTS",
                                                         "RIVALS", "TITLE"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == set(TRAIN) | set(EVAL_SPEC)
    for task_id in rows:
        assert rows[task_id].endswith(f"  {get_task(task_id).title}")

"""Calibration constants, gates, the calibration file, the CLI and re-grading
(spec: ../shared/spec/calibration.md and environment.md section 6)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest

from environment.calibration import (
    FLAP_MARGIN,
    JUDGMENT_GAP,
    TIE,
    CalibrationError,
    calibrate_cell,
    cell_of,
    check_gates,
    document,
    load_calibration,
    threshold_of,
    write_calibration,
)
from environment.report import svg as report_svg
from environment.suite import PUBLIC_CALIBRATION
from environment.tasks import get_task

REPO = Path(__file__).resolve().parents[1]
D = Decimal
RELEASE_FIELDS = ("seed", "windows_played", "net_assets", "business_raw", "business", "reliability", "on_time_rate",
                  "return_handled_rate", "continuity", "bankrupt", "reward_composite")


def storebench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "environment", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True)


def r2(x: Decimal) -> Decimal:
    return x.quantize(D("0.01"), rounding=ROUND_HALF_EVEN)


def test_constants_are_the_specified_ones():
    assert (TIE, JUDGMENT_GAP, FLAP_MARGIN) == (D("0.02"), D("0.03"), D("0.005"))


# --- threshold_of ------------------------------------------------------------------------------


def ladder(blast: str, rule: str, smart: str, **others: str) -> dict[str, Decimal]:
    out = {"do-nothing": D("0"), "absentee": D("0.1"), "exploiter": D("0.04"),
           "blast-list": D(blast), "rule-based": D(rule), "smart-triage": D(smart)}
    out.update({k.replace("_", "-"): D(v) for k, v in others.items()})
    return out


@pytest.mark.parametrize(("blast", "rule", "smart", "expected"), [
    ("0.60", "0.66", "0.74", "0.70"),       # midway of the top two: 0.70
    ("0.55", "0.6712", "0.7398", "0.71"),   # 0.7055 -> 0.71
    ("0.55", "0.6712", "0.7350", "0.70"),   # 0.7031 -> 0.70
    ("0.76", "0.60", "0.70", "0.73"),       # blast-list can be one of the top two: (0.76 + 0.70) / 2
    ("0.30", "0.8049", "0.55", "0.68"),     # 0.67745 -> 0.68
])
def test_threshold_is_midway_of_the_top_two_rounded_to_two_decimals(blast, rule, smart, expected):
    comp = ladder(blast, rule, smart)
    top = sorted((comp["blast-list"], comp["rule-based"], comp["smart-triage"]), reverse=True)[:2]
    assert top[0] - top[1] > TIE
    assert threshold_of(comp) == D(expected)


@pytest.mark.parametrize(("blast", "rule", "smart", "expected"), [
    ("0.60", "0.72", "0.73", "0.71"),       # within 0.02: 0.01 below the lower one
    ("0.60", "0.72", "0.72", "0.71"),       # exactly equal
    ("0.60", "0.72", "0.74", "0.71"),       # exactly 0.02 apart is still a tie
    ("0.60", "0.74", "0.72", "0.71"),       # whichever judgment anchor is ahead
    ("0.70", "0.71", "0.55", "0.69"),       # blast-list among the top two
])
def test_threshold_tie_rule_is_a_hundredth_below_the_lower_of_the_top_two(blast, rule, smart, expected):
    assert threshold_of(ladder(blast, rule, smart)) == D(expected)


def test_threshold_just_past_the_tie_boundary_is_midway():
    # 0.7401 - 0.72 = 0.0201 > 0.02: midway 0.73005 -> 0.73 (the tie rule would give 0.71)
    assert threshold_of(ladder("0.60", "0.72", "0.7401")) == D("0.73")
    # 0.7399 - 0.72 = 0.0199: tie
    assert threshold_of(ladder("0.60", "0.72", "0.7399")) == D("0.71")


def test_threshold_reads_only_the_honest_trading_anchors():
    base = threshold_of(ladder("0.60", "0.66", "0.74"))
    assert threshold_of(ladder("0.60", "0.66", "0.74", exploiter="0.99", absentee="0.98")) == base


def test_tie_threshold_is_not_rounded_to_cents_like_the_release():
    assert threshold_of(ladder("0.593", "0.701", "0.701")) == D("0.691")
    assert threshold_of(ladder("0.674", "0.712", "0.716")) == D("0.702")


# --- check_gates -------------------------------------------------------------------------------


def hand_cell(seed: int = 7, threshold: float = 0.71, diligence: float = 0.58, **composites: float) -> dict:
    comp = {"do-nothing": 0.0, "absentee": 0.1, "blast-list": 0.60, "rule-based": 0.72, "smart-triage": 0.74,
            "exploiter": 0.04}
    comp.update({k.replace("_", "-"): v for k, v in composites.items()})
    return {"seed": seed, "business_zero_raw": 15000.0, "business_scale": 1500.0, "oracle": "smart-triage",
            "threshold": threshold, "diligence_composite": diligence,
            "anchors": {name: {"business_raw": 0.0, "business_normalized": 0.0, "reward_composite": v,
                               "reliability": 0.0, "continuity": 1.0, "net_assets": 0.0}
                        for name, v in comp.items()}}


def test_a_healthy_cell_passes_all_five_gates():
    cell = hand_cell()
    assert float(threshold_of({k: D(str(a["reward_composite"])) for k, a in cell["anchors"].items()})) == 0.71
    assert check_gates("cash-crunch", cell) == []


@pytest.mark.parametrize(("gate", "seed", "cell"), [
    # rule-based falls below blast-list; smart-triage still clears it widely; threshold midway 0.74/0.60
    ("ordering", 11, hand_cell(11, threshold=0.67, rule_based=0.55)),
    # a judgment anchor that only ties blast-list also fails ordering
    ("ordering", 13, hand_cell(13, threshold=0.67, rule_based=0.60)),
    # judgment clears blast-list by 0.025 < 0.03; threshold 0.71 is 0.005 below blast-list
    ("judgment-gap", 7, hand_cell(7, threshold=0.71, blast_list=0.715)),
    # threshold 0.003 below smart-triage
    ("flap-margin", 13, hand_cell(13, threshold=0.737)),
    # threshold 0.002 above rule-based
    ("flap-margin", 11, hand_cell(11, threshold=0.722)),
    # threshold above every anchor
    ("flap-margin", 7, hand_cell(7, threshold=0.80)),
    # threshold sitting exactly on an anchor
    ("flap-margin", 7, hand_cell(7, threshold=0.72)),
    # the exploiter ties the absentee
    ("exploit-suppression", 11, hand_cell(11, exploiter=0.10)),
    # the exploiter beats the absentee outright
    ("exploit-suppression", 13, hand_cell(13, exploiter=0.35)),
    # diligence alone (ship all, refund all, never buy or reprice) reaches the threshold
    ("diligence", 7, hand_cell(7, diligence=0.71)),
    ("diligence", 11, hand_cell(11, threshold=0.66, diligence=0.68)),
])
def test_a_cell_failing_one_gate_fails_exactly_that_gate_and_names_it(gate, seed, cell):
    failures = check_gates("counter-punch", cell)
    assert {f.gate for f in failures} == {gate}
    for f in failures:
        assert (f.task, f.seed) == ("counter-punch", seed)
        text = str(f)
        assert text.startswith(f"counter-punch seed {seed}: gate {gate} failed: ")


def test_the_judgment_gap_is_measured_against_the_diligence_clerk_when_it_beats_blast_list():
    # blast-list (0.60) is far below, but the clerk who also refunds every return sits
    # 0.025 under the best judgment anchor (0.74), and under the threshold (0.73)
    failures = check_gates("steady", hand_cell(threshold=0.73, diligence=0.715))
    assert [f.gate for f in failures] == ["judgment-gap"]
    assert failures[0].detail == "best judgment anchor 0.74 clears the diligence clerk 0.715 by less than 0.03"
    assert check_gates("steady", hand_cell(threshold=0.73, diligence=0.705)) == []


def test_ordering_names_each_failing_judgment_anchor():
    failures = check_gates("steady", hand_cell(threshold=0.30, rule_based=0.09, smart_triage=0.05,
                                               blast_list=0.08, absentee=0.1))
    ordering = [f for f in failures if f.gate == "ordering"]
    assert len(ordering) == 2
    assert any("rule-based" in f.detail for f in ordering) and any("smart-triage" in f.detail for f in ordering)


def test_gate_boundaries():
    """A judgment gap of exactly 0.03 and a flap margin of exactly 0.005 (above or below) pass."""
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.71, blast_list=0.69))] == []
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.715, rule_based=0.72, smart_triage=0.72))] == []
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.7151, rule_based=0.72, smart_triage=0.72))] == [
        "flap-margin"]
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.605, blast_list=0.60, rule_based=0.61,
                                                       smart_triage=0.65))] == []
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.6049, blast_list=0.60, rule_based=0.61,
                                                       smart_triage=0.65))] == ["flap-margin"]
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.64, blast_list=0.60, smart_triage=0.65,
                                                       rule_based=0.62))] == []
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.61, blast_list=0.60, smart_triage=0.63,
                                                       rule_based=0.62))] == []
    assert [f.gate for f in check_gates("t", hand_cell(threshold=0.61, blast_list=0.60, smart_triage=0.6299,
                                                       rule_based=0.62))] == ["judgment-gap"]
    assert [f.gate for f in check_gates("t", hand_cell(exploiter=0.0999))] == []
    assert [f.gate for f in check_gates("t", hand_cell(diligence=0.7099))] == []


# --- calibrate_cell on a real cell -------------------------------------------------------------


@pytest.fixture(scope="module")
def counter_punch_7() -> dict:
    from environment.world import load_world

    return calibrate_cell(get_task("counter-punch"), 7, load_world())


def test_calibrated_constants_follow_from_the_anchors(counter_punch_7):
    cell = counter_punch_7
    a = cell["anchors"]
    assert set(a) == {"do-nothing", "absentee", "blast-list", "rule-based", "smart-triage", "exploiter"}
    assert cell["seed"] == 7
    raw = {name: D(str(v["business_raw"])) for name, v in a.items()}
    zero = max(raw["do-nothing"], raw["absentee"])
    assert D(str(cell["business_zero_raw"])) == zero
    best = max(raw["rule-based"], raw["smart-triage"])
    assert D(str(cell["business_scale"])) == r2((best - zero) / D("0.70"))
    assert cell["business_scale"] > 0
    assert raw[cell["oracle"]] == best
    assert cell["oracle"] in ("rule-based", "smart-triage")
    assert a["do-nothing"]["reward_composite"] == 0.0
    assert a["absentee"]["reward_composite"] == 0.1
    assert abs(a[cell["oracle"]]["business_normalized"] - 0.70) <= 0.001
    for name, v in a.items():
        assert v["net_assets"] - v["business_raw"] == pytest.approx(30_000, abs=0.005)  # opening capital
        expected = D("0.7") * D(str(v["business_normalized"])) + D("0.2") * D(str(v["reliability"])) \
            + D("0.1") * D(str(v["continuity"]))
        assert abs(D(str(v["reward_composite"])) - expected) <= D("0.000001"), name


def test_calibrated_threshold_follows_the_rules(counter_punch_7):
    cell = counter_punch_7
    comp = {name: D(str(v["reward_composite"])) for name, v in cell["anchors"].items()}
    assert D(str(cell["threshold"])) == threshold_of(comp)
    a, b = sorted((comp["blast-list"], comp["rule-based"], comp["smart-triage"]), reverse=True)[:2]
    threshold = D(str(cell["threshold"]))
    if a - b > TIE:
        assert threshold == r2((a + b) / 2)
    else:  # the release keeps b - 0.01 as is, unrounded
        assert threshold == b - D("0.01")
    assert threshold <= max(a, b)


def test_calibrated_cell_passes_all_gates(counter_punch_7):
    assert check_gates("counter-punch", counter_punch_7) == []


# --- the calibration file ----------------------------------------------------------------------


def test_write_and_load_round_trip(tmp_path):
    cells = {"cash-crunch": {11: hand_cell(11), 7: hand_cell(7)}, "steady": {13: hand_cell(13, threshold=0.7)}}
    doc = document(cells, "sha256:" + "ab" * 32)
    assert list(doc["tasks"]["cash-crunch"]) == ["7", "11"]
    path = tmp_path / "cal.json"
    digest = write_calibration(doc, path)
    data = path.read_bytes()
    assert digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert (tmp_path / "cal.json.sha256").read_text().strip() == digest
    assert not (tmp_path / "cal.json.tmp").exists()
    loaded, loaded_digest = load_calibration(path)
    assert loaded == json.loads(json.dumps(doc)) and loaded_digest == digest
    assert loaded["world_hash"] == "sha256:" + "ab" * 32
    assert cell_of(loaded, "cash-crunch", 11) == hand_cell(11)
    assert cell_of(loaded, "cash-crunch", 13) is None and cell_of(loaded, "nope", 7) is None
    # deterministic bytes: writing the same document again gives the same hash
    assert write_calibration(doc, tmp_path / "again.json") == digest


@pytest.mark.parametrize(("content", "message"), [
    (json.dumps({"world_hash": "x"}), "not a calibration file (no 'tasks' table)"),
    (json.dumps([1, 2]), "not a calibration file (no 'tasks' table)"),
    (json.dumps({"tasks": {"counter-punch": {"7": {"business_zero_raw": 1.0, "threshold": 0.7}}}}),
     "tasks.counter-punch.7.business_scale is missing or not a number"),
    (json.dumps({"tasks": {"counter-punch": {"7": {"business_zero_raw": 1.0, "business_scale": "12",
                                                   "threshold": 0.7}}}}),
     "tasks.counter-punch.7.business_scale is missing or not a number"),
    (json.dumps({"tasks": {"counter-punch": [1]}}), "tasks.counter-punch must map seeds to cells"),
    ("{not json", "not a calibration file (not JSON: "),
    ("", "not a calibration file (not JSON: "),
])
def test_load_calibration_refuses_bad_files_clearly(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CalibrationError) as info:
        load_calibration(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)
    assert info.value.code == "calibration_invalid"


def test_load_calibration_refuses_a_missing_file(tmp_path):
    with pytest.raises(CalibrationError, match="cannot read the calibration file"):
        load_calibration(tmp_path / "absent.json")


# --- the CLI: calibrate ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    folder = tmp_path_factory.mktemp("cal")
    proc = storebench("calibrate", "--tasks", "counter-punch", "--seeds", "7", "11", "--out", folder / "cal.json",
                      "--workers", "2")
    return proc, folder


def test_cli_calibrate_writes_file_hash_report_and_chart(calibrated):
    proc, folder = calibrated
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in progress] == ["[1/2]", "[2/2]"]
    assert all("counter-punch seed" in line for line in progress)
    assert "GATE FAILURE" not in proc.stderr

    doc, digest = load_calibration(folder / "cal.json")
    assert set(doc["tasks"]) == {"counter-punch"} and set(doc["tasks"]["counter-punch"]) == {"7", "11"}
    assert doc["world_hash"].startswith("sha256:")
    assert (folder / "cal.json.sha256").read_text().strip() == digest
    assert digest in proc.stdout
    for seed in (7, 11):
        cell = cell_of(doc, "counter-punch", seed)
        assert cell["seed"] == seed and check_gates("counter-punch", cell) == []

    report = (folder / "cal.report.md").read_text()
    ladder, beside_release = report.split("## Beside the paper")[0], report.split("training calibration")[-1]
    rows = [line for line in ladder.splitlines() if line.startswith("| counter-punch |")]
    assert len(rows) == 1
    release_rows = [line.split("|")[2].strip() for line in beside_release.splitlines()
                    if line.startswith("| counter-punch |")]
    assert release_rows == ["7", "11"]  # our zero and scale beside the release's, per training cell
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert len(cells) == 7
    t7, t11 = (cell_of(doc, "counter-punch", s)["threshold"] for s in (7, 11))
    assert cells[5] == f"{t7:.3f} / {t11:.3f}"
    assert "| task | blast-list | rule-based | smart-triage | exploiter | threshold | oracle |" in report

    root = ET.parse(folder / "cal.ladder.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("counter-punch seed 11 threshold") for t in titles)


def test_the_ladder_chart_spans_the_whole_composite_scales_to_its_box_and_draws_every_anchor(calibrated):
    _proc, folder = calibrated
    doc, _ = load_calibration(folder / "cal.json")
    root = ET.fromstring(report_svg(doc, [{"task": "counter-punch", "seed": 7, "value": 0.99, "kind": "this trial",
                                           "label": "mine"}]))
    width, height = root.get("width"), root.get("height")
    assert root.get("viewBox") == f"0 0 {width} {height}" and "max-width:100%" in root.get("style")
    ticks = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "1.0" in ticks and "0.9" in ticks
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    for anchor in ("blast-list", "rule-based", "smart-triage", "exploiter", "do-nothing", "absentee"):
        assert any(t.startswith(f"counter-punch seed 7 {anchor} ") for t in titles), anchor
        assert anchor in ticks  # keyed
    mark = next(p for p in root.iter("{http://www.w3.org/2000/svg}path") if p.get("transform"))
    assert float(mark.get("transform").split("(")[1].split(",")[0]) <= float(width)  # drawn inside the chart


def test_cli_calibrate_calibrates_the_same_cell_as_the_library(calibrated, counter_punch_7):
    proc, folder = calibrated
    doc, _ = load_calibration(folder / "cal.json")
    assert cell_of(doc, "counter-punch", 7) == json.loads(json.dumps(counter_punch_7))


def test_cli_calibrate_refuses_an_unknown_task(tmp_path):
    proc = storebench("calibrate", "--tasks", "no-such-task", "--seeds", "7", "--out", tmp_path / "cal.json")
    assert proc.returncode == 2
    assert "no-such-task" in proc.stderr
    assert not (tmp_path / "cal.json").exists()


def test_cli_calibrate_creates_a_missing_output_folder(tmp_path):
    out = tmp_path / "new" / "deeper" / "cal.json"
    proc = storebench("calibrate", "--tasks", "counter-punch", "--seeds", "7", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and out.with_name("cal.json.sha256").exists()


def test_cli_calibrate_refuses_a_folder_as_output_before_any_work(tmp_path):
    proc = storebench("calibrate", "--tasks", "counter-punch", "--seeds", "7", "--out", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"storebench: --out {tmp_path} is a folder; name the file to write, e.g. " \
                                  f"{tmp_path}/public.json"
    assert "[1/1]" not in proc.stderr


def test_cli_calibrate_exits_1_naming_the_cell_and_gate_on_a_gate_failure(tmp_path, monkeypatch, capsys):
    """In-process with one worker, the cell can be swapped for a hand-made one that fails a gate."""
    from environment import cli, orchestration

    monkeypatch.setattr(orchestration, "calibrate_cell", lambda task, seed, world=None: hand_cell(seed, exploiter=0.2))
    code = cli.main(["calibrate", "--tasks", "counter-punch", "--seeds", "13", "--out", str(tmp_path / "cal.json"),
                     "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert "GATE FAILURE: counter-punch seed 13: gate exploit-suppression failed" in err
    assert not (tmp_path / "cal.json").exists()  # kept beside it, for inspection (tests/test_cli_qa_calibrate.py)


# --- the CLI: run and regrade ------------------------------------------------------------------


@pytest.fixture(scope="module")
def trial(calibrated) -> tuple[Path, Path]:
    proc, folder = calibrated
    assert proc.returncode == 0, proc.stderr
    out = folder / "t1"
    run = storebench("run", "--task", "counter-punch", "--seed", "7", "--policy", "smart-triage", "--out", out,
                     "--calibration", folder / "cal.json")
    assert run.returncode == 0, run.stderr
    return out, folder / "cal.json"


@pytest.fixture
def copy_of_trial(trial, tmp_path) -> tuple[Path, Path]:
    out, calibration = trial
    copy = tmp_path / "trial"
    shutil.copytree(out, copy)
    # Drop the per-file checksums (as in a manifest written before them), so these tests reach
    # the ledger and score checks; with them any edit is refused first (tests/test_regrade_release.py).
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.pop("files")
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return copy, calibration


def regrade_json(folder: Path, calibration: Path) -> tuple[int, dict, str]:
    proc = storebench("regrade", folder, "--calibration", calibration, "--json")
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def test_run_writes_the_trial_folder(trial):
    out, calibration = trial
    assert {p.name for p in out.iterdir()} == {"score.json", "summary.json", "actions.jsonl", "ledger.jsonl",
                                               "windows.jsonl", "events.jsonl", "manifest.json",
                                               "observations.jsonl.gz"}
    score = json.loads((out / "score.json").read_text())
    assert set(RELEASE_FIELDS) <= set(score)
    assert score["seed"] == 7 and score["task"] == "counter-punch"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["calibration_hash"] == load_calibration(calibration)[1]
    assert manifest["task_file_hash"] == get_task("counter-punch").file_hash


def test_regrade_reproduces_an_untouched_trial(trial):
    out, calibration = trial
    code, data, err = regrade_json(out, calibration)
    assert code == 0, err
    assert data["all_reproduce"] is True
    (t,) = data["trials"]
    assert t["reproduces"] is True and t["problems"] == []
    assert (t["task"], t["seed"]) == ("counter-punch", 7)
    score = json.loads((out / "score.json").read_text())
    assert t["reward_composite"] == score["reward_composite"]
    threshold = cell_of(load_calibration(calibration)[0], "counter-punch", 7)["threshold"]
    assert t["pass"] is (score["reward_composite"] >= threshold)


def _edit_score(folder: Path, **changes) -> None:
    score = json.loads((folder / "score.json").read_text())
    score.update(changes)
    (folder / "score.json").write_text(json.dumps(score, indent=2))


def test_regrade_catches_tampered_net_assets(copy_of_trial):
    folder, calibration = copy_of_trial
    score = json.loads((folder / "score.json").read_text())
    _edit_score(folder, net_assets=score["net_assets"] + 500)
    code, data, _ = regrade_json(folder, calibration)
    assert code == 1 and data["all_reproduce"] is False
    problems = data["trials"][0]["problems"]
    assert any(p.startswith("net_assets:") for p in problems), problems


def test_regrade_catches_a_tampered_composite(copy_of_trial):
    folder, calibration = copy_of_trial
    score = json.loads((folder / "score.json").read_text())
    _edit_score(folder, reward_composite=round(score["reward_composite"] + 0.05, 6))
    code, data, _ = regrade_json(folder, calibration)
    assert code == 1
    problems = data["trials"][0]["problems"]
    assert any(p.startswith("reward_composite:") for p in problems), problems


def test_regrade_catches_a_line_deleted_from_the_ledger(copy_of_trial):
    folder, calibration = copy_of_trial
    lines = (folder / "ledger.jsonl").read_text().splitlines(keepends=True)
    victim = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] not in (
        "opening_cash", "opening_deposit") and json.loads(line)["amount_cents"] != 0)
    (folder / "ledger.jsonl").write_text("".join(lines[:victim] + lines[victim + 1:]))
    code, data, _ = regrade_json(folder, calibration)
    assert code == 1
    problems = data["trials"][0]["problems"]
    assert any(p.startswith("net_assets:") and "the ledger gives" in p for p in problems), problems
    assert any(p.startswith("business_raw:") for p in problems), problems


def test_regrade_of_a_trial_without_ledger_grades_to_zero(copy_of_trial):
    folder, calibration = copy_of_trial
    (folder / "ledger.jsonl").unlink()
    code, data, _ = regrade_json(folder, calibration)
    assert code == 1
    (problem,) = data["trials"][0]["problems"]
    assert "ledger.jsonl is missing" in problem and "grades to zero" in problem


def test_regrade_of_a_trial_without_ledger_reports_a_zero_grade(copy_of_trial):
    folder, calibration = copy_of_trial
    (folder / "ledger.jsonl").unlink()
    _, data, _ = regrade_json(folder, calibration)
    t = data["trials"][0]
    assert t["reward_composite"] == 0.0 and t["pass"] is False


def test_regrade_refuses_a_calibration_whose_hash_does_not_match_the_manifest(copy_of_trial, tmp_path):
    folder, calibration = copy_of_trial
    doc, _ = load_calibration(calibration)
    doc["tasks"]["counter-punch"]["7"]["threshold"] = 0.5
    other = tmp_path / "other.json"
    write_calibration(doc, other)
    code, data, _ = regrade_json(folder, other)
    assert code == 1
    assert any("calibration" in p and "hash" in p for p in data["trials"][0]["problems"])


@pytest.mark.parametrize("keep_manifest", [True, False], ids=["with-manifest", "release-folder"])
def test_regrade_accepts_a_release_layout_score(copy_of_trial, keep_manifest):
    folder, calibration = copy_of_trial
    score = json.loads((folder / "score.json").read_text())
    (folder / "score.json").write_text(json.dumps({k: score[k] for k in RELEASE_FIELDS}, indent=2))
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["task"] == "counter-punch"
    if not keep_manifest:
        (folder / "manifest.json").unlink()
    code, data, err = regrade_json(folder, calibration)
    assert code == 0, (data, err)
    t = data["trials"][0]
    assert t["reproduces"] is True and t["task"] == "counter-punch" and t["seed"] == 7
    assert t["reward_composite"] == score["reward_composite"]


def test_a_release_layout_score_is_still_checked(copy_of_trial):
    folder, calibration = copy_of_trial
    score = json.loads((folder / "score.json").read_text())
    release = {k: score[k] for k in RELEASE_FIELDS}
    release["business"] = round(score["business"] + 0.1, 6)
    (folder / "score.json").write_text(json.dumps(release))
    code, data, _ = regrade_json(folder, calibration)
    assert code == 1
    assert any(p.startswith("business:") for p in data["trials"][0]["problems"])


def test_a_cell_with_only_zero_scale_and_threshold_is_enough(calibrated, tmp_path):
    proc, folder = calibrated
    assert proc.returncode == 0, proc.stderr
    full, _ = load_calibration(folder / "cal.json")
    cell = cell_of(full, "counter-punch", 7)
    minimal = {"tasks": {"counter-punch": {"7": {k: cell[k] for k in (
        "business_zero_raw", "business_scale", "threshold")}}}}
    path = tmp_path / "minimal.json"
    write_calibration(minimal, path)
    out = tmp_path / "t-min"
    run = storebench("run", "--task", "counter-punch", "--seed", "7", "--policy", "rule-based", "--out", out,
                     "--calibration", path, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["threshold"] == cell["threshold"]
    assert json.loads((out / "summary.json").read_text())["calibration"] == "calibration file"
    code, data, err = regrade_json(out, path)
    assert code == 0, (data, err)
    assert data["trials"][0]["reproduces"] is True
    # the same trial against another file (same constants, different hash) is refused
    code, data, _ = regrade_json(out, folder / "cal.json")
    assert code == 1 and any("calibration hash" in p for p in data["trials"][0]["problems"])


def test_regrade_refuses_a_trial_for_a_cell_the_calibration_lacks(copy_of_trial, tmp_path):
    folder, calibration = copy_of_trial
    doc, _ = load_calibration(calibration)
    del doc["tasks"]["counter-punch"]["7"]
    other = tmp_path / "no-seed-7.json"
    write_calibration(doc, other)
    code, data, _ = regrade_json(folder, other)
    assert code == 1
    assert any("no calibration cell for task 'counter-punch' seed 7" in p for p in data["trials"][0]["problems"])


def test_regrade_with_a_bad_calibration_file_exits_2(trial, tmp_path):
    out, _ = trial
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    proc = storebench("regrade", out, "--calibration", bad)
    assert proc.returncode == 2
    assert "no 'tasks' table" in proc.stderr


def test_run_refuses_a_non_empty_output_folder(trial, calibrated):
    out, calibration = trial
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = storebench("run", "--task", "counter-punch", "--seed", "7", "--policy", "absentee", "--out", out,
                      "--calibration", calibration)
    assert proc.returncode == 2
    assert f"{out} already holds files" in proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in out.parent.iterdir() if ".partial-" in p.name]


def test_run_refuses_an_unknown_policy(tmp_path):
    proc = storebench("run", "--task", "counter-punch", "--seed", "7", "--policy", "oracle-of-delphi", "--out",
                      tmp_path / "t")
    assert proc.returncode == 2
    assert "unknown policy 'oracle-of-delphi'" in proc.stderr
    assert not (tmp_path / "t").exists()


# --- the shipped calibration files ------------------------------------------------------

SHIPPED = Path(__file__).resolve().parents[1] / "calibration"


def test_shipped_public_calibration_covers_every_task_on_the_public_seeds_and_passes_the_gates():
    doc, digest = load_calibration(SHIPPED / "public.json")
    assert (SHIPPED / "public.json.sha256").read_text().strip() == digest
    from environment.tasks import all_tasks

    assert set(doc["tasks"]) == {t.id for t in all_tasks()}
    for task_id, seeds in doc["tasks"].items():
        assert set(seeds) == {"7", "11", "13"}
        for cell in seeds.values():
            assert check_gates(task_id, cell) == []


def _shipped_cells(split: str | None = None):
    from environment.tasks import all_tasks

    doc, _ = load_calibration(SHIPPED / "public.json")
    wanted = {t.id for t in all_tasks() if split is None or t.split == split}
    return [(task_id, cell) for task_id, seeds in sorted(doc["tasks"].items()) if task_id in wanted
            for cell in seeds.values()]


def _composite(cell, anchor):
    return Decimal(str(cell["anchors"][anchor]["reward_composite"]))


def test_shipped_thresholds_fall_within_the_papers_span():
    outside = [(t, c["seed"], c["threshold"]) for t, c in _shipped_cells()
               if not Decimal("0.43") <= Decimal(str(c["threshold"])) <= Decimal("0.76")]
    assert outside == []


def test_smart_triage_passes_32_to_35_of_the_36_evaluation_cells_and_rule_based_fewer():
    cells = _shipped_cells("eval")
    assert len(cells) == 36  # 12 lenses x 3 seeds
    passed = [c for _t, c in cells if _composite(c, "smart-triage") >= Decimal(str(c["threshold"]))]
    assert 32 <= len(passed) <= 35  # the paper: 97%
    rule = [c for _t, c in cells if _composite(c, "rule-based") >= Decimal(str(c["threshold"]))]
    assert 2 <= len(rule) <= 8  # the paper: 12%


def test_diligence_alone_never_reaches_the_threshold_on_a_shipped_cell():
    """The fifth gate, read from the shipped file: the clerk who ships all, refunds all and never
    buys or reprices stays below the pass bar everywhere."""
    assert [(t, c["seed"]) for t, c in _shipped_cells()
            if Decimal(str(c["diligence_composite"])) >= Decimal(str(c["threshold"]))] == []


def test_budgets_bind_so_judgment_anchors_are_not_perfectly_reliable():
    """The must-do work outruns the budget on busy windows (and on cold-start the live listings
    of empty sizes take orders nobody can ship): the judgment anchors land between 0.5 and 0.95,
    give or take the cells docs/calibration.md names, each within a hundredth of the band (cold-start 13
    smart-triage 0.951, new-entrant 11 rule-based 0.951, perfect-storm 11 rule-based 0.959;
    counter-punch 13, both anchors 0.494, on the training cells' tight budgets)."""
    rel = [c["anchors"][a]["reliability"] for _t, c in _shipped_cells() for a in ("rule-based", "smart-triage")]
    assert 0.49 <= min(rel) and max(rel) < 0.96
    assert sum(r > 0.95 for r in rel) <= 3 and sum(r < 0.5 for r in rel) <= 2


def test_rule_based_is_the_oracle_on_some_cells_and_smart_triage_is_not_pinned():
    cells = _shipped_cells("eval")
    assert 0 < sum(c["oracle"] == "rule-based" for _t, c in cells) < len(cells)
    values = [_composite(c, "smart-triage") for _t, c in cells]
    assert max(values.count(v) for v in values) <= len(cells) // 2


def test_blast_list_never_passes_and_the_exploiter_averages_below_six_hundredths():
    cells = _shipped_cells()
    assert [t for t, c in cells if _composite(c, "blast-list") >= Decimal(str(c["threshold"]))] == []
    assert sum(_composite(c, "exploiter") for _t, c in cells) / len(cells) < Decimal("0.06")


def test_absentee_and_do_nothing_sit_at_the_bottom_of_every_shipped_cell():
    for _t, c in _shipped_cells():
        assert (_composite(c, "absentee"), _composite(c, "do-nothing")) == (Decimal("0.1"), Decimal("0"))


def test_held_out_seeds_stay_out_of_the_repository_and_the_public_file(tmp_path, monkeypatch):
    """The held-out list and calibration live where STOREBENCH_HELDOUT points, never in git."""
    import subprocess

    from environment.tasks import HELDOUT_ENV, PUBLIC_SEEDS, held_out_seeds

    monkeypatch.delenv(HELDOUT_ENV, raising=False)
    assert held_out_seeds() == ()
    (tmp_path / "seeds.txt").write_text("# kept back\n4242\n\n977 # second\n")
    monkeypatch.setenv(HELDOUT_ENV, str(tmp_path))
    seeds = held_out_seeds()
    assert seeds == (4242, 977)
    public, _ = load_calibration(SHIPPED / "public.json")
    assert {s for cells in public["tasks"].values() for s in cells} == {str(s) for s in PUBLIC_SEEDS}
    tracked = subprocess.run(["git", "ls-files", "calibration"], cwd=SHIPPED.parent, capture_output=True,
                             text=True, check=True).stdout.split()
    assert tracked and not [p for p in tracked if "held-out" in p]


def test_a_bad_held_out_seed_list_is_refused_naming_the_line(tmp_path, monkeypatch):
    from environment.tasks import HELDOUT_ENV, held_out_seeds
    from environment.tasks.heldout import HeldOutError

    monkeypatch.setenv(HELDOUT_ENV, str(tmp_path))
    with pytest.raises(HeldOutError, match="cannot be read"):
        held_out_seeds()
    (tmp_path / "seeds.txt").write_text("12\nseven\n")
    with pytest.raises(HeldOutError, match="line 2: 'seven' is not a seed"):
        held_out_seeds()


@pytest.mark.parametrize("task_id,seed", [("counter-punch", 11), ("short-runway", 13)])
def test_shipped_cells_match_what_the_anchors_play_today(task_id, seed):
    """The shipped file must be regenerated whenever the engine or an anchor changes."""
    from environment.tasks import get_task
    from environment.world import load_world

    doc, _ = load_calibration(SHIPPED / "public.json")
    assert calibrate_cell(get_task(task_id), seed, load_world()) == doc["tasks"][task_id][str(seed)]


def test_the_release_volume_share_is_read_back_from_its_blast_list_composite():
    """cash-crunch seed 7: blast-list 0.630 in the release; at reliability 0.45 its business is
    (0.630 - 0.1 - 0.09) / 0.7 = 0.6286, which is 0.898 of the judgment anchor's 0.70."""
    from environment.paper import release_volume_share

    low, high = release_volume_share("cash-crunch", 0)
    assert round(low, 3) == 0.898 and round(high, 3) == 0.922  # 0.39: (0.630 - 0.1 - 0.078) / 0.49


def test_the_report_puts_our_volume_share_beside_the_releases():
    from environment.report import beside_release, volume_share

    cell = {"business_zero_raw": 1000.0, "business_scale": 2000.0,
            "anchors": {"blast-list": {"business_raw": 1700.0}, "rule-based": {"business_raw": 2400.0},
                        "smart-triage": {"business_raw": 1500.0}}}
    assert volume_share(cell) == 0.5  # 700 of the better judgment anchor's 1,400
    row = next(line for line in beside_release({"tasks": {"cash-crunch": {"7": cell}}}).splitlines()
               if line.startswith("| cash-crunch | 7 |"))
    assert row.endswith("| 0.50 | 0.90 to 0.92 |")


def test_a_file_of_held_out_seeds_says_which_cells_the_release_calibrated():
    from environment.report import beside_release

    assert beside_release({"tasks": {"cash-crunch": {"99": {}}, "steady": {"7": {}}}}) == (
        "Training cells beside the release's calibration: the release calibrated cash-crunch, counter-punch, "
        "final-clearance, season-flip, short-runway on seeds 7, 11, 13, and this file holds none of those cells, so "
        "there is nothing to set beside it.")


def test_regrade_grades_a_folder_of_this_engine_without_its_manifest_to_zero(copy_of_trial):
    """Its checksums live in the manifest: without one, any ledger would do (a forged one with
    a matching score.json passed this way)."""
    folder, calibration = copy_of_trial
    (folder / "manifest.json").unlink()
    code, data, _ = regrade_json(folder, calibration)
    assert code == 1
    (t,) = data["trials"]
    assert (t["task"], t["seed"], t["reward_composite"], t["pass"]) == ("counter-punch", 7, 0.0, False)
    assert t["problems"][0].startswith("manifest.json is missing")


def test_regrade_of_a_path_that_is_no_folder_is_the_callers_mistake(trial, tmp_path):
    out, calibration = trial
    proc = storebench("regrade", out, tmp_path / "nowhere", "--calibration", calibration)
    assert proc.returncode == 2 and proc.stdout == ""  # an argument error, not a trial that fails to reproduce
    assert proc.stderr == (f"storebench: {tmp_path / 'nowhere'} is not a folder: give trial folders (for a batch's "
                           "output, DIR/*); nothing was checked\n")


def test_replay_names_every_path_that_is_no_folder(trial, tmp_path):
    out, _calibration = trial
    proc = storebench("replay", tmp_path / "a", out, tmp_path / "b")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"storebench: 2 of the paths ({tmp_path / 'a'}, {tmp_path / 'b'}) are not folders: give "
                           "trial folders (for a batch's output, DIR/*); nothing was checked\n")


def test_a_report_of_training_cells_only_has_no_table6_deviation(counter_punch_7):
    from environment.report import beside_paper

    text = beside_paper({"tasks": {"counter-punch": {"7": counter_punch_7}}})
    assert "nan" not in text and "no evaluation lens of Table 6 was calibrated" in text


def test_regrade_does_not_offer_leaving_out_the_calibration_it_needs(trial, tmp_path):
    out, _calibration = trial
    proc = storebench("regrade", out, "--calibration", tmp_path / "nope.json")
    assert proc.returncode == 2
    assert proc.stderr == (f"storebench: {tmp_path / 'nope.json'}: cannot read the calibration file (No such file or "
                           f"directory); give a file written by `storebench calibrate` (the shipped one is "
                           f"{PUBLIC_CALIBRATION})\n")

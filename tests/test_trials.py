"""Trial folders: written whole, replayed byte for byte, analysed without a model,
and produced in batches."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from environment.analyze import analyze
from environment.anchors import ANCHORS
from environment.artifacts import ArtifactError
from environment.calibration import load_calibration
from environment.replay import replay
from environment.trial import read_actions, run_trial

REPO = Path(__file__).resolve().parents[1]
CALIBRATION = REPO / "calibration" / "public.json"


def storebench(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "environment", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True)


@pytest.fixture(scope="module")
def calibration():
    return load_calibration(CALIBRATION)


@pytest.fixture(scope="module")
def anchor_trials(tmp_path_factory, calibration):
    doc, digest = calibration
    root = tmp_path_factory.mktemp("anchors")
    for name in ANCHORS:
        run_trial("counter-punch", 7, root / name, policy=name, calibration=doc, calibration_hash=digest)
    return root


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("name", list(ANCHORS))
def test_every_anchor_trial_replays_exactly(anchor_trials, name):
    result = replay(anchor_trials / name)
    assert result.matches, result.problems


def test_a_trial_folder_holds_every_artifact(anchor_trials):
    folder = anchor_trials / "smart-triage"
    names = {p.name for p in folder.iterdir()}
    assert {"score.json", "summary.json", "actions.jsonl", "ledger.jsonl", "windows.jsonl", "events.jsonl",
            "observations.jsonl.gz", "manifest.json"} <= names
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["calibration_hash"] == CALIBRATION.with_name("public.json.sha256").read_text().strip()
    assert manifest["world_hash"].startswith("sha256:") and manifest["task_file_hash"].startswith("sha256:")
    observations = gzip.decompress((folder / "observations.jsonl.gz").read_bytes()).splitlines()
    actions = (folder / "actions.jsonl").read_text().splitlines()
    assert len(observations) == len(actions)
    assert json.loads(observations[0])["result"].startswith("2026-08-01 00:00 UTC | window 1 of 14")
    no_folder_left = [p for p in folder.parent.iterdir() if p.name.startswith(".")]
    assert no_folder_left == []  # the temporary folder was renamed into place


def test_replay_catches_a_tampered_ledger(anchor_trials, tmp_path):
    folder = _copy(anchor_trials / "rule-based", tmp_path / "t")
    lines = (folder / "ledger.jsonl").read_text().splitlines()
    entry = json.loads(lines[40])
    entry["amount_cents"] += 1
    lines[40] = json.dumps(entry, separators=(",", ":"))
    (folder / "ledger.jsonl").write_text("\n".join(lines) + "\n")
    result = replay(folder)
    assert not result.matches and any("ledger differs from entry 41" in p for p in result.problems)


def test_replay_catches_a_tampered_action_log(anchor_trials, tmp_path):
    folder = _copy(anchor_trials / "smart-triage", tmp_path / "t")
    lines = (folder / "actions.jsonl").read_text().splitlines()
    ship = next(i for i, line in enumerate(lines) if '"fulfill_order"' in line)
    del lines[ship]
    (folder / "actions.jsonl").write_text("\n".join(lines) + "\n")
    result = replay(folder)
    assert not result.matches
    assert any(p.startswith("ledger differs") for p in result.problems)


def test_replay_catches_a_tampered_observation(anchor_trials, tmp_path):
    folder = _copy(anchor_trials / "blast-list", tmp_path / "t")
    path = folder / "observations.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    lines[3] = lines[3].replace("window", "windoe", 1)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    result = replay(folder)
    assert result.problems == ["observations.jsonl.gz does not match its checksum in manifest.json: the file was "
                               "changed after the trial was written",
                               "observation 4 differs from the recorded tool result"]


def test_cli_replay_exit_codes(anchor_trials, tmp_path):
    good = storebench("replay", anchor_trials / "absentee", "--json")
    assert good.returncode == 0 and json.loads(good.stdout)["all_match"] is True
    folder = _copy(anchor_trials / "absentee", tmp_path / "t")
    (folder / "ledger.jsonl").write_text("")
    bad = storebench("replay", folder)
    assert bad.returncode == 1 and "DOES NOT REPLAY" in bad.stdout


def test_analysis_of_the_exploiter(anchor_trials):
    report = analyze(anchor_trials / "exploiter")
    assert report["quit_before_horizon"] is True
    assert report["never_restocked"] is True
    # its partial refunds come windows after it read the returns, when they have escalated: each call
    # is refused (return_closed), so none is a partial refund that escalated (see test_qa_explorer_cli)
    assert report["partial_refunds_that_escalated"]["count"] == 0
    # counter-punch has 14 windows of 5 operations: the catalogue spends the first ones to the last
    # operation, then the exploiter ends a window with operations left before it quits after 4
    assert report["windows_ended_early"]["count"] >= 1


def test_cli_analysis_reads_as_text(anchor_trials):
    proc = storebench("analyze", anchor_trials / "exploiter")
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert lines["quit before horizon"] == "yes"
    assert re.fullmatch(r"\d+ \(e\.g\. window \d+, operations_left \d+(; window \d+, operations_left \d+)*\)",
                        lines["windows ended early"]), lines["windows ended early"]
    assert "{" not in proc.stdout and "[" not in proc.stdout


def test_analysis_of_smart_triage_finds_no_quitting_or_skipping(anchor_trials):
    report = analyze(anchor_trials / "smart-triage")
    assert report["quit_before_horizon"] is False
    assert report["windows_skipped"]["count"] == 0
    assert report["writes_on_ids_never_read"]["count"] == 0
    assert report["partial_refunds_that_escalated"]["count"] == 0


def test_analysis_sees_writes_on_stale_reads(tmp_path, calibration):
    doc, digest = calibration
    from environment.api import arm

    ep = arm("short-runway", 7)
    order = ep.call("list_orders", {"page_size": 1}).data["rows"][0]["order_id"]
    actions = [{"tool": "list_orders", "arguments": {"page_size": 1}}] + [
        {"tool": "end_window", "arguments": {}}] * 2 + [{"tool": "get_order", "arguments": {"order_id": order}},
                                                       {"tool": "cancel_order", "arguments": {"order_id": "ORD-1"}}]
    out = tmp_path / "stale"
    run_trial("short-runway", 7, out, actions=actions, calibration=doc, calibration_hash=digest)
    report = analyze(out)
    assert report["writes_on_ids_never_read"]["count"] == 1
    assert report["quit_before_horizon"] is True
    assert replay(out).matches


def test_cli_batch_writes_one_folder_per_cell(tmp_path):
    proc = storebench("batch", "--tasks", "counter-punch", "--seeds", 7, 11, "--policy", "absentee", "--out",
                      tmp_path / "b", "--workers", 2, "--calibration", CALIBRATION, "--json")
    assert proc.returncode == 0, proc.stderr
    folders = sorted(p.name for p in (tmp_path / "b").iterdir())
    assert folders == ["counter-punch-11-absentee", "counter-punch-7-absentee"]
    assert "[2/2]" in proc.stderr
    assert json.loads(proc.stdout)["trials"] == 2
    for name in folders:
        assert replay(tmp_path / "b" / name).matches
    again = storebench("batch", "--tasks", "counter-punch", "--seeds", 7, "--policy", "absentee", "--out",
                       tmp_path / "b")
    assert again.returncode == 2 and "already exist" in again.stderr


def test_read_actions_names_the_line_of_a_malformed_log(tmp_path):
    log = tmp_path / "actions.jsonl"
    log.write_text('{"tool": "end_window", "arguments": {}}\n["end_window"]\n')
    with pytest.raises(ArtifactError, match=re.escape(f"{log} line 2 is not a recorded call (an object with a 'tool')")):
        read_actions(log)


def test_read_actions_of_a_missing_log_says_what_to_give(tmp_path):
    with pytest.raises(ArtifactError, match=re.escape(f"{tmp_path / 'gone.jsonl'} is missing: give the actions.jsonl")):
        read_actions(tmp_path / "gone.jsonl")


def test_a_trial_says_which_gates_its_cell_calibrated_on_the_spot_fails(tmp_path):
    """The practice store (three days, nothing reordered lands) is calibrated on the spot: shipping
    everything outscores both judgment anchors there, and the trial's result says so."""
    data = run_trial("practice", 1, tmp_path / "t", policy="blast-list", calibration=None)
    assert data["calibration"] == "calibrated for this cell on the spot" and data["pass"]
    assert [g.split(":")[0] for g in data["gates_failed"]] == ["ordering", "ordering", "judgment-gap"]


def test_a_trial_of_a_calibration_files_cell_fails_no_gate(tmp_path):
    calibration, _digest = load_calibration(Path(__file__).resolve().parent.parent / "calibration" / "public.json")
    assert run_trial("steady", 7, tmp_path / "t", policy="blast-list", calibration=calibration)["gates_failed"] == []

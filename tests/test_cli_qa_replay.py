"""``storebench replay`` and ``regrade`` after QA: replay checks every file the manifest lists
against its checksum (the code regrade uses) and names the file; a folder holding trial folders,
and a folder whose manifest is not JSON, get a clear line from both."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from environment.calibration import load_calibration
from environment.replay import replay
from environment.trial import run_trial
from mcp_client.cli import main

REPO = Path(__file__).resolve().parent.parent
CALIBRATION = REPO / "calibration" / "public.json"
RELEASE = sorted((REPO / "fixtures" / "release-trajectories").iterdir())
CHANGED = "{} does not match its checksum in manifest.json: the file was changed after the trial was written"


@pytest.fixture(scope="module")
def trial(tmp_path_factory) -> Path:
    doc, digest = load_calibration(CALIBRATION)
    out = tmp_path_factory.mktemp("replay") / "steady-7-rule-based"
    run_trial("steady", 7, out, policy="rule-based", calibration=doc, calibration_hash=digest)
    return out


@pytest.fixture
def copy(trial, tmp_path) -> Path:
    return shutil.copytree(trial, tmp_path / trial.name)


def run(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_untouched_trial_replays_exactly(trial):
    result = replay(trial)
    assert (result.matches, result.problems, result.notes) == (True, [], [])


def test_replay_names_a_deleted_observation_stream(copy, capsys):
    (copy / "observations.jsonl.gz").unlink()
    code, out, _err = run(capsys, "replay", copy)
    assert code == 1
    assert out.splitlines()[1:] == ["    observations.jsonl.gz is missing: manifest.json lists it with its checksum"]


def test_replay_names_an_edited_windows_file(copy):
    path = copy / "windows.jsonl"
    path.write_text(path.read_text().replace('"window":1', '"window":2', 1))
    assert replay(copy).problems[0] == CHANGED.format("windows.jsonl")


def test_replay_rederives_the_windows_file_and_names_the_first_line_that_differs(copy):
    path = copy / "windows.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    row = json.loads(lines[2])
    row["cash_cents"] += 1
    lines[2] = json.dumps(row, separators=(",", ":"), sort_keys=True) + "\n"
    path.write_text("".join(lines))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.pop("files")  # as if the forger rewrote the checksums too
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert replay(copy).problems == [f"windows.jsonl differs from the replay from line 3 ({len(lines)} lines "
                                     f"recorded, {len(lines)} replayed)"]


def test_replay_names_an_events_file_with_an_extra_line(copy):
    with (copy / "events.jsonl").open("a") as fh:
        fh.write('{"kind":"invented"}\n')
    problems = replay(copy).problems
    assert problems[0] == CHANGED.format("events.jsonl")
    assert problems[1].startswith("events.jsonl differs from the replay from line ")


def test_replay_names_a_relabelled_summary(copy):
    path = copy / "summary.json"
    path.write_text(path.read_text().replace('"policy": "rule-based"', '"policy": "smart-triage"'))
    assert replay(copy).problems == [CHANGED.format("summary.json")]


def test_replay_of_a_manifest_without_checksums_says_what_it_could_not_check(copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.pop("files")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    (copy / "observations.jsonl.gz").unlink()
    result = replay(copy)
    assert result.matches
    assert result.notes == ["manifest.json records no file checksums (written before they were kept), so "
                            "summary.json was not checked",
                            "observations.jsonl.gz is absent, so the tool results were not compared"]


def test_replay_names_a_truncated_observation_stream(copy):
    path = copy / "observations.jsonl.gz"
    path.write_bytes(path.read_bytes()[:40])
    problems = replay(copy).problems
    assert problems[0] == CHANGED.format("observations.jsonl.gz")
    assert problems[1].startswith("observations.jsonl.gz cannot be read: ")


def test_replay_of_a_deleted_ledger_names_it_once(copy):
    (copy / "ledger.jsonl").unlink()
    assert replay(copy).problems == ["ledger.jsonl is missing: manifest.json lists it with its checksum"]


def test_replay_of_a_release_layout_folder_says_it_has_no_manifest_to_replay_against():
    assert not (RELEASE[0] / "manifest.json").exists()
    assert replay(RELEASE[0]).problems == [
        "manifest.json is missing: a folder in the release's layout has none, so there is no world or task file "
        "hash to replay it against; storebench regrade checks its score against its ledger"]


# --- item 8 -------------------------------------------------------------------------------------------------


@pytest.fixture
def parent(trial, tmp_path) -> Path:
    for name in ("a", "b"):
        shutil.copytree(trial, tmp_path / "batch" / name)
    return tmp_path / "batch"


@pytest.mark.parametrize("command", [["replay"], ["regrade", "--calibration", CALIBRATION]])
def test_replay_and_regrade_of_a_folder_of_trial_folders_refuse_it_saying_to_pass_them(parent, capsys, command):
    """As analyze: the caller's mistake, refused before any verdict (a batch folder neither
    reproduces nor fails to)."""
    code, out, err = run(capsys, command[0], parent, *command[1:])
    assert (code, out) == (2, "")
    assert err == f"storebench: {parent} holds 2 trial folders, not one trial's files: pass them (e.g. {parent}/*)\n"


def test_a_folder_of_trial_folders_among_others_gets_its_verdict_beside_theirs(parent, capsys):
    code, out, _err = run(capsys, "regrade", parent / "a", parent, "--calibration", CALIBRATION)
    assert code == 1
    assert out.splitlines()[0].endswith(" - reproduces")
    assert out.splitlines()[1:] == [f"{parent}: cannot be graded - DOES NOT REPRODUCE",
                                    f"    {parent} holds 2 trial folders, not one trial's files: pass them (e.g. {parent}/*)"]


def test_analyze_of_a_folder_of_trial_folders_says_to_pass_them(parent, capsys):
    code, _out, err = run(capsys, "analyze", parent)
    assert code == 2
    assert err == f"storebench: {parent} holds 2 trial folders, not one trial's files: pass them (e.g. {parent}/*)\n"


def test_regrade_of_a_folder_whose_manifest_is_not_json_cannot_be_graded(copy, capsys):
    (copy / "manifest.json").write_text("not json")
    code, out, _err = run(capsys, "regrade", copy, "--calibration", CALIBRATION)
    assert code == 1
    assert out == (f"{copy}: cannot be graded - DOES NOT REPRODUCE\n    {copy / 'manifest.json'} cannot be read as "
                   "JSON: Expecting value: line 1 column 1 (char 0)\n")


def test_a_ledger_that_is_not_utf8_is_named_and_the_next_folder_still_replays(capsys, copy, trial):
    (copy / "ledger.jsonl").write_bytes(b"\xff\xfe\n")
    result = replay(copy)
    assert f"cannot read the trial: {copy / 'ledger.jsonl'} is not UTF-8 text" in result.problems
    code, out, _err = run(capsys, "replay", copy, trial, "--json")
    reports = json.loads(out)
    assert code == 1 and [r["matches"] for r in reports["trials"]] == [False, True]


# --- one reading and check of the manifest ----------------------------------------------------------------------


def test_read_checked_manifest_names_an_edited_file_and_keeps_the_manifest(copy):
    from environment.artifacts import read_checked_manifest

    path = copy / "summary.json"
    path.write_text(path.read_text().replace('"steady"', '"other"', 1))
    checked = read_checked_manifest(copy)
    assert checked.problems == [CHANGED.format("summary.json")]
    assert checked.manifest == json.loads((copy / "manifest.json").read_text()) and checked.has_checksums


def test_replay_and_regrade_both_take_the_manifests_problems_from_read_checked_manifest(copy, monkeypatch, capsys):
    """The one function that reads and checks a manifest: what it says is what both commands say."""
    from environment import artifacts, grading
    from environment import replay as replaying

    planted = "ledger.jsonl does not match its checksum in manifest.json: planted by the test"

    def checked(folder, *, required=True):
        real = artifacts.read_checked_manifest(folder, required=required)
        return artifacts.CheckedManifest(real.manifest, [planted])

    monkeypatch.setattr(replaying, "read_checked_manifest", checked)
    monkeypatch.setattr(grading, "read_checked_manifest", checked)
    code, out, _err = run(capsys, "replay", copy)
    assert code == 1 and out.splitlines()[1] == f"    {planted}"
    regraded = grading.regrade(copy, load_calibration(CALIBRATION)[0])
    assert regraded.problems[-1] == f"{planted}; refusing to grade an edited folder"


def test_a_manifest_naming_another_cell_is_said_plainly_not_replayed(copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    task = manifest["task"]
    manifest["seed"] = manifest["seed"] + 4
    (copy / "manifest.json").write_text(json.dumps(manifest))
    result = replay(copy)
    assert not result.matches and result.calls == 0
    assert result.problems == [f"the trial's files disagree on its cell (manifest.json says {task} seed "
                               f"{manifest['seed']}; summary.json says {task} seed {manifest['seed'] - 4}; score.json "
                               f"says {task} seed {manifest['seed'] - 4}); not replayed against any of them"]

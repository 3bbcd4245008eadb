"""Re-grading trajectories as the release publishes them, and refusing edited folders.

``fixtures/release-trajectories`` holds ten trials of ours in the release's layout
(``fixtures/make_release_trajectories.py``): folders ``<task>__s<seed>__<id>``, a float
seed and no task in ``score.json``, ``"task": null`` in ``summary.json``.  They must all
re-grade.  A folder whose manifest carries per-file checksums is refused when a file was
edited, even when the edit is consistent (a forged ledger with a score that matches it);
NaN and malformed fields answer a clear problem for that folder and the run goes on.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from trial_helpers import resign

from environment.calibration import cell_of, load_calibration
from environment.engine.settlement import business_normalized, compose
from environment.grading import regrade
from environment.trial import run_trial

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "release-trajectories"
CALIBRATION = REPO / "calibration" / "public.json"
FOLDERS = sorted(FIXTURES.iterdir())


def storebench(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "environment", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def calibration():
    return load_calibration(CALIBRATION)


def test_the_fixtures_are_in_the_release_layout():
    assert len(FOLDERS) == 10
    for folder in FOLDERS:
        score = json.loads((folder / "score.json").read_text())
        summary = json.loads((folder / "summary.json").read_text())
        assert "task" not in score and isinstance(score["seed"], float) and isinstance(score["windows_played"], float)
        assert summary["task"] is None and summary["seed"] is None
        assert not (folder / "manifest.json").exists()
        task, _, rest = folder.name.partition("__s")
        assert rest.split("__")[0] == str(int(score["seed"]))


def test_all_ten_release_trajectories_regrade():
    out = storebench("regrade", "--calibration", CALIBRATION, "--json", *FOLDERS)
    assert out.returncode == 0, out.stdout
    trials = json.loads(out.stdout)["trials"]
    assert [(t["task"], t["seed"]) for t in trials] == [
        (f.name.split("__s")[0], int(f.name.split("__s")[1].split("__")[0])) for f in FOLDERS]
    assert all(t["reproduces"] for t in trials)
    assert {t["pass"] for t in trials} == {True, False}  # both outcomes are represented


def test_a_tampered_release_score_is_caught(tmp_path, calibration):
    folder = shutil.copytree(FOLDERS[0], tmp_path / FOLDERS[0].name)
    score = json.loads((folder / "score.json").read_text())
    score["reward_composite"] = round(score["reward_composite"] + 0.05, 6)
    (folder / "score.json").write_text(json.dumps(score))
    result = regrade(folder, *calibration)
    assert not result.reproduces and any(p.startswith("reward_composite:") for p in result.problems)


def _forge(folder: Path, doc: dict) -> None:
    """Zero the largest cost in the ledger and rewrite score.json to match it exactly."""
    lines = (folder / "ledger.jsonl").read_text().splitlines(keepends=True)
    rows = [json.loads(line) for line in lines]
    victim = min(range(len(rows)), key=lambda i: rows[i]["amount_cents"])
    gain = -rows[victim]["amount_cents"]
    assert gain > 0
    rows[victim]["amount_cents"] = 0
    lines[victim] = json.dumps(rows[victim], separators=(",", ":"), sort_keys=True) + "\n"
    (folder / "ledger.jsonl").write_text("".join(lines))
    score = json.loads((folder / "score.json").read_text())
    cell = cell_of(doc, score["task"], score["seed"])
    raw = Decimal(str(score["business_raw"])) + Decimal(gain) / 100
    business = business_normalized(raw, Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))
    score.update(net_assets=float(Decimal(str(score["net_assets"])) + Decimal(gain) / 100), business_raw=float(raw),
                 business=float(business),
                 reward_composite=float(compose(business, Decimal(str(score["reliability"])),
                                                Decimal(str(score["continuity"])))))
    (folder / "score.json").write_text(json.dumps(score, indent=2) + "\n")


def test_a_forged_ledger_with_a_matching_score_is_refused_by_the_checksums(tmp_path, calibration):
    doc, digest = calibration
    folder = tmp_path / "trial"
    run_trial("counter-punch", 7, folder, policy="blast-list", calibration=doc, calibration_hash=digest)
    assert regrade(folder, doc, digest).reproduces
    _forge(folder, doc)
    refused = regrade(folder, doc, digest)
    assert not refused.reproduces and refused.composite == 0 and refused.passed is False
    assert any("ledger.jsonl does not match its checksum" in p for p in refused.problems), refused.problems
    # The forgery is consistent: without the checksums nothing else would have caught it.
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.pop("files")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert regrade(folder, doc, digest).reproduces


BAD_SCORES = {
    "nan-business": ({"business": float("nan")}, "score.json business must be a finite number, got nan"),
    "string-composite": ({"reward_composite": "0.9"}, "score.json reward_composite must be a number"),
    "half-seed": ({"seed": 13.5}, "score.json seed must be a whole number, got 13.5"),
    "nan-seed": ({"seed": float("nan")}, "score.json seed must be a whole number, got nan"),
    "infinite-rate": ({"on_time_rate": float("inf")}, "score.json on_time_rate must be a finite number"),
}


def test_malformed_folders_answer_a_clear_error_each_and_the_run_goes_on(tmp_path):
    good = FOLDERS[0]  # cash-crunch seed 11
    bad = []
    for name, (changes, _message) in BAD_SCORES.items():
        folder = shutil.copytree(good, tmp_path / name / good.name)
        score = json.loads((folder / "score.json").read_text())
        score.update(changes)
        (folder / "score.json").write_text(json.dumps(score))  # json writes NaN and Infinity as the release did
        bad.append(folder)
    broken = shutil.copytree(good, tmp_path / "broken-summary" / good.name)
    (broken / "summary.json").write_text("{not json")
    unreadable = shutil.copytree(good, tmp_path / "broken-score" / good.name)
    (unreadable / "score.json").write_text("")
    wrong_name = shutil.copytree(good, tmp_path / "renamed" / good.name.replace("__s11__", "__s13__"))

    out = storebench("regrade", "--calibration", CALIBRATION, "--json", *bad, good, broken, unreadable, wrong_name)
    assert out.returncode == 1
    trials = {t["path"]: t for t in json.loads(out.stdout)["trials"]}
    assert trials[str(good)]["reproduces"] is True
    for folder, (_changes, message) in zip(bad, BAD_SCORES.values(), strict=True):
        problems = trials[str(folder)]["problems"]
        assert any(message in p for p in problems), (folder, problems)
        assert trials[str(folder)]["pass"] in (False, None)
    assert any(p.startswith(f"{broken / 'summary.json'} cannot be read as JSON") for p in trials[str(broken)]["problems"])
    assert any(p.startswith(f"{unreadable / 'score.json'} cannot be read as JSON")
               for p in trials[str(unreadable)]["problems"])
    assert any("the folder is named for cash-crunch seed 13" in p for p in trials[str(wrong_name)]["problems"])


def test_a_folder_without_a_score_is_named_as_perhaps_no_trial_folder(tmp_path, calibration):
    doc, _digest = calibration
    problems = regrade(tmp_path, doc).problems
    assert problems == [f"{tmp_path / 'score.json'} is missing: is {tmp_path} a trial folder written by storebench?"]


def test_a_manifest_that_is_no_object_is_named_by_its_path(tmp_path, calibration):
    doc, _digest = calibration
    folder = shutil.copytree(FOLDERS[0], tmp_path / FOLDERS[0].name)
    (folder / "manifest.json").write_text("[]")
    assert regrade(folder, doc).problems == [f"{folder / 'manifest.json'} is not a JSON object"]


def test_an_action_log_line_that_is_not_json_is_named_by_file_and_line(tmp_path, calibration):
    doc, _digest = calibration
    folder = shutil.copytree(FOLDERS[0], tmp_path / FOLDERS[0].name)
    log = folder / "actions.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text(lines[0] + "not json\n" + "".join(lines[1:]))
    problems = regrade(folder, doc).problems
    assert len(problems) == 1 and problems[0].startswith(f"{log} line 2 is not JSON: ")


def test_a_recorded_operation_without_a_window_is_named_by_file_and_call(tmp_path, calibration):
    doc, _digest = calibration
    folder = shutil.copytree(FOLDERS[0], tmp_path / FOLDERS[0].name)
    log = folder / "actions.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text(lines[0] + '{"tool": "end_window", "op": true}\n' + "".join(lines[1:]))
    assert regrade(folder, doc).problems == [f"{log} call 2 window must be a whole number, got None"]


def test_a_score_moved_to_another_cell_than_its_manifest_is_refused(tmp_path, calibration):
    doc, digest = calibration
    folder = tmp_path / "trial"
    run_trial("counter-punch", 7, folder, policy="blast-list", calibration=doc, calibration_hash=digest)
    for name in ("score.json", "summary.json"):
        data = json.loads((folder / name).read_text())
        data["seed"] = 11  # graded against seed 11's calibration, while the actions were played on seed 7
        (folder / name).write_text(json.dumps(data, indent=2) + "\n")
    resign(folder)
    refused = regrade(folder, doc, digest)
    assert refused.problems == ["the trial's files disagree on its cell (graded as counter-punch seed 11, but "
                                "manifest.json says counter-punch seed 7); refusing to grade it against either cell"]
    assert refused.composite == 0 and refused.passed is False


def test_a_ledger_line_without_an_amount_is_named_by_its_line(tmp_path, calibration):
    doc, digest = calibration
    folder = tmp_path / "trial"
    run_trial("counter-punch", 7, folder, policy="blast-list", calibration=doc, calibration_hash=digest)
    lines = (folder / "ledger.jsonl").read_text().splitlines(keepends=True)
    entry = json.loads(lines[2])
    entry.pop("amount_cents")
    lines[2] = json.dumps(entry) + "\n"
    (folder / "ledger.jsonl").write_text("".join(lines))
    resign(folder)
    refused = regrade(folder, doc, digest)
    assert refused.problems == ["ledger.jsonl line 3 is not a ledger entry: it lacks 'amount_cents', so the trial "
                                "grades to zero"]


def test_a_release_folder_whose_name_gives_no_cell_says_how_to_name_it(tmp_path, calibration):
    doc, digest = calibration
    folder = shutil.copytree(FOLDERS[0], tmp_path / "renamed")
    assert regrade(folder, doc, digest).problems == [
        "the trial's files name no task or no seed, and the folder's name is not the release's "
        "<task>__s<seed>__<id>: say which cell it is by naming the folder so"]


def test_a_refused_trial_reads_as_refused_not_as_a_grade(tmp_path, calibration, capsys):
    from environment.cli import main

    doc, digest = calibration
    folder = tmp_path / "trial"
    run_trial("counter-punch", 7, folder, policy="blast-list", calibration=doc, calibration_hash=digest)
    _forge(folder, doc)
    assert main(["regrade", str(folder), "--calibration", str(CALIBRATION)]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"{folder}: counter-punch seed 7: refused, so it grades to zero - DOES NOT REPRODUCE"
    assert main(["regrade", str(folder), "--calibration", str(CALIBRATION), "--json"]) == 1
    (trial,) = json.loads(capsys.readouterr().out)["trials"]
    assert (trial["refused"], trial["reward_composite"], trial["reproduces"]) == (True, 0.0, False)


# --- a trial re-graded against another calibration than the one it was graded with -------------------------


@pytest.fixture(scope="module")
def public_trial(tmp_path_factory, calibration) -> Path:
    out = tmp_path_factory.mktemp("graded") / "trial"
    run_trial("counter-punch", 7, out, policy="rule-based", calibration=calibration[0],
              calibration_hash=calibration[1])
    return out


def test_a_trial_of_the_public_calibration_regraded_against_another_is_told_to_use_the_public_file(
        public_trial, calibration, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(CALIBRATION.read_text() + "\n")  # the same cells, another hash
    doc, digest = load_calibration(other)
    result = regrade(public_trial, doc, digest)
    assert result.problems[-1] == (
        f"the trial's manifest records calibration hash {calibration[1]}, but this calibration hashes to {digest}; "
        "refusing to re-grade it against another calibration: it was graded with the shipped public calibration: "
        f"give --calibration {CALIBRATION}")


def test_a_trial_of_another_calibration_regraded_against_the_public_one_is_told_the_hash_to_look_for(
        calibration, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(CALIBRATION.read_text() + "\n")
    doc, digest = load_calibration(other)
    run_trial("counter-punch", 7, tmp_path / "trial", policy="rule-based", calibration=doc, calibration_hash=digest)
    result = regrade(tmp_path / "trial", *calibration)
    assert result.problems[-1] == (
        f"the trial's manifest records calibration hash {digest}, but this calibration hashes to {calibration[1]}; "
        "refusing to re-grade it against another calibration: give --calibration the file it was graded with, "
        f"the one hashing to {digest} (a calibration file's hash is in FILE.sha256 beside it)")

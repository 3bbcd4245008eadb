"""``storebench analyze`` after QA: several folders are reported as text, each under its path;
JSON names every folder's path; a folder whose files do not match its manifest is warned about."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from environment.calibration import load_calibration
from environment.trial import run_trial
from mcp_client.cli import main

REPO = Path(__file__).resolve().parent.parent
CALIBRATION = REPO / "calibration" / "public.json"


@pytest.fixture(scope="module")
def trials(tmp_path_factory) -> tuple[Path, Path]:
    doc, digest = load_calibration(CALIBRATION)
    root = tmp_path_factory.mktemp("analyze")
    for policy in ("absentee", "exploiter"):
        run_trial("steady", 7, root / policy, policy=policy, calibration=doc, calibration_hash=digest)
    return root / "absentee", root / "exploiter"


def run(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_several_folders_are_reported_as_text_each_under_its_path(trials, capsys):
    a, b = trials
    code, out, err = run(capsys, "analyze", a, b)
    assert (code, err) == (0, "")
    first, second = out.split("\n\n")
    assert first.splitlines()[0] == str(a) and second.splitlines()[0] == str(b)
    for block in (first, second):
        body = block.splitlines()[1:]
        assert body[0] == "  task: steady" and all(line.startswith("  ") and ": " in line for line in body)
    assert "quit before horizon: yes" in second and "{" not in out


def test_one_folder_is_reported_as_text_naming_its_path(trials, capsys):
    code, out, _err = run(capsys, "analyze", trials[0])
    assert code == 0
    assert out.splitlines()[:2] == [f"path: {trials[0]}", "task: steady"]


def test_json_names_the_path_of_every_folder(trials, capsys):
    code, out, _err = run(capsys, "analyze", *trials, "--json")
    assert code == 0
    assert [r["path"] for r in json.loads(out)] == [str(t) for t in trials]


def test_json_of_one_folder_is_one_object_with_its_path(trials, capsys):
    _code, out, _err = run(capsys, "analyze", trials[0], "--json")
    assert json.loads(out)["path"] == str(trials[0])


def test_a_folder_that_cannot_be_analysed_does_not_lose_the_others(trials, capsys, tmp_path):
    code, out, err = run(capsys, "analyze", trials[0], tmp_path / "gone")
    assert code == 2
    assert err == (f"storebench: {tmp_path / 'gone'} is not a folder: give a trial folder written by storebench "
                   "run, batch or mcp\n")
    assert out.startswith(f"{trials[0]}\n  task: steady")
    assert out.endswith(f"\n\n{tmp_path / 'gone'}\n  cannot be analysed: {tmp_path / 'gone'} is not a folder: give a "
                        "trial folder written by storebench run, batch or mcp\n")


def test_a_folder_that_does_not_match_its_manifest_is_warned_about_on_one_line(trials, capsys, tmp_path):
    folder = shutil.copytree(trials[0], tmp_path / "edited")
    path = folder / "windows.jsonl"
    path.write_text(path.read_text().replace('"window":1', '"window":2', 1))
    code, out, err = run(capsys, "analyze", folder)
    assert code == 0 and out.startswith(f"path: {folder}\n")
    assert err == (f"storebench: warning: {folder} does not match its manifest (windows.jsonl does not match its "
                   "checksum in manifest.json: the file was changed after the trial was written); the report reads "
                   "its files as they are now\n")


def test_an_untouched_folder_gets_no_warning(trials, capsys):
    _code, _out, err = run(capsys, "analyze", trials[0])
    assert err == ""

"""``storebench calibrate`` after QA: a calibration that fails a gate never replaces --out (which
may be the shipped calibration/public.json); it goes beside it as STEM.failed.json with its
report.  A calibration that passes replaces --out and says so, with the old file's hash."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_calibration import hand_cell

from environment import orchestration
from environment.calibration import file_hash, load_calibration
from mcp_client.cli import main


def calibrate(capsys, monkeypatch, out: Path, **composites: float) -> tuple[int, str, str]:
    """``storebench calibrate`` of counter-punch seed 13 in process, its cell made by hand (fast)."""
    monkeypatch.setattr(orchestration, "calibrate_cell", lambda task, seed, world=None: hand_cell(seed, **composites))
    code = main(["calibrate", "--tasks", "counter-punch", "--seeds", "13", "--out", str(out), "--workers", "1"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def shipped(tmp_path) -> Path:
    """A good calibration file already in place, as calibration/public.json is."""
    out = tmp_path / "public.json"
    out.write_text('{"tasks": {}}\n')
    out.with_name("public.json.sha256").write_text(file_hash(out.read_bytes()) + "\n")
    return out


def test_a_failed_calibration_leaves_the_existing_file_as_it_was(capsys, monkeypatch, shipped):
    before = shipped.read_bytes(), shipped.with_name("public.json.sha256").read_bytes()
    code, _out, _err = calibrate(capsys, monkeypatch, shipped, exploiter=0.2)
    assert code == 1
    assert (shipped.read_bytes(), shipped.with_name("public.json.sha256").read_bytes()) == before


def test_a_failed_calibration_goes_beside_it_with_its_report_and_says_where(capsys, monkeypatch, shipped):
    _code, _out, err = calibrate(capsys, monkeypatch, shipped, exploiter=0.2)
    failed = shipped.with_name("public.failed.json")
    doc, digest = load_calibration(failed)
    assert set(doc["tasks"]) == {"counter-punch"}
    assert shipped.with_name("public.failed.report.md").exists()
    assert err.splitlines()[-1] == (f"storebench: 1 gate failure(s), so {shipped} was left as it was; the failed "
                                    f"calibration is in {failed} ({digest}) with its report "
                                    f"{shipped.with_name('public.failed.report.md')}, for inspection")


def test_a_failed_calibration_to_a_new_path_writes_nothing_there(capsys, monkeypatch, tmp_path):
    out = tmp_path / "p.json"
    _code, _out, err = calibrate(capsys, monkeypatch, out, exploiter=0.2)
    assert not out.exists() and not out.with_name("p.json.sha256").exists()
    assert f"so {out} was not written; the failed calibration is in {tmp_path / 'p.failed.json'}" in err


def test_a_passing_calibration_replaces_the_file_and_names_the_old_hash(capsys, monkeypatch, shipped):
    old = file_hash(shipped.read_bytes())
    code, out, _err = calibrate(capsys, monkeypatch, shipped)
    assert code == 0
    _doc, digest = load_calibration(shipped)
    assert digest != old
    assert out.splitlines()[-1].startswith(f"wrote {shipped} ({digest}) and {shipped.with_name('public.report.md')} "
                                           "in ")
    assert out.splitlines()[-1].endswith(f" with 1 worker(s); it replaced the previous {shipped} ({old})")
    assert not shipped.with_name("public.failed.json").exists()


def test_a_passing_calibration_to_a_new_path_mentions_no_replacement(capsys, monkeypatch, tmp_path):
    code, out, _err = calibrate(capsys, monkeypatch, tmp_path / "cal.json")
    assert code == 0 and "replaced" not in out


def holding(path: Path, cells: dict[str, list[int]]) -> Path:
    path.write_text(json.dumps({"tasks": {task: {str(s): {"seed": s} for s in seeds} for task, seeds in cells.items()}}))
    return path


def test_a_run_of_fewer_cells_than_the_file_holds_is_refused_before_any_cell_runs(capsys, monkeypatch, tmp_path):
    out = holding(tmp_path / "public.json", {"steady": [7, 11, 13], "counter-punch": [7, 13]})
    before = out.read_bytes()
    monkeypatch.setattr(orchestration, "calibrate_cell", lambda *a, **k: pytest.fail("a cell ran"))
    code = main(["calibrate", "--tasks", "counter-punch", "--seeds", "13", "--out", str(out)])
    assert code == 2 and out.read_bytes() == before
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"storebench: --out {out} holds 5 cells and this run calibrates 1: writing it would drop 4 (steady seed 7, "
        f"steady seed 11, steady seed 13, counter-punch seed 7); write this run to a file of its own (a new --out), "
        f"or pass --replace to replace {out} with this run's cells only")


def test_replace_writes_a_run_of_fewer_cells_over_the_file(capsys, monkeypatch, tmp_path):
    out = holding(tmp_path / "public.json", {"counter-punch": [7, 13]})
    monkeypatch.setattr(orchestration, "calibrate_cell", lambda task, seed, world=None: hand_cell(seed))
    code = main(["calibrate", "--tasks", "counter-punch", "--seeds", "13", "--out", str(out), "--replace"])
    assert code == 0
    assert list(load_calibration(out)[0]["tasks"]["counter-punch"]) == ["13"]


def test_a_file_that_is_no_calibration_is_not_written_over(capsys, monkeypatch, tmp_path):
    out = tmp_path / "notes.json"
    out.write_text("my notes\n")
    code = main(["calibrate", "--tasks", "counter-punch", "--seeds", "13", "--out", str(out)])
    assert code == 2 and out.read_text() == "my notes\n"
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        f"storebench: --out {out} exists and is not a calibration file this run would only update; ")


def test_a_run_of_fewer_cells_than_workers_says_why_it_used_fewer(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(orchestration, "calibrate_cell", lambda task, seed, world=None: hand_cell(seed))
    code = main(["calibrate", "--tasks", "counter-punch", "--seeds", "13", "--out", str(tmp_path / "c.json"),
                 "--workers", "2"])
    assert code == 0
    assert " with 1 worker(s) (one per cell: --workers 2 asked for more)" in capsys.readouterr().out.splitlines()[-1]


def test_a_list_of_cells_is_cut_short_only_by_two_or_more():
    from environment.orchestration import some_of

    names = [f"steady seed {seed}" for seed in (7, 11, 13, 17, 19)]
    assert some_of(names[:3], 3) == "steady seed 7, steady seed 11, steady seed 13"
    assert some_of(names[:4], 3) == "steady seed 7, steady seed 11, steady seed 13, steady seed 17"  # not "1 more"
    assert some_of(names, 3) == "steady seed 7, steady seed 11, steady seed 13 and 2 more"

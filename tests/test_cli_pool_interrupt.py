"""Ctrl-C on ``storebench batch`` and ``calibrate``: no cell starts after it, and every cell that
finishes while the command waits for the ones under way is reported.

The pool (:func:`environment.cli.run_in_pool`) never holds more cells than it has workers, so
an interrupt has nothing queued to take back.  In process, ``done`` raising KeyboardInterrupt
after the first cell stands for Ctrl-C at that moment; each item's work leaves a file when it
starts, so the files count the cells that started.  The commands themselves are interrupted as a
terminal does, with SIGINT to their process group.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from environment.cli import AGAIN, INTERRUPTED, run_in_pool

REPO = Path(__file__).resolve().parent.parent
CALIBRATION = REPO / "calibration" / "public.json"
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] ", re.MULTILINE)


def start(marker: Path) -> Path:
    """One item's work: say it started."""
    marker.touch()
    return marker


def interrupt_after_the_first(items: list[Path], workers: int) -> list[Path]:
    """Run ``start`` on ``items``, Ctrl-C as the first finishes; the items ``done`` was given."""
    reported: list[Path] = []

    def done(_item: Path, marker: Path) -> None:
        reported.append(marker)
        if len(reported) == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_in_pool(start, items, workers, done)
    return reported


def markers(tmp_path: Path, n: int) -> list[Path]:
    return [tmp_path / f"item-{i}" for i in range(n)]


def test_no_item_starts_after_an_interrupt(tmp_path):
    interrupt_after_the_first(markers(tmp_path, 8), workers=2)
    assert len(list(tmp_path.iterdir())) == 2  # the first and the one under way beside it; none queued


def test_every_item_under_way_at_an_interrupt_is_reported(tmp_path):
    reported = interrupt_after_the_first(markers(tmp_path, 8), workers=3)
    assert sorted(reported) == sorted(tmp_path.iterdir())


def test_an_interrupt_says_no_further_cell_starts(tmp_path, capsys):
    interrupt_after_the_first(markers(tmp_path, 4), workers=2)
    assert capsys.readouterr().err == INTERRUPTED + "\n"


def test_without_an_interrupt_every_item_is_reported_once(tmp_path):
    reported: list[Path] = []
    run_in_pool(start, markers(tmp_path, 7), 2, lambda _item, marker: reported.append(marker))
    assert sorted(reported) == sorted(markers(tmp_path, 7))


def interrupted(command: list[str]) -> tuple[int, str]:
    """``storebench command`` interrupted as its first cell is reported: its exit code and stderr."""
    run = subprocess.Popen([sys.executable, "-m", "mcp_client.cli", *command], cwd=REPO, stderr=subprocess.PIPE,
                           text=True, start_new_session=True)
    assert run.stderr is not None
    err = ""
    while not PROGRESS.match(line := run.stderr.readline()):
        assert line, f"storebench {command[0]} ended before its first cell"
        err += line
    os.killpg(run.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the command and its workers
    err += line + run.stderr.read()
    return run.wait(timeout=120), err


def test_every_trial_a_batch_writes_after_ctrl_c_has_its_progress_line(tmp_path):
    out = tmp_path / "b"
    code, err = interrupted(["batch", "--tasks", "eval", "--seeds", "7", "--policy", "rule-based", "--out", str(out),
                             "--workers", "1", "--calibration", str(CALIBRATION)])
    reported = sorted(re.findall(rf"^\[\d+/12\] ({re.escape(str(out))}/\S+): composite", err, re.MULTILINE))
    assert code == 130 and INTERRUPTED in err
    assert sorted(str(p) for p in out.iterdir()) == reported and len(reported) < 12


def test_ctrl_c_on_calibrate_says_how_many_cells_finished_and_that_nothing_was_written(tmp_path):
    out = tmp_path / "cal.json"
    code, err = interrupted(["calibrate", "--tasks", "steady", "counter-punch", "--seeds", "7", "11", "--out", str(out),
                             "--workers", "2"])
    finished = len(PROGRESS.findall(err))
    assert code == 130 and not out.exists() and list(tmp_path.iterdir()) == []
    assert (f"storebench: the calibration was interrupted with {finished} of 4 cells finished, and nothing was "
            "written") in err


def test_a_second_ctrl_c_stops_the_cells_under_way_instead_of_waiting(tmp_path):
    """steady finishes first; full-year (a year of windows, several seconds) is under way when Ctrl-C
    is pressed twice: the command stops it, says so, and writes no trial for it."""
    out = tmp_path / "b"
    run = subprocess.Popen([sys.executable, "-m", "mcp_client.cli", "batch", "--tasks", "steady", "full-year",
                            "--seeds", "7", "--policy", "rule-based", "--out", str(out), "--workers", "2",
                            "--calibration", str(CALIBRATION)],
                           cwd=REPO, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert run.stderr is not None
    while not PROGRESS.match(line := run.stderr.readline()):
        assert line, "storebench batch ended before its first cell"
    assert "steady-7" in line, "full-year finished first: it is no longer slow enough to be interrupted"
    os.killpg(run.pid, signal.SIGINT)
    while INTERRUPTED not in (line := run.stderr.readline()):  # the first press is seen
        assert line, "storebench batch ended without saying it was interrupted"
    os.killpg(run.pid, signal.SIGINT)
    err = run.stderr.read()
    assert run.wait(timeout=120) == 130
    assert AGAIN in err
    assert [p.name for p in out.iterdir() if ".partial-" not in p.name] == ["steady-7-rule-based"]

"""``storebench run``, ``batch`` and ``search`` after QA: every argument is checked before anything
is created or played, a trial folder that cannot be written leaves nothing behind, and the
default output is text (JSON with ``--json``)."""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from environment import artifacts
from environment.anchors import ANCHORS, CHECKS
from environment.artifacts import ArtifactError
from environment.calibration import cell_of, load_calibration
from environment.errors import StoreBenchError
from environment.trial import run_trial
from mcp_client.cli import main

REPO = Path(__file__).resolve().parent.parent
CALIBRATION = REPO / "calibration" / "public.json"


def run(capsys, *argv: str | Path) -> tuple[int, str, str]:
    """``storebench argv`` in process: its exit code, stdout and stderr."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cannot_write_in(folder: str) -> str:
    """Why a folder cannot be created in ``folder`` (``/proc`` refuses it, even to root), as the
    command says it: the system's words, except that a folder it shows is not "missing"."""
    try:
        made = tempfile.mkdtemp(dir=folder)
    except OSError as exc:
        return f"{folder} takes no new files" if exc.errno == errno.ENOENT else exc.strerror
    Path(made).rmdir()
    pytest.skip(f"{folder} is writable here")


def no_partial_folders(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if ".partial-" in p.name]


# --- item 1: repeated cells; a failed write leaves no .partial-* folder ----------------------------


def test_batch_refuses_a_repeated_seed_before_creating_anything(capsys, tmp_path):
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "7", "--policy", "rule-based",
                          "--out", tmp_path / "b4", "--calibration", CALIBRATION)
    assert code == 2
    assert err == "storebench: --seeds names 7 more than once: give each once (every task-seed cell runs once)\n"
    assert not (tmp_path / "b4").exists()


def test_batch_refuses_a_repeated_task(capsys, tmp_path):
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "liquidity", "steady", "--seeds", "7", "--policy",
                          "absentee", "--out", tmp_path / "b")
    assert code == 2
    assert err == "storebench: --tasks names steady more than once: give each once (every task-seed cell runs once)\n"


def test_task_groups_expand_to_their_split_in_registry_order():
    from environment.orchestration import expand_tasks
    from environment.tasks import all_tasks

    evaluation, training = [t.id for t in all_tasks("eval")], [t.id for t in all_tasks("train")]
    assert (len(evaluation), len(training)) == (12, 5)
    assert expand_tasks(["eval"]) == evaluation and expand_tasks(["train"]) == training
    assert expand_tasks(["all"]) == [t.id for t in all_tasks()] and "practice" not in expand_tasks(["all"])
    assert expand_tasks(["train", "steady"]) == [*training, "steady"]


def test_a_task_a_group_already_names_is_refused_saying_which_group_holds_it(capsys, tmp_path):
    from environment.orchestration import expand_tasks

    code, _out, err = run(capsys, "batch", "--tasks", "eval", "steady", "--seeds", "7", "--policy", "absentee",
                          "--out", tmp_path / "b")
    assert code == 2
    assert err == ("storebench: --tasks names steady more than once (eval includes it): give each task once "
                   "(every task-seed cell runs once)\n")
    with pytest.raises(StoreBenchError, match=r"names black-swan more than once \(all and eval include it\)"):
        expand_tasks(["all", "eval"])


def test_calibrate_refuses_a_repeated_seed_before_any_cell(capsys, tmp_path):
    code, _out, err = run(capsys, "calibrate", "--tasks", "steady", "--seeds", "7", "11", "7", "--out",
                          tmp_path / "cal.json")
    assert code == 2
    assert err == "storebench: --seeds names 7 more than once: give each once (every task-seed cell runs once)\n"


def test_a_trial_folder_filled_while_it_was_played_is_refused_and_leaves_no_partial_folder(monkeypatch, tmp_path):
    out = tmp_path / "t"
    real_digest = artifacts.file_digest

    def someone_else_writes_first(data: bytes) -> str:  # runs after the up-front check, before the rename
        out.mkdir(exist_ok=True)
        (out / "theirs.txt").write_text("not ours")
        return real_digest(data)

    monkeypatch.setattr(artifacts, "file_digest", someone_else_writes_first)
    with pytest.raises(ArtifactError) as refused:
        run_trial("steady", 7, out, policy="absentee", calibration=load_calibration(CALIBRATION)[0])
    assert refused.value.message == (f"{out} already holds files (written while this trial was played); choose "
                                     "an empty or new folder")
    assert [p.name for p in out.iterdir()] == ["theirs.txt"]  # left as it was
    assert no_partial_folders(tmp_path)


def test_a_trial_write_that_fails_midway_leaves_no_partial_folder(monkeypatch, tmp_path):
    real_write = Path.write_bytes

    def disk_full_at_the_ledger(self: Path, data: bytes) -> int:
        if self.name == "ledger.jsonl":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", disk_full_at_the_ledger)
    with pytest.raises(ArtifactError) as refused:
        run_trial("steady", 7, tmp_path / "t", policy="absentee", calibration=load_calibration(CALIBRATION)[0])
    assert refused.value.message == (f"cannot write the trial folder {tmp_path / 't'} (No space left on device); "
                                     "name a folder you can write to")
    assert list(tmp_path.iterdir()) == []


# --- item 2: the output location is probed before any work ---------------------------------------


@pytest.mark.parametrize(("argv", "out"), [
    (("run", "--task", "steady"), "/proc/x10"),
    (("batch", "--tasks", "steady"), "/proc"),
], ids=["run", "batch"])
def test_a_command_refuses_an_output_it_cannot_write_before_playing(capsys, monkeypatch, argv, out):
    from environment import trial

    monkeypatch.setattr(trial, "run_trial", lambda *a, **k: pytest.fail("the trial was played"))
    code, _out, err = run(capsys, *argv, "--seed" if argv[0] == "run" else "--seeds", "7", "--policy", "absentee",
                          "--out", out, "--calibration", CALIBRATION)
    assert code == 2
    assert err == (f"storebench: --out: cannot write in the folder /proc ({cannot_write_in('/proc')}); name a "
                   "folder you can write to\n")


def test_a_folder_that_cannot_be_created_in_proc_is_not_called_missing(capsys, monkeypatch):
    from environment import trial

    monkeypatch.setattr(trial, "run_trial", lambda *a, **k: pytest.fail("the trial was played"))
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--policy", "absentee",
                          "--out", "/proc/x11", "--calibration", CALIBRATION)
    assert code == 2
    assert err == (f"storebench: --out: cannot create the folder /proc/x11 ({cannot_write_in('/proc')}); name a "
                   "folder you can write to\n")


def test_the_write_probe_leaves_nothing_in_a_writable_folder(tmp_path):
    from environment.cli import writable_folder

    assert writable_folder(tmp_path / "new", "--out") == tmp_path / "new"
    assert list((tmp_path / "new").iterdir()) == []


# --- item 5: a cell calibrated on the spot is said so --------------------------------------------


def test_batch_names_each_cell_its_calibration_file_lacks(capsys, tmp_path):
    doc, _digest = load_calibration(CALIBRATION)
    assert cell_of(doc, "practice", 7) is None and cell_of(doc, "steady", 7) is not None
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "practice", "--seeds", "7", "--policy", "absentee",
                          "--out", tmp_path / "b", "--calibration", CALIBRATION, "--workers", "1")
    assert code == 0
    notices = [line for line in err.splitlines() if "so calibrated on the spot" in line]
    assert notices == [f"storebench: not in {CALIBRATION}, so calibrated on the spot: practice seed 7"]
    # and, the practice store failing the gates there, that its pass says little
    assert "storebench: practice seed 7: this cell was calibrated on the spot and fails the calibration's gates" in err


# --- item 10: nothing is created for a refused batch ----------------------------------------------


def test_batch_with_an_unknown_task_creates_no_output_folder(capsys, tmp_path):
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "nope", "--seeds", "7", "--policy", "rule-based",
                          "--out", tmp_path / "b1", "--calibration", CALIBRATION)
    assert code == 2
    assert err.startswith("storebench: unknown task 'nope'; known tasks: ")
    assert not (tmp_path / "b1").exists()


def test_batch_with_a_bad_calibration_file_creates_no_output_folder(capsys, tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text("{}")
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--policy", "absentee", "--out",
                          tmp_path / "b", "--calibration", bad)
    assert code == 2 and "no 'tasks' table" in err
    assert not (tmp_path / "b").exists()


# --- item 11: an empty action log is refused ------------------------------------------------------


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_batch_refuses_an_action_log_without_calls(capsys, tmp_path, content):
    log = tmp_path / "EMPTYFILE"
    log.write_text(content)
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--actions", log, "--out",
                          tmp_path / "b", "--calibration", CALIBRATION)
    assert code == 2
    assert err == (f"storebench: --actions {log} holds no recorded calls: give the actions.jsonl of a trial that "
                   "made at least one call\n")
    assert not (tmp_path / "b").exists()


def test_batch_refuses_neither_policy_nor_actions(capsys, tmp_path):
    code, _out, err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--out", tmp_path / "b")
    assert code == 2
    assert err == ("storebench: neither --policy nor --actions given: give one, a scripted policy or a recorded "
                   "actions.jsonl\n")


# --- item 12: one list of policies ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "batch"])
def test_help_lists_every_policy_that_policy_accepts(capsys, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "400")  # one help line per option
    code, out, _err = run(capsys, command, "--help")
    assert code == 0
    (line,) = [line for line in out.splitlines() if line.strip().startswith("--policy")]
    names = [*ANCHORS, *CHECKS]
    assert "diligence" in names
    assert ", ".join(names[:-1]) + " or " + names[-1] in line


# --- item 13: text by default, JSON with --json -----------------------------------------------------


def test_batch_prints_one_line_of_text_without_json(capsys, tmp_path):
    code, out, _err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--policy", "absentee", "--out",
                          tmp_path / "b", "--calibration", CALIBRATION)
    assert code == 0
    assert re.fullmatch(rf"1 trial, 0 passed, mean composite \d\.\d{{3}}, in \d+\.\d s; trial folders under "
                        rf"{re.escape(str(tmp_path / 'b'))}\n", out), out


def test_batch_prints_every_result_as_json_with_json(capsys, tmp_path):
    code, out, _err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--policy", "absentee", "--out",
                          tmp_path / "b", "--calibration", CALIBRATION, "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["trials"], data["failed"]) == (1, [])
    assert [r["out"] for r in data["results"]] == [str(tmp_path / "b" / "steady-7-absentee")]


def test_search_prints_one_line_of_text_without_json(capsys):
    code, out, _err = run(capsys, "search", "--method", "random", "--task", "steady", "--seed", "7", "--episodes",
                          "2", "--calibration", CALIBRATION)
    assert code == 0
    assert re.fullmatch(r"random search, 2 episodes on steady seed 7: best composite \d\.\d{3} \(business "
                        r"\d\.\d{3}, reliability \d\.\d{3}\); threshold \d\.\d{3} \(calibration file\); stays below "
                        r"the threshold\n", out), out


def test_a_batch_whose_every_trial_fails_has_no_mean_and_says_failed(capsys, monkeypatch, tmp_path):
    import environment.trial

    def refuse(*_args, **_kwargs):
        raise StoreBenchError("boom")

    monkeypatch.setattr(environment.trial, "run_trial", refuse)  # the workers fork with it
    code, out, err = run(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--policy", "absentee", "--out",
                         tmp_path / "b", "--calibration", CALIBRATION, "--workers", "1")
    assert code == 1 and "FAILED: boom" in err
    assert out.startswith("0 trials, 0 passed, no mean composite, in ") and out.endswith("; 1 failed (see above)\n")


def test_batch_without_a_calibration_names_its_cells(capsys, tmp_path):
    code, _out, err = run(capsys, "batch", "--tasks", "counter-punch", "--seeds", "7", "11", "--policy", "absentee",
                          "--out", tmp_path / "b", "--workers", "1")
    assert code == 0
    assert ("storebench: no --calibration, so each of the 2 cells (counter-punch seed 7, counter-punch seed 11) "
            "is calibrated on the spot") in err.splitlines()


# --- a pool never has more processes than pieces of work -------------------------------------------


def test_a_calibration_of_one_cell_starts_one_worker_whatever_workers_says(capsys, tmp_path):
    code, out, _err = run(capsys, "calibrate", "--tasks", "counter-punch", "--seeds", "7", "--workers", "64",
                          "--out", tmp_path / "c.json")
    assert code == 0
    assert out.splitlines()[-1].endswith(" with 1 worker(s) (one per cell: --workers 64 asked for more)")


@pytest.mark.parametrize(("workers", "items", "size"), [(64, 1, 1), (2, 51, 2), (3, 3, 3), (1, 0, 1)])
def test_pool_size_is_the_workers_asked_for_but_never_more_than_the_work(workers, items, size):
    from environment.cli import pool_size

    assert pool_size(workers, items) == size


def test_the_core_bench_takes_no_console_options(capsys):
    # The installed `storebench bench` measures the core; `python -m benchmarks` takes these.
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--participants", "0", "--quick"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --participants 0" in capsys.readouterr().err


def test_an_unknown_task_names_the_practice_task_apart():
    from environment.tasks import get_task
    from environment.tasks.loader import TaskFileError

    with pytest.raises(TaskFileError) as refused:
        get_task("nope")
    known = refused.value.message.split("known tasks: ", 1)[1]
    assert known.endswith(" (and the console's practice task: practice)")
    assert "practice," not in known and "short-runway" in known


def test_skip_played_finishes_a_batch_and_counts_every_cell(capsys, tmp_path):
    out = tmp_path / "b"
    argv = ["batch", "--tasks", "counter-punch", "--seeds", "7", "11", "--policy", "rule-based", "--out", out,
            "--calibration", CALIBRATION]
    assert run(capsys, *argv)[0] == 0
    first = json.loads((out / "counter-punch-7-rule-based" / "score.json").read_text())
    shutil.rmtree(out / "counter-punch-11-rule-based")  # as a batch stopped before that cell
    code, _out, err = run(capsys, *argv)
    assert code == 2 and "already exists; use a new --out, or --skip-played to play only" in err
    code, text, err = run(capsys, *argv, "--skip-played", "--json")
    summary = json.loads(text)
    assert code == 0 and summary["trials"] == 2 and summary["skipped"] == 1
    assert [r.get("skipped", False) for r in summary["results"]] == [True, False]
    assert summary["results"][0]["reward_composite"] == first["reward_composite"]
    assert "[1/2]" in err and "already played, composite" in err
    assert (out / "counter-punch-11-rule-based" / "score.json").exists()


def test_skip_played_refuses_a_folder_that_is_no_finished_trial(capsys, tmp_path):
    out = tmp_path / "b"
    (out / "counter-punch-7-rule-based").mkdir(parents=True)
    (out / "counter-punch-7-rule-based" / "notes.txt").write_text("mine")
    code, _out, err = run(capsys, "batch", "--tasks", "counter-punch", "--seeds", "7", "--policy", "rule-based",
                          "--out", out, "--skip-played")
    assert code == 2
    assert f"{out}/counter-punch-7-rule-based is there but holds no finished trial" in err
    assert (out / "counter-punch-7-rule-based" / "notes.txt").read_text() == "mine"


def test_ctrl_c_stops_a_batch_with_a_line_not_a_traceback(tmp_path):
    out = tmp_path / "b"
    command = [sys.executable, "-m", "mcp_client.cli", "batch", "--tasks", "eval", "--seeds", "11", "--policy",
               "smart-triage", "--out", str(out), "--workers", "2", "--calibration", str(CALIBRATION)]
    batch = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert batch.stderr is not None
    while not (line := batch.stderr.readline()).startswith("[1/12]"):
        assert line, "the batch ended before its first trial"
    os.killpg(batch.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the command and its workers
    rest = batch.stderr.read()
    assert batch.wait(timeout=120) == 130
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest
    assert "run the same command with --skip-played to play the rest" in rest
    assert rest.rstrip().endswith("storebench: interrupted (Ctrl-C)")
    finished = [p for p in out.iterdir() if (p / "score.json").exists()]
    assert 1 <= len(finished) < 12 and no_partial_folders(out)


# --- a cell calibrated on the spot that fails the gates ---------------------------------------------------


def test_run_says_its_cell_calibrated_on_the_spot_fails_the_gates(capsys, tmp_path):
    code, out, err = run(capsys, "run", "--task", "counter-punch", "--seed", "3", "--policy", "blast-list",
                         "--out", tmp_path / "t")
    assert code == 0 and "(calibrated for this cell on the spot); pass" in out
    assert err.startswith("storebench: counter-punch seed 3: this cell was calibrated on the spot and fails the "
                          "calibration's gates, so its composite may rank volume play above judgment")
    assert "(gates failed: ordering: rule-based " in err


def test_batch_marks_the_cells_that_fail_the_gates_and_names_them_once(capsys, tmp_path):
    code, _out, err = run(capsys, "batch", "--tasks", "counter-punch", "--seeds", "3", "7", "--policy", "blast-list",
                          "--out", tmp_path, "--calibration", CALIBRATION, "--workers", "1")
    assert code == 0
    assert "counter-punch-3-blast-list: composite 0.849 pass (its cell fails the gates)" in err
    assert "counter-punch-7-blast-list: composite 0.612\n" in err
    assert err.count("fails the calibration's gates") == 1 and "storebench: counter-punch seed 3: this cell" in err

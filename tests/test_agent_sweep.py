"""Sweeps of the baseline LLM runner: several cells in one command, against stub endpoints on loopback.

- every cell is played once, in the order given, ``--concurrency`` at a time, and each progress
  line names its cell;
- the summary counts the graded trials, the cells the endpoint never answered and the tokens;
- ``--skip-played`` leaves a cell that already has this model's finished trial, and counts its score;
- a task or seed named twice, or an unknown task, is refused before anything is written.
"""
from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import threading
from pathlib import Path

from chat_stub import completion, endpoint

from mcp_client.agent import HARNESS
from mcp_client.sweep import _CellLog, play_many, played_before

REPO = Path(__file__).resolve().parent.parent
TASK = "short-runway"


def end_window(_body: dict) -> tuple[int, bytes]:
    return completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "end_window", "arguments": "{}"}}]})


def agent_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp_client", "agent", "--model", "stub", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def sweep(base_url: str, trials: Path, seeds: list[int], **kw) -> list[dict]:
    return asyncio.run(play_many([(TASK, s) for s in seeds], model="stub", base_url=base_url, trials=trials,
                                 max_turns=2, log=kw.pop("log", io.StringIO()), **kw))


def test_a_sweep_plays_every_cell_once_in_order_and_sums_them_up(tmp_path):
    with endpoint(end_window) as (url, seen):
        out = agent_cli("--base-url", url, "--tasks", TASK, "--seeds", "7", "11", "--concurrency", "2",
                        "--max-turns", "2", "--trials", str(tmp_path))
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert [(r["task"], r["seed"]) for r in summary["rows"]] == [(TASK, 7), (TASK, 11)]
    assert (summary["cells"], summary["trials"], summary["skipped"], summary["unplayed"]) == (2, 2, 0, [])
    assert summary["metrics"]["requests"] == len(seen) == 4
    for row in summary["rows"]:
        written = json.loads((Path(row["out"]) / "summary.json").read_text())
        assert (written["task"], written["seed"], written["model"], written["harness"]) == (TASK, row["seed"], "stub", HARNESS)
    composites = [r["reward_composite"] for r in summary["rows"]]
    assert summary["mean_composite"] == round(sum(composites) / 2, 4)


def test_each_progress_line_names_its_cell(tmp_path):
    log = io.StringIO()
    with endpoint(end_window) as (url, _seen):
        sweep(url, tmp_path, [7, 11], concurrency=2, log=log)
    turn_lines = [line for line in log.getvalue().splitlines() if " turn " in line and "composite" not in line]
    assert len(turn_lines) == 4
    assert sorted(line.split(" turn ")[0] for line in turn_lines) == [f"{TASK}/11"] * 2 + [f"{TASK}/7"] * 2


def test_concurrency_plays_cells_at_the_same_time(tmp_path):
    both_waiting = threading.Barrier(2, timeout=60)  # the first request waits for the other cell's first

    def meet_then_end(body: dict) -> tuple[int, bytes]:
        if len(body["messages"]) == 2:  # a cell's first request: the brief and the opening
            both_waiting.wait()
        return end_window(body)

    with endpoint(meet_then_end) as (url, _seen):
        rows = sweep(url, tmp_path, [7, 11], concurrency=2)
    assert [r["out"] is not None for r in rows] == [True, True]


def test_skip_played_leaves_a_cell_this_model_finished_and_counts_its_score(tmp_path):
    with endpoint(end_window) as (url, seen):
        (first,) = sweep(url, tmp_path, [7])
        requests_before = len(seen)
        rows = sweep(url, tmp_path, [7, 11], skip_played=True)
        assert len(seen) == requests_before + 2  # cell 11 only, two turns
    assert rows[0] == {**played_before(tmp_path, TASK, 7, "stub", max_turns=2), "skipped": True}
    assert (rows[0]["out"], rows[0]["reward_composite"], rows[0]["pass"]) == (first["out"], first["reward_composite"],
                                                                             first["pass"])
    assert rows[1].get("skipped") is None and rows[1]["out"] != first["out"]


def test_a_rerun_that_skips_every_cell_counts_zero_tokens(tmp_path):
    with endpoint(end_window) as (url, _seen):
        assert agent_cli("--base-url", url, "--seeds", "7", "11", "--max-turns", "2", "--trials", str(tmp_path)
                         ).returncode == 0
        again = agent_cli("--base-url", url, "--seeds", "7", "11", "--max-turns", "2", "--trials", str(tmp_path),
                          "--skip-played")
    summary = json.loads(again.stdout)
    assert summary["skipped"] == 2
    assert summary["metrics"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0,
                                  "retries": 0, "tool_calls": 0}


def test_skip_played_does_not_count_another_models_trial(tmp_path):
    with endpoint(end_window) as (url, _seen):
        sweep(url, tmp_path, [7])
        assert played_before(tmp_path, TASK, 7, "another-model", max_turns=2) is None
        rows = asyncio.run(play_many([(TASK, 7)], model="another-model", base_url=url, trials=tmp_path,
                                     max_turns=2, skip_played=True, log=io.StringIO()))
    assert rows[0].get("skipped") is None and len(list(tmp_path.iterdir())) == 2


def test_a_trial_with_another_turn_cap_or_compaction_is_not_the_same_play(tmp_path):
    with endpoint(end_window) as (url, _seen):
        sweep(url, tmp_path, [7])  # max_turns 2, keep_turns 3
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2, keep_turns=3) is not None
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=150) is None
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2, keep_turns=0) is None


def test_a_trial_the_endpoint_cut_short_is_played_again(tmp_path):
    answered: list[int] = []

    def fails_after_one_turn(body: dict) -> tuple[int, bytes]:
        answered.append(1)
        return end_window(body) if len(answered) == 1 else (400, b"bad request")

    with endpoint(fails_after_one_turn) as (url, _seen):
        (cut,) = sweep(url, tmp_path, [7])
    assert cut["ended_by"] == "endpoint error" and cut["out"] is not None
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2) is None
    with endpoint(end_window) as (url, seen):
        (again,) = sweep(url, tmp_path, [7], skip_played=True)
    assert again.get("skipped") is None and len(seen) == 2


def test_a_malformed_tool_call_is_answered_and_the_sweep_goes_on(tmp_path):
    def malformed_then_end(body: dict) -> tuple[int, bytes]:
        if len(body["messages"]) == 2:  # each cell's first request
            return completion({"role": "assistant", "content": None, "tool_calls": [
                "not a call", {"id": "x", "type": "function", "function": {"name": None, "arguments": "{}"}}]})
        return end_window(body)

    with endpoint(malformed_then_end) as (url, _seen):
        rows = sweep(url, tmp_path, [7, 11], concurrency=2)
    assert [r["out"] is not None for r in rows] == [True, True]
    summary = json.loads((Path(rows[0]["out"]) / "summary.json").read_text())
    assert summary["metrics"]["tool_calls"] == 2  # the call without a name was answered; the string was dropped


def test_a_folder_whose_files_cannot_be_read_is_not_a_finished_trial(tmp_path):
    with endpoint(end_window) as (url, _seen):
        (first,) = sweep(url, tmp_path, [7])
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2) is not None
    (Path(first["out"]) / "score.json").write_text("{truncated")
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2) is None


def test_cells_the_endpoint_never_answered_are_listed_and_the_command_exits_1(tmp_path):
    with endpoint(lambda _body: (500, b"down")) as (url, _seen):
        out = agent_cli("--base-url", url, "--seeds", "7", "11", "--trials", str(tmp_path / "trials"))
    assert out.returncode == 1
    summary = json.loads(out.stdout)
    assert (summary["trials"], summary["unplayed"]) == (0, [f"{TASK}/7", f"{TASK}/11"])
    assert not any((tmp_path / "trials").iterdir())
    assert f"{TASK}/11: the endpoint never answered; nothing was played" in out.stderr


def test_a_seed_named_twice_is_refused_before_anything_is_written(tmp_path):
    out = agent_cli("--base-url", "http://127.0.0.1:9/v1", "--seeds", "7", "7", "--trials", str(tmp_path / "t"))
    assert out.returncode == 2
    assert out.stderr.strip() == "storebench: --seeds names 7 more than once: give each once (every task-seed cell runs once)"
    assert not (tmp_path / "t").exists()


def test_a_cell_log_passes_on_whole_lines_each_with_its_prefix():
    target = io.StringIO()
    log = _CellLog(target, "steady/7 ")
    log.write("turn 1: ")
    assert target.getvalue() == ""
    log.write("3 tool call(s)\nturn 2\n")
    assert target.getvalue() == "steady/7 turn 1: 3 tool call(s)\nsteady/7 turn 2\n"


def test_the_temperature_played_with_is_recorded_in_the_trial(tmp_path):
    with endpoint(end_window) as (url, seen):
        (row,) = sweep(url, tmp_path, [7], temperature=0.7)
    assert [body["temperature"] for body in seen] == [0.7, 0.7]
    assert json.loads((Path(row["out"]) / "summary.json").read_text())["metrics"]["temperature"] == 0.7


def test_without_a_temperature_none_is_recorded(tmp_path):
    with endpoint(end_window) as (url, seen):
        (row,) = sweep(url, tmp_path, [7])
    assert not any("temperature" in body for body in seen)
    assert "temperature" not in json.loads((Path(row["out"]) / "summary.json").read_text())["metrics"]


def test_a_trial_at_another_temperature_is_not_the_same_play(tmp_path):
    with endpoint(end_window) as (url, _seen):
        sweep(url, tmp_path, [7], temperature=0.7)
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2, temperature=0.7) is not None
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2, temperature=0.2) is None


def test_a_trial_with_a_temperature_is_not_the_play_of_one_without(tmp_path):
    with endpoint(end_window) as (url, _seen):
        sweep(url, tmp_path, [7], temperature=0)
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2, temperature=0.0) is not None
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2) is None


def test_a_trial_without_a_temperature_is_not_the_play_of_one_with(tmp_path):
    with endpoint(end_window) as (url, _seen):
        sweep(url, tmp_path, [7])
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2) is not None
    assert played_before(tmp_path, TASK, 7, "stub", max_turns=2, temperature=0.7) is None


def test_skip_played_plays_again_a_cell_played_at_another_temperature(tmp_path):
    with endpoint(end_window) as (url, seen):
        (first,) = sweep(url, tmp_path, [7], temperature=0.7)
        (again,) = sweep(url, tmp_path, [7], temperature=0.2, skip_played=True)
        (skipped,) = sweep(url, tmp_path, [7], temperature=0.2, skip_played=True)
    assert again.get("skipped") is None and again["out"] != first["out"] and len(seen) == 4
    assert skipped["skipped"] is True and skipped["out"] == again["out"]

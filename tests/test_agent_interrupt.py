"""Ctrl-C during a ``storebench agent`` sweep, sent in-process while a cell waits on the stub model:
no further cell starts, the cell playing is cancelled and writes no folder, the command prints the
summary of the cells that finished marked ``interrupted``, says how to resume, and exits 130; the
same command with ``--skip-played`` then plays only the cells left."""
from __future__ import annotations

import asyncio
import io
import json
import signal
import threading
from pathlib import Path

import pytest
from chat_stub import completion, endpoint

from mcp_client.cli import main
from mcp_client.sweep import play_many

TASK = "short-runway"


def end_window(_body: dict) -> tuple[int, bytes]:
    return completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "end_window", "arguments": "{}"}}]})


class InterruptSecondCell:
    """Plays the first cell; on the second cell's first request calls ``interrupt`` and holds the
    request until ``released`` is set (the model is slow: only a cancelled play stops waiting)."""

    def __init__(self, interrupt) -> None:
        self.interrupt, self.firsts, self.released = interrupt, 0, threading.Event()

    def __call__(self, body: dict) -> tuple[int, bytes]:
        if len(body["messages"]) == 2:
            self.firsts += 1
            if self.firsts == 2:
                self.interrupt()
                self.released.wait(60)
                return 500, b"released"
        return end_window(body)


def ctrl_c() -> None:
    """What Ctrl-C does: SIGINT to the process, here to its main thread (which runs the sweep)."""
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def agent(url: str, trials: Path, *extra: str) -> int:
    try:
        return main(["agent", "--model", "stub", "--base-url", url, "--tasks", TASK, "--seeds", "7", "11", "13",
                     "--max-turns", "2", "--trials", str(trials), *extra])
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped the command")


def interrupted_sweep(trials: Path) -> tuple[int, InterruptSecondCell]:
    """The three-cell sweep, Ctrl-C pressed while its second cell waits on the model: its exit code."""
    responder = InterruptSecondCell(ctrl_c)
    with endpoint(responder) as (url, _seen):
        try:
            return agent(url, trials), responder
        finally:
            responder.released.set()


def session_folders(trials: Path) -> list[str]:
    return sorted(p.name for p in trials.iterdir())


def test_ctrl_c_prints_the_finished_cells_marked_interrupted_and_exits_130(tmp_path, capsys):
    code, _responder = interrupted_sweep(tmp_path)
    out, err = capsys.readouterr()
    assert code == 130
    summary = json.loads(out)
    assert summary["interrupted"] is True and summary["not_finished"] == [f"{TASK}/11", f"{TASK}/13"]
    assert (summary["cells"], summary["trials"]) == (3, 1) and [r["seed"] for r in summary["rows"]] == [7]
    assert err.splitlines()[-1] == ("storebench agent: interrupted with 1 of 3 cells finished; to play the 2 "
                                    "without a trial, run the same command again with --skip-played")


def test_ctrl_c_starts_no_further_cell_and_leaves_no_folder_of_the_cell_it_stopped(tmp_path, capsys):
    _code, responder = interrupted_sweep(tmp_path)
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert responder.firsts == 2  # the third cell never asked the model
    assert session_folders(tmp_path) == [Path(rows[0]["out"]).name]  # no folder, whole or partial, of cell 11


def test_the_same_command_with_skip_played_plays_only_the_cells_left(tmp_path, capsys):
    interrupted_sweep(tmp_path)
    first = json.loads(capsys.readouterr().out)["rows"][0]
    with endpoint(end_window) as (url, seen):
        code = agent(url, tmp_path, "--skip-played")
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and "interrupted" not in summary and len(seen) == 4  # two cells, two turns each
    assert [(r["seed"], r.get("skipped")) for r in summary["rows"]] == [(7, True), (11, None), (13, None)]
    assert summary["rows"][0]["out"] == first["out"] and len(session_folders(tmp_path)) == 3


def test_a_cancelled_sweep_keeps_the_rows_of_the_cells_that_finished(tmp_path):
    async def sweep(finished: dict) -> None:
        me = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert me is not None
        responder.interrupt = lambda: loop.call_soon_threadsafe(me.cancel)
        await play_many([(TASK, 7), (TASK, 11), (TASK, 13)], model="stub", base_url=url, trials=tmp_path,
                        max_turns=2, log=io.StringIO(), finished=finished)

    responder = InterruptSecondCell(lambda: None)
    finished: dict = {}
    with endpoint(responder) as (url, _seen):
        try:
            with pytest.raises(asyncio.CancelledError):
                asyncio.run(sweep(finished))
        finally:
            responder.released.set()
    assert list(finished) == [0] and finished[0]["seed"] == 7
    assert session_folders(tmp_path) == [Path(finished[0]["out"]).name]


def test_ctrl_c_on_one_cell_says_so_in_one_line_and_exits_130(tmp_path, capsys):
    responder = InterruptSecondCell(ctrl_c)
    responder.firsts = 1  # the first request of the only cell is the one held
    with endpoint(responder) as (url, _seen):
        try:
            code = main(["agent", "--model", "stub", "--base-url", url, "--task", TASK, "--seed", "7",
                         "--max-turns", "2", "--trials", str(tmp_path)])
        finally:
            responder.released.set()
    out, err = capsys.readouterr()
    assert code == 130 and out == "" and "Traceback" not in err
    assert err.splitlines()[-1] == (f"storebench agent: interrupted: {TASK}/7 was not finished and no trial folder "
                                    "was written")
    assert session_folders(tmp_path) == []

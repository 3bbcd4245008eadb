"""A ``--state`` folder under the faults a real server meets: a kill between writing a trial
folder and marking the session settled, a session folder that cannot be resumed, a disk
that refuses a write, lines after a stop, two servers on one folder, and oversized calls."""
from __future__ import annotations

import asyncio
import errno
import json
import os

import pytest

from environment.api import arm
from mcp_client.client import episode_client
from mcp_client.http import EpisodeHub, _hold_state
from mcp_client.server import MAX_ARGUMENT_BYTES, build_server
from mcp_client.sessions import CALLS, META, SETTLED, Session, SessionError, restore_session, stop_line

TASK = "short-runway"


def state_hub(tmp_path) -> EpisodeHub:
    return EpisodeHub(state=tmp_path / "state", out=tmp_path / "trials")


def calls_of(session: Session) -> list[dict]:
    assert session.state is not None
    return [json.loads(line) for line in (session.state / CALLS).read_text().splitlines()]


def test_a_session_killed_between_its_trial_folder_and_settled_json_is_settled_again_at_restart(tmp_path):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    session.episode.call("list_orders", {"page_size": 3})
    session.record()
    result = hub.end(session.id)
    assert session.state is not None
    (session.state / SETTLED).unlink()  # killed after the folder was in place, before settled.json
    restarted = state_hub(tmp_path)
    again = restarted.session(session.id)
    assert again.settled and not restarted.set_aside
    assert again.result is not None and again.result["reward_composite"] == result["reward_composite"]
    assert (session.state / SETTLED).exists() and len(list((tmp_path / "trials").iterdir())) == 1


def test_a_session_whose_task_file_changed_is_set_aside_and_the_others_are_resumed(tmp_path):
    hub = state_hub(tmp_path)
    token_a, changed = hub.open_session(TASK, 7)
    _token_b, kept = hub.open_session(TASK, 11)
    assert changed.state is not None
    meta = json.loads((changed.state / META).read_text())
    meta["task_file_hash"] = "0" * 64
    (changed.state / META).write_text(json.dumps(meta))
    restarted = state_hub(tmp_path)
    assert list(restarted.set_aside) == [changed.state]
    assert "the task file of short-runway changed since the session opened" in restarted.set_aside[changed.state]
    assert [s.id for s in restarted.sessions()] == [kept.id]
    assert "could not be resumed when this server started" in (restarted.ended(token_a) or "")


def test_a_session_whose_log_is_corrupt_is_set_aside(tmp_path):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    assert session.state is not None
    session.close_log()
    (session.state / CALLS).write_text('{"tool": "list_orders", "arguments": {}}\n{not json}\n')
    restarted = state_hub(tmp_path)
    assert restarted.set_aside[session.state].startswith("JSONDecodeError: ")


def test_a_write_the_disk_refuses_is_taken_back_and_written_with_the_next_call(tmp_path, monkeypatch):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    real_write = os.write
    calls = {"n": 0}

    def half_then_full(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            real_write(fd, data[: len(data) // 2])  # a torn half line, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    session.episode.call("list_orders", {"page_size": 3})
    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(SessionError, match="its call log could not be written \\(No space left on device\\)"):
        session.record()
    assert session.state is not None and (session.state / CALLS).read_text() == ""  # taken back whole
    session.episode.call("list_returns", {})
    session.record()  # the disk takes it again: both calls, in order
    assert [row["tool"] for row in calls_of(session)] == ["list_orders", "list_returns"]
    session.close_log()
    restored, _digest = restore_session(session.state, out=None)
    restored.close_log()
    assert restored.episode.ops_left == session.episode.ops_left


def test_nothing_is_logged_after_a_stop_and_a_restore_ends_at_the_first_stop(tmp_path):
    session = Session.open(TASK, 7, out=None, state_root=tmp_path)
    session.episode.call("list_orders", {"page_size": 3})
    session.record()
    session._append([stop_line("operator")], sync=True)
    session.episode.stop()
    session.episode.call("set_price", {"product_id": "PRD-001", "price": "10.00"})  # refused: store closed
    session.record()
    assert [row.get("tool", "stop") for row in calls_of(session)] == ["list_orders", "stop"]
    # a log an older server wrote on past its stop: the lines after the stop are no calls
    assert session.state is not None
    with (session.state / CALLS).open("a") as fh:
        fh.write(json.dumps({"tool": "end_window", "arguments": {}}) + "\n")
    session.close_log()
    restored, _digest = restore_session(session.state, out=None)
    restored.close_log()
    assert restored.episode.over and restored.stopped_by == "operator" and restored.episode.window == 0


def test_a_session_without_trial_folders_is_marked_settled_and_closes_its_log(tmp_path):
    hub = EpisodeHub(state=tmp_path / "state", write_trials=False)
    _token, session = hub.open_session(TASK, 7)
    hub.end(session.id)
    assert session.state is not None and session._fd is None
    assert json.loads((session.state / SETTLED).read_text()) == {"out": None}
    assert EpisodeHub(state=tmp_path / "state", write_trials=False).session(session.id).settled


def test_a_second_server_on_one_state_folder_is_refused(tmp_path):
    held = _hold_state(tmp_path / "state")
    try:
        with pytest.raises(SessionError, match=f"--state {tmp_path / 'state'} is in use by another storebench mcp "
                                               "server; stop it first, or give this one another --state folder"):
            _hold_state(tmp_path / "state")
    finally:
        assert held is not None
        os.close(held)
    again = _hold_state(tmp_path / "state")  # free once the first is gone
    assert again is not None
    os.close(again)


def test_a_call_over_the_size_limit_is_refused_before_the_store():
    from mcp import MCPError
    from mcp.types import INVALID_PARAMS

    episode = arm(TASK, 7, record=True)

    async def play():
        async with episode_client(build_server(lambda: episode)) as client:
            with pytest.raises(MCPError) as refused:
                await client.client.call_tool("store_status", {"padding": "x" * MAX_ARGUMENT_BYTES})
            small = await client.call("store_status", {})
            return refused.value, small

    error, small = asyncio.run(play())
    assert error.code == INVALID_PARAMS
    assert error.error.message == (f"the arguments of 'store_status' take {MAX_ARGUMENT_BYTES + 14:,} bytes; a call's "
                                   f"arguments may take at most {MAX_ARGUMENT_BYTES:,} (no tool needs more): nothing "
                                   "was sent to the store")
    assert not small.is_error and [e["tool"] for e in episode.action_log] == ["store_status"]  # the big one: not logged

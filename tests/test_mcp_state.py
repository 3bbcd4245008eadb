"""A ``--state`` folder under the faults a real server meets: a kill between writing a trial
folder and marking the session settled, a session folder that cannot be resumed, a disk
that refuses a write (a call's log line, or the settlement a call reached), lines after a
stop, two servers on one folder, a server stopped while a call still writes, and oversized
calls; and what a restart keeps of a settled session (its record, never a replay of its log)."""
from __future__ import annotations

import asyncio
import errno
import fcntl
import io
import json
import logging
import os
import socket
import threading
from pathlib import Path

import httpx2
import pytest

from environment.api import arm
from mcp_client import http, sessions
from mcp_client.client import episode_client
from mcp_client.http import CannotListen, EpisodeHub, _held_state, create_app, running, serve_http
from mcp_client.server import MAX_ARGUMENT_BYTES, build_server
from mcp_client.sessions import (
    CALLS,
    ENDED,
    META,
    SETTLED,
    Session,
    SessionError,
    SettledSession,
    restore_session,
    stop_line,
)

TASK = "short-runway"
OPERATOR = "operator-secret-for-tests-0123456789"


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


def test_a_restart_reads_each_session_folders_meta_once_even_when_it_sets_the_session_aside(tmp_path, monkeypatch):
    hub = state_hub(tmp_path)
    token, changed = hub.open_session(TASK, 7)
    assert changed.state is not None
    meta = json.loads((changed.state / META).read_text())
    meta["task_file_hash"] = "0" * 64
    (changed.state / META).write_text(json.dumps(meta))
    real_read_text = Path.read_text
    metas_read = []

    def counted(path, *args, **kwargs):
        if path.name == META:
            metas_read.append(path)
        return real_read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    restarted = state_hub(tmp_path)
    assert metas_read == [changed.state / META]
    assert "could not be resumed when this server started" in (restarted.ended(token) or "")


def test_a_session_whose_log_is_corrupt_is_set_aside(tmp_path):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    assert session.state is not None
    session.close_log()
    (session.state / CALLS).write_text('{"tool": "list_orders", "arguments": {}}\n{not json}\n')
    restarted = state_hub(tmp_path)
    assert restarted.set_aside[session.state].startswith("JSONDecodeError: ")


def _disk_full_for_one_write(monkeypatch, *, torn: bool) -> None:
    """The next ``os.write`` fails as a full disk does (after writing half its data when
    ``torn``); later writes go through."""
    real_write = os.write
    refused = {"once": True}

    def full_once(fd, data):
        if refused.pop("once", False):
            if torn:
                real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_once)


def _a_call_the_disk_refused(tmp_path, monkeypatch, *, torn: bool) -> Session:
    """A live session whose list_orders call the disk refused to log."""
    _token, session = state_hub(tmp_path).open_session(TASK, 7)
    session.episode.call("list_orders", {"page_size": 3})
    _disk_full_for_one_write(monkeypatch, torn=torn)
    with pytest.raises(SessionError, match="its call log could not be written \\(No space left on device\\)"):
        session.record()
    return session


def test_a_write_the_disk_refuses_is_taken_back_and_written_with_the_next_call(tmp_path, monkeypatch):
    session = _a_call_the_disk_refused(tmp_path, monkeypatch, torn=True)
    assert session.state is not None and (session.state / CALLS).read_text() == ""  # taken back whole
    session.episode.call("list_returns", {})
    session.record()  # the disk takes it again: both calls, in order
    assert [row["tool"] for row in calls_of(session)] == ["list_orders", "list_returns"]
    session.close_log()
    restored, _digest = restore_session(session.state, out=None)
    restored.close_log()
    assert restored.episode.ops_left == session.episode.ops_left


def test_an_end_after_a_refused_write_logs_the_call_before_its_stop(tmp_path, monkeypatch):
    session = _a_call_the_disk_refused(tmp_path, monkeypatch, torn=False)
    session.end(ended_by="operator")  # the disk takes writes again
    assert [row.get("tool", "stop") for row in calls_of(session)] == ["list_orders", "stop"]


def test_when_the_call_that_reached_the_horizon_was_not_logged_the_end_logs_it(tmp_path, monkeypatch):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    for _ in range(session.episode.n_windows - 1):
        session.episode.call("end_window", {})
        session.record()
    session.episode.call("end_window", {})  # the horizon
    _disk_full_for_one_write(monkeypatch, torn=False)
    with pytest.raises(SessionError, match="its call log could not be written"):
        session.record()
    assert session.episode.over and not session.settled
    hub.end(session.id)  # what the operator's settle does
    assert len(calls_of(session)) == len(session.episode.action_log)  # no stop: the store ended by itself
    (session.state / ENDED).unlink()  # as if killed before its record: the restart replays the log
    (session.state / SETTLED).unlink()
    kept = state_hub(tmp_path).session(session.id)
    assert kept.settled and kept.as_json()["calls"] == len(session.episode.action_log)


def _refuse_replace_onto(monkeypatch, name: str) -> None:
    """Writing the file ``name`` (moved into place by ``Path.replace``) fails as a full disk does."""
    real_replace = Path.replace

    def full(self, target):
        if Path(target).name == name:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", full)


def test_a_record_the_disk_refuses_leaves_the_session_unsettled_and_ending_it_again_settles_it(tmp_path,
                                                                                                monkeypatch):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    _refuse_replace_onto(monkeypatch, ENDED)
    with pytest.raises(SessionError, match="was graded but could not be marked settled \\(No space left on device\\)"
                                           ": free the disk under --state, then end it again"):
        hub.end(session.id)
    assert not session.settled and not (session.state / SETTLED).exists()
    monkeypatch.undo()
    score = hub.end(session.id)
    assert session.settled and json.loads((session.state / SETTLED).read_text()) == score


def test_the_record_a_server_keeps_is_the_one_its_settlement_wrote(tmp_path):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    session.end(ended_by="operator")
    session.episode.call("store_status", {})  # a call that was waiting behind the end, answered after it
    assert session.state is not None
    assert session.settled_record().view == json.loads((session.state / ENDED).read_text())


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
    with _held_state(tmp_path / "state"):
        with pytest.raises(SessionError, match=f"--state {tmp_path / 'state'} is in use by another storebench mcp "
                                               "server; stop it first, or give this one another --state folder"):
            with _held_state(tmp_path / "state"):
                pass
    with _held_state(tmp_path / "state"):  # free once the first is gone
        pass


def test_a_failed_start_lets_go_of_the_state_folder(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(CannotListen):
            serve_http("127.0.0.1", taken.getsockname()[1], [], state=tmp_path / "state")
    finally:
        taken.close()
    with _held_state(tmp_path / "state"):  # the next start may have it
        pass


# --- settled sessions: kept as a record, never replayed -----------------------------------------------------


def settled_session(hub: EpisodeHub) -> tuple[str, Session]:
    """A session with a few calls (one a new window), ended by the operator; its token and the session."""
    token, session = hub.open_session(TASK, 7, labels={"model": "m", "metrics": {"total_tokens": 12}})
    for name, args in [("list_orders", {"page_size": 3}), ("end_window", {}), ("store_status", {})]:
        session.episode.call(name, args)
        hub.after_call(session.episode)
    hub.end(session.id)
    return token, session


def operator_answers(hub: EpisodeHub, session_id: str) -> list[tuple[int, dict]]:
    """What the operator API answers about a settled session: listed, read, relabelled, ended, settled."""
    with running(create_app(hub, operator_token=OPERATOR)) as port:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                           headers={"Authorization": f"Bearer {OPERATOR}"}) as http:
            one = f"/operator/sessions/{session_id}"
            answers = [http.get("/operator/sessions"), http.get(one), http.post(f"{one}/labels", json={"harness": "h"}),
                       http.post(f"{one}/end", json={"labels": {"harness": "h"}}), http.post(f"{one}/end"),
                       http.post(f"{one}/settle")]
    return [(answer.status_code, answer.json()) for answer in answers]


def test_a_restart_keeps_a_settled_session_without_replaying_it_and_still_refuses_its_token(tmp_path):
    hub = state_hub(tmp_path)
    token, session = settled_session(hub)
    before = operator_answers(hub, session.id)
    refusal = hub.ended(token)
    assert session.state is not None
    (session.state / CALLS).write_text("{not json}\n")  # a replay would set the session aside
    restarted = state_hub(tmp_path)
    kept = restarted.session(session.id)
    assert not restarted.set_aside and isinstance(kept, SettledSession)  # no episode behind it
    assert restarted.settled_at_start == {session.id} and kept.result == session.result
    assert restarted.access_token(token) is None
    assert refusal is not None and refusal.startswith("the episode behind this token has ended")
    assert restarted.ended(token) == refusal
    assert operator_answers(restarted, session.id) == before


def test_a_session_settled_before_ended_json_is_replayed_once_and_then_kept_as_a_record(tmp_path):
    hub = state_hub(tmp_path)
    token, session = settled_session(hub)
    assert session.state is not None
    (session.state / ENDED).unlink()  # settled by a server from before ended.json
    once = state_hub(tmp_path)
    assert isinstance(once.session(session.id), SettledSession)
    assert json.loads((session.state / ENDED).read_text()) == json.loads(json.dumps(session.as_json()))
    (session.state / CALLS).write_text("{not json}\n")  # a second replay would set it aside
    twice = state_hub(tmp_path)
    assert not twice.set_aside and twice.session(session.id).as_json() == once.session(session.id).as_json()
    assert twice.ended(token) == hub.ended(token)


def test_a_session_settled_at_the_restart_is_kept_as_a_record(tmp_path):
    session = Session.open(TASK, 7, out=tmp_path / "trials", state_root=tmp_path / "state" / "sessions")
    session._append([stop_line("operator")], sync=True)  # the process died after logging the stop, before settling
    session.close_log()
    restarted = state_hub(tmp_path)
    kept = restarted.session(session.id)
    assert isinstance(kept, SettledSession) and kept.as_json()["settled"] and kept.as_json()["over"]
    assert json.loads((tmp_path / "state" / "sessions" / session.id / ENDED).read_text()) == kept.as_json()


def test_the_start_benchmark_runs_and_prints_its_figures():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmarks.mcp_state", "--sessions", "1", "--windows", "1",
                           "--runs", "1", "--json"], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert (figures["empty"]["sessions"], figures["settled"]["sessions"], figures["settled"]["set_aside"]) == (0, 1, 0)


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



def test_an_earlier_trial_folder_that_cannot_be_removed_leaves_the_session_unsettled_saying_so(tmp_path, monkeypatch):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    assert session.folder is not None
    session.folder.mkdir(parents=True)  # left by a settlement killed before its settled.json

    def busy(path, *args, **kwargs):
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(sessions.shutil, "rmtree", busy)
    with pytest.raises(SessionError, match=f"session {session.id} could not be settled: its earlier trial folder "
                                           f".* could not be removed \\(Device or resource busy\\); remove it, then "
                                           "end the session again"):
        hub.end(session.id)
    assert not session.settled
    monkeypatch.undo()
    hub.end(session.id)
    assert session.settled and (session.state / SETTLED).exists()

# --- a settlement the disk refuses at the horizon -------------------------------------------------------------


def test_a_settlement_the_disk_refuses_at_the_horizon_leaves_the_call_its_answer_and_the_session_unsettled(
        tmp_path, monkeypatch, caplog):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    twin = arm(TASK, 7, record=True)  # the same calls on a store of its own: the answer the call must get
    for _ in range(session.episode.n_windows - 1):
        session.episode.call("end_window", {})
        hub.after_call(session.episode)
        twin.call("end_window", {})
    expected = twin.call("end_window", {}).text()
    _refuse_replace_onto(monkeypatch, ENDED)

    async def the_call_that_reaches_the_horizon():
        async with episode_client(build_server(lambda: session.episode, after_call=hub.after_call)) as client:
            return await client.call("end_window", {})

    with caplog.at_level(logging.ERROR, logger="mcp_client.sessions"):
        answer = asyncio.run(the_call_that_reaches_the_horizon())
    assert not answer.is_error and answer.text == expected
    assert session.state is not None and session.episode.over and not session.settled
    assert not (session.state / SETTLED).exists() and isinstance(hub.session(session.id), Session)
    assert len(calls_of(session)) == len(session.episode.action_log)  # the call is logged all the same
    assert caplog.messages == [
        f"session {session.id} reached its end (horizon) in a call that was answered and logged, but it is not "
        f"settled: session {session.id} was graded but could not be marked settled (No space left on device): free "
        "the disk under --state, then end it again (it is graded again the same way); a restart of the server on "
        "its --state folder settles it too"]
    monkeypatch.undo()  # the disk has room again
    session.close_log()
    restarted = state_hub(tmp_path).session(session.id)
    assert restarted.settled and restarted.as_json()["calls"] == len(session.episode.action_log)


def test_a_revoked_marker_the_disk_refuses_does_not_fail_the_call_that_settled_the_session(tmp_path, monkeypatch):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    real_touch = Path.touch

    def full(self, *args, **kwargs):
        if self.name == "revoked":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_touch(self, *args, **kwargs)

    monkeypatch.setattr(Path, "touch", full)
    for _ in range(session.episode.n_windows):
        session.episode.call("end_window", {})
        hub.after_call(session.episode)  # the last one settles the session, then its marker is refused
    assert session.settled and isinstance(hub.session(session.id), SettledSession)
    assert session.state is not None and (session.state / SETTLED).exists()


# --- a server stopped while a call still writes into its state folder -----------------------------------------


def _held_back_record(monkeypatch, tool: str) -> tuple[threading.Event, threading.Event, list[str]]:
    """``Session.record`` of a call of ``tool`` (its log line) waits until allowed: it sets the first
    event once it waits, and goes on when the second is set; "written" is noted once it has written."""
    writing, may_write, done = threading.Event(), threading.Event(), []
    real_record = Session.record

    def held_back(self):
        if self.episode.action_log[-1]["tool"] == tool:
            writing.set()
            may_write.wait(60)
        real_record(self)
        done.append("written")

    monkeypatch.setattr(Session, "record", held_back)
    return writing, may_write, done


def test_a_stopping_hub_waits_for_the_write_in_progress_and_refuses_any_later_one(tmp_path, monkeypatch):
    hub = state_hub(tmp_path)
    _token, session = hub.open_session(TASK, 7)
    writing, may_write, order = _held_back_record(monkeypatch, "list_orders")
    session.episode.call("list_orders", {"page_size": 3})
    call = threading.Thread(target=hub.after_call, args=(session.episode,))
    call.start()
    assert writing.wait(60)
    left: list[int] = []
    stopping = threading.Thread(target=lambda: left.append(hub.stop_writing(60, then=lambda: order.append("released"))))
    stopping.start()
    may_write.set()
    call.join(60)
    stopping.join(60)
    assert left == [0] and order == ["written", "released"]
    session.episode.call("list_returns", {})  # answered by a stopping server: not kept
    for write in (lambda: hub.after_call(session.episode), lambda: hub.end(session.id),
                  lambda: hub.set_labels(session.id, {"model": "m"}), lambda: hub.open_session(TASK, 8)):
        with pytest.raises(SessionError, match="the server is stopping and writes nothing more"):
            write()
    assert [row["tool"] for row in calls_of(session)] == ["list_orders"] and not session.settled
    assert [folder.name for folder in (tmp_path / "state" / "sessions").iterdir()] == [session.id]


class _Printed(io.StringIO):
    """What serve_http prints; ``flushed`` is set once it has printed a line."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = threading.Event()

    def flush(self) -> None:
        super().flush()
        self.flushed.set()


@pytest.mark.slow
def test_a_server_stopped_while_a_call_writes_keeps_its_state_folder_locked_until_the_write_lands(
        tmp_path, monkeypatch, caplog):
    state = tmp_path / "state"
    uvicorns = []
    real_uvicorn = http._uvicorn_server

    def kept(*args, **kwargs):
        uvicorns.append(real_uvicorn(*args, **kwargs))
        return uvicorns[-1]

    monkeypatch.setattr(http, "_uvicorn_server", kept)
    # The server gives up waiting at once: the lock must stay all the same, until the write has landed.
    monkeypatch.setattr(http, "WRITES_GRACE", 0.0)
    writing, may_write, _written = _held_back_record(monkeypatch, "list_orders")
    printed = _Printed()
    serving = threading.Thread(target=serve_http, args=("127.0.0.1", 0, [(TASK, 7)]),
                               kwargs={"out": printed, "state": state, "trials": tmp_path / "trials"})
    serving.start()
    assert printed.flushed.wait(60)
    _task, _seed, _s, url, *_auth, token = printed.getvalue().splitlines()[0].split()
    failures: list[BaseException] = []

    def agent() -> None:  # the socket listens already: the request waits in its backlog until uvicorn serves
        async def call():
            async with episode_client(url, token=token) as client:
                await client.call("list_orders", {"page_size": 3})

        try:
            asyncio.run(call())
        except Exception as exc:  # the server stops under the call: its answer never comes
            failures.append(exc)

    calling = threading.Thread(target=agent, daemon=True)
    calling.start()
    assert writing.wait(60)  # the call is on a worker thread, about to write its log line
    uvicorns[0].should_exit = True
    serving.join(60)
    assert not serving.is_alive()  # serve_http has returned, the call still writing
    with pytest.raises(SessionError, match="is in use by another storebench mcp server"):
        with _held_state(state):
            pass
    assert "list_orders" not in (next((state / "sessions").iterdir()) / CALLS).read_text()
    may_write.set()
    fd = os.open(state / "lock", os.O_RDWR)
    try:
        taking = threading.Thread(target=fcntl.flock, args=(fd, fcntl.LOCK_EX), daemon=True)  # returns once the lock is free
        taking.start()
        taking.join(60)
        assert not taking.is_alive()
        assert "list_orders" in (next((state / "sessions").iterdir()) / CALLS).read_text()
    finally:
        os.close(fd)
    assert ("1 call(s) or operator request(s) were still writing after the server stopped; gave up waiting after "
            f"0 s (the lock on --state {state} is kept until they finish, or until the process ends)") in caplog.messages

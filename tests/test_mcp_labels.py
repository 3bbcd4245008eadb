"""Who may set a trial's labels (``mcp_client.sessions``, "Labels and who may set them").

The server's own labels (``env``, ``ended_by``) are refused from everyone else; the
operator's (``--model``, ``--harness`` on stdio) are never replaced by what the playing
side reports (stdio's ``--labels-file``); a labels file the server cannot use is left out
with a line saying why, and the episode is still graded and written.  The operator's labels
wait for a busy session (a call being logged, a settlement) off the event loop.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client

from environment.api import arm
from mcp_client.client import episode_client
from mcp_client.http import EpisodeHub, create_app, running, settle_at_exit
from mcp_client.sessions import META, STOP, Session, SessionError, restore_session, stop_line

REPO = Path(__file__).resolve().parent.parent
TASK = "short-runway"
OPERATOR = "operator-secret-for-tests-0123456789"
SERVERS_OWN = ("label(s) ended_by are the server's own: env is storebench-mcp and ended_by is how the episode "
               "ended (horizon, suspended, or who stopped it: client, operator or server), written when it settles; leave it out")


def summary_of(trials: Path) -> dict:
    (folder,) = trials.iterdir()
    return json.loads((folder / "summary.json").read_text())


# A host's whole conversation: the handshake, one free call, then it hangs up (a host that calls no
# tool leaves no trial).
ONE_CALL = "".join(json.dumps(message) + "\n" for message in [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "store_status", "arguments": {}}}])


def stdio_hang_up(tmp_path: Path, labels: object) -> subprocess.CompletedProcess:
    """``storebench mcp`` on stdio with --model/--harness and a labels file, whose host makes one call and
    hangs up."""
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels))
    return subprocess.run(
        [sys.executable, "-m", "mcp_client", "mcp", "--task", TASK, "--seed", "7", "--trials", str(tmp_path / "trials"),
         "--model", "fake-model", "--harness", "pytest", "--labels-file", str(path)],
        cwd=REPO, input=ONE_CALL, capture_output=True, text=True, timeout=120)


def test_the_servers_own_labels_are_refused_from_the_operator():
    session = Session.open(TASK, 7, out=None, state_root=None)
    with pytest.raises(SessionError) as caught:
        session.set_labels({"ended_by": "horizon"})
    assert caught.value.message == SERVERS_OWN
    assert session.labels == {}


@contextlib.contextmanager
def operator_api() -> Iterator[tuple[httpx2.Client, dict]]:
    """An HTTP server's operator API with one session opened: the client, and the session as opened."""
    with running(create_app(EpisodeHub(), operator_token=OPERATOR)) as port:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {OPERATOR}"},
                           timeout=30) as http:
            yield http, http.post("/operator/sessions", json={"task": TASK, "seed": 7}).json()


def test_the_operator_api_refuses_a_forged_ended_by():
    with operator_api() as (http, opened):
        forged = http.post(f"/operator/sessions/{opened['id']}/labels", json={"ended_by": "horizon"})
    assert forged.status_code == 400
    assert forged.json()["error"] == {"code": "session_error", "message": SERVERS_OWN}


def test_the_operator_api_refuses_a_label_sent_beside_labels_at_the_end_and_a_body_nested_too_deep():
    with operator_api() as (http, opened):
        stray = http.post(f"/operator/sessions/{opened['id']}/end", json={"model": "m"})
        deep = http.post("/operator/sessions", content=b"[" * 20_000 + b"]" * 20_000,
                         headers={"Content-Type": "application/json"})
        still_open = http.get(f"/operator/sessions/{opened['id']}").json()
    assert stray.status_code == 400
    assert stray.json()["error"]["message"] == ("unknown field(s) model; the end takes labels only, e.g. "
                                                '{"labels": {"model": "m"}}')
    assert deep.status_code == 400
    assert deep.json()["error"]["message"] == "the request body is nested too deeply; labels and options are flat objects"
    assert not still_open["settled"]


class WatchedLock:
    """A session's lock that says when someone starts waiting for it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.wanted = threading.Event()

    def __enter__(self) -> WatchedLock:
        self.wanted.set()
        self.lock.acquire()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.lock.release()


def test_operator_labels_wait_for_a_busy_session_without_holding_up_the_server():
    hub = EpisodeHub()
    _token, session = hub.open_session(TASK, 7)
    watched = WatchedLock()
    session._lock = watched  # type: ignore[assignment]
    with running(create_app(hub, operator_token=OPERATOR)) as port, ThreadPoolExecutor(1) as pool:
        def client() -> httpx2.Client:
            return httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                                 headers={"Authorization": f"Bearer {OPERATOR}"})

        with client() as labeller, client() as reader:
            watched.lock.acquire()  # a call being logged, or a settlement, holds the session
            try:
                labelled = pool.submit(labeller.post, f"/operator/sessions/{session.id}/labels", json={"model": "m"})
                assert watched.wanted.wait(30)
                listed = reader.get("/operator/sessions")  # answered while the labels wait (it hung before)
            finally:
                watched.lock.release()
            assert listed.status_code == 200 and listed.json()["sessions"][0]["labels"] == {}
            assert labelled.result().status_code == 200
    assert session.labels == {"model": "m"}


def test_the_playing_side_adds_labels_but_never_replaces_the_operators():
    session = Session.open(TASK, 7, out=None, state_root=None, labels={"model": "fake-model", "harness": "pytest"})
    kept = session.add_client_labels({"model": "human expert", "harness": "console", "metrics": {"total_tokens": 7}})
    assert kept == ["harness", "model"]
    assert session.labels == {"model": "fake-model", "harness": "pytest", "metrics": {"total_tokens": 7}}


def test_a_stdio_labels_file_cannot_rename_the_model_or_the_harness(tmp_path):
    done = stdio_hang_up(tmp_path, {"model": "human expert", "harness": "console", "metrics": {"total_tokens": 7}})
    assert done.returncode == 0, done.stderr
    assert (f"storebench: --labels-file {tmp_path / 'labels.json'} sets harness, model, which the command line "
            "gave; the command line's kept\n") in done.stderr
    summary = summary_of(tmp_path / "trials")
    assert (summary["model"], summary["harness"], summary["metrics"]) == ("fake-model", "pytest", {"total_tokens": 7})


def test_a_stdio_labels_file_cannot_say_how_the_episode_ended(tmp_path):
    done = stdio_hang_up(tmp_path, {"ended_by": "horizon"})
    assert done.returncode == 0, done.stderr
    assert f"storebench: --labels-file {tmp_path / 'labels.json'}: {SERVERS_OWN}; labels left out\n" in done.stderr
    summary = summary_of(tmp_path / "trials")
    assert (summary["ended_by"], summary["env"], summary["termination"]) == ("client", "storebench-mcp", "stopped")


def test_a_stdio_labels_file_the_server_refuses_still_leaves_the_graded_folder(tmp_path):
    done = stdio_hang_up(tmp_path, {"colour": "blue"})
    assert done.returncode == 0, done.stderr
    assert (f"storebench: --labels-file {tmp_path / 'labels.json'}: unknown label(s) colour; known: model, harness, "
            "context_policy, max_turns, turns_taken, metrics, ended_by, env; labels left out\n") in done.stderr
    assert summary_of(tmp_path / "trials")["model"] == "fake-model"


def test_a_stdio_labels_file_written_after_the_horizon_is_read_at_hang_up(tmp_path):
    labels = tmp_path / "labels.json"
    params = StdioServerParameters(
        command=sys.executable, cwd=str(REPO),
        args=["-m", "mcp_client", "mcp", "--task", TASK, "--seed", "7", "--trials", str(tmp_path / "trials"),
              "--labels-file", str(labels)])
    log = tmp_path / "stderr.txt"

    async def go():
        with log.open("w") as errlog:
            async with episode_client(stdio_client(params, errlog=errlog)) as client:
                for _ in range(arm(TASK, 7).n_windows):
                    await client.call("end_window")
                labels.write_text(json.dumps({"metrics": {"total_tokens": 7}}))  # as a harness does at the end

    asyncio.run(go())
    for _ in range(600):  # the server prints once its host has hung up
        if "storebench: wrote" in log.read_text():
            break
        time.sleep(0.05)
    summary = summary_of(tmp_path / "trials")
    assert (summary["ended_by"], summary["termination"], summary["metrics"]) == (
        "horizon", "horizon", {"total_tokens": 7})


def test_a_session_that_does_not_settle_by_itself_keeps_how_it_ended_when_it_is_ended(tmp_path):
    session = Session.open(TASK, 7, out=tmp_path, state_root=None)
    session.auto_settle = False
    while not session.episode.over:
        session.episode.call("end_window", {})
        session.record()
    assert not session.settled
    assert session.end()["out"] is not None
    assert summary_of(tmp_path)["ended_by"] == "horizon"


def test_a_restored_session_stopped_before_it_settled_still_ended_by_the_client(tmp_path):
    session = Session.open(TASK, 7, out=tmp_path / "trials", state_root=tmp_path / "state")
    session._append([STOP], sync=True)  # the process died after logging the stop, before settling
    session.close_log()
    restored, _token = restore_session(tmp_path / "state" / session.id, out=tmp_path / "trials")
    assert restored.episode.over and not restored.settled
    restored.end()
    assert summary_of(tmp_path / "trials")["ended_by"] == "client"


def test_a_session_the_operator_api_ends_was_ended_by_the_operator(tmp_path):
    hub = EpisodeHub(out=tmp_path)
    _token, session = hub.open_session(TASK, 7)
    hub.end(session.id)
    summary = summary_of(tmp_path)
    assert (summary["ended_by"], summary["termination"]) == ("operator", "stopped")


def test_sessions_a_stopping_server_settles_were_ended_by_the_server(tmp_path, capsys):
    hub = EpisodeHub(out=tmp_path)
    hub.open_session(TASK, 7)
    settle_at_exit(hub, durable=False)
    assert summary_of(tmp_path)["ended_by"] == "server stopped"


def test_a_stopping_server_settles_every_session_it_can_and_names_the_one_it_cannot(tmp_path, capsys):
    hub = EpisodeHub(out=tmp_path)
    _token, blocked = hub.open_session(TASK, 7)
    _token, fine = hub.open_session(TASK, 11)
    assert blocked.folder is not None
    blocked.folder.mkdir(parents=True)
    (blocked.folder / "in-the-way.txt").write_text("x")  # its trial folder cannot be written
    settled = settle_at_exit(hub, durable=False)
    assert settled == [fine] and fine.settled and not blocked.settled
    err = capsys.readouterr().err
    assert f"storebench: session {blocked.id} (short-runway seed 7) was not settled: " in err
    assert f"storebench: wrote {fine.result['out']}" in err


def test_a_session_stopped_before_a_restart_is_settled_at_the_restart_by_who_stopped_it(tmp_path):
    session = Session.open(TASK, 7, out=tmp_path / "trials", state_root=tmp_path / "state" / "sessions")
    session._append([stop_line("operator")], sync=True)  # the process died after logging the stop, before settling
    session.close_log()
    hub = EpisodeHub(state=tmp_path / "state", out=tmp_path / "trials")
    assert hub.session(session.id).settled
    assert summary_of(tmp_path / "trials")["ended_by"] == "operator"


def test_a_resumed_session_leaves_out_server_labels_an_older_server_stored(tmp_path):
    session = Session.open(TASK, 7, out=None, state_root=tmp_path, labels={"model": "m"})
    session.close_log()
    meta = json.loads((tmp_path / session.id / META).read_text())
    meta["labels"] = {"model": "m", "ended_by": "horizon"}
    (tmp_path / session.id / META).write_text(json.dumps(meta))
    resumed, _digest = restore_session(tmp_path / session.id, out=None)
    resumed.close_log()
    assert resumed.labels == {"model": "m"}


def test_a_stdio_labels_file_in_a_folder_that_does_not_exist_is_told_at_the_start(tmp_path):
    path = tmp_path / "no-such-folder" / "labels.json"
    done = subprocess.run(
        [sys.executable, "-m", "mcp_client", "mcp", "--task", TASK, "--seed", "7", "--trials", str(tmp_path / "trials"),
         "--labels-file", str(path)], cwd=REPO, input=ONE_CALL, capture_output=True, text=True, timeout=120)
    lines = done.stderr.splitlines()
    assert lines[0] == (f"storebench: --labels-file {path}: its folder {path.parent} does not exist yet; the labels "
                        "are read from that file when the host hangs up, so the harness must create it there (or fix "
                        "the path)")
    assert f"storebench: --labels-file {path} does not exist; labels left out" in lines  # and again at hang-up

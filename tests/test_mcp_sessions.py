"""Graded MCP sessions: every episode served over MCP ends as a trial folder.

Real servers in subprocesses (``python -m mcp_client mcp ...``, the ``storebench mcp``
command), real SDK clients.  What is checked:

* stdio: a host that hangs up leaves a folder with the labels given on the command line;
* HTTP: the operator API opens, lists, labels, ends and settles sessions behind its own
  token (an episode token is refused there, the operator token at ``/mcp``); the folder of
  a session ended through it is accepted by ``storebench regrade``, ``storebench replay``
  and ``manage.py import_trials``, and is byte-identical to the folder written by replaying
  its recorded calls (``storebench run``'s writer);
* a SIGKILLed server restarted on the same state folder serves every live session from
  where it was, with the same tokens, and the sessions continue to the same ledger as an
  uninterrupted twin.
"""
from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import signal
import subprocess
import sys
import weakref
from pathlib import Path

import httpx
import pytest
from mcp import StdioServerParameters

from environment.api import arm
from environment.calibration import load_calibration
from environment.trial import read_actions, run_trial
from mcp_client.client import episode_client
from mcp_client.http import EpisodeHub
from mcp_client.sessions import SettledSession

REPO = Path(__file__).resolve().parent.parent
CALIBRATION = REPO / "calibration" / "public.json"
OPERATOR = "operator-secret-for-tests-0123456789"
TASK = "short-runway"
ALL_FILES = ("actions.jsonl", "events.jsonl", "ledger.jsonl", "observations.jsonl.gz", "score.json",
             "windows.jsonl")


def run(coro):
    return asyncio.run(coro)


def storebench(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp_client", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, **kwargs)


class Server:
    """``storebench mcp --http`` in a subprocess with a state folder and the operator API."""

    def __init__(self, state: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_client", "mcp", "--http", "--port", "0", "--state", str(state),
             "--operator-token", OPERATOR], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line, printed = "", []
        while "operator API" not in line:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server did not start: {self.process.stderr.read()}")
            printed.append(line)
        self.operator = line.split()[-1]
        self.mcp = self.operator.replace("/operator/sessions", "/mcp")
        self.printed = printed  # what the start printed, the operator API's line last
        self.http = httpx.Client(headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=120)
        for _ in range(400):
            try:
                self.http.get(self.operator)
                break
            except httpx.TransportError:
                import time
                time.sleep(0.05)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.http.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.http.close()


@pytest.fixture
def server_factory(tmp_path):
    servers = []

    def start() -> Server:
        server = Server(tmp_path / "state")
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.process.poll() is None:
            server.stop()


async def play(url: str, token: str, calls: list[tuple[str, dict]]) -> list:
    async with episode_client(url, token=token) as client:
        return [await client.call(name, args) for name, args in calls]


CALLS = [("store_status", {}), ("list_orders", {"page_size": 5}), ("list_inventory", {"page_size": 3}),
         ("set_price", {"product_id": "nope", "price": 10}), ("end_window", {}), ("list_returns", {})]


# --- stdio ---------------------------------------------------------------------------------------------------


def test_a_stdio_session_leaves_a_labelled_graded_folder(tmp_path):
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"metrics": {"prompt_tokens": 1200, "completion_tokens": 80}}))
    params = StdioServerParameters(
        command=sys.executable, cwd=str(REPO),
        args=["-m", "mcp_client", "mcp", "--task", TASK, "--seed", "7", "--trials", str(tmp_path / "trials"),
              "--model", "fake-model", "--harness", "pytest", "--labels-file", str(labels)])

    async def go():
        async with episode_client(params) as client:
            return [await client.call(name, args) for name, args in CALLS]

    outcomes = run(go())
    assert [o.is_error for o in outcomes] == [False, False, False, True, False, False]
    (folder,) = (tmp_path / "trials").iterdir()
    assert re.fullmatch(rf"{TASK}__s7__[0-9a-f]{{8}}", folder.name)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["model"] == "fake-model" and summary["harness"] == "pytest"
    assert summary["metrics"] == {"prompt_tokens": 1200, "completion_tokens": 80}
    assert summary["ended_by"] == "client" and summary["termination"] == "stopped"
    assert storebench("replay", str(folder)).returncode == 0
    assert storebench("regrade", "--calibration", str(CALIBRATION), str(folder)).returncode == 0


def test_a_stdio_client_that_calls_no_tool_leaves_no_trial(tmp_path):
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO),
                                   args=["-m", "mcp_client", "mcp", "--task", TASK, "--seed", "7", "--trials",
                                         str(tmp_path / "trials")])

    async def go():
        async with episode_client(params) as client:
            return await client.tool_names()  # a host listing the tools, then hanging up

    assert len(run(go())) == 29
    assert not list((tmp_path / "trials").iterdir())
    garbage = subprocess.run([sys.executable, "-m", "mcp_client", "mcp", "--task", TASK, "--seed", "7", "--trials",
                              str(tmp_path / "trials")], input="garbage\n", capture_output=True, text=True, cwd=REPO,
                             timeout=60)
    assert garbage.returncode == 0 and garbage.stdout == "" and not list((tmp_path / "trials").iterdir())
    assert garbage.stderr.splitlines()[0] == (f"storebench: serving {TASK} seed 7 over MCP on stdin/stdout; its trial "
                                              f"folder goes under {tmp_path / 'trials'} when the client hangs up or "
                                              "the shift ends")
    assert garbage.stderr.splitlines()[-1] == "storebench: no tool was called, so no trial was written"


# --- HTTP: the operator API -----------------------------------------------------------------------------------


def test_a_server_with_no_episode_yet_names_its_mcp_endpoint(server_factory):
    server = server_factory()
    assert [line.split()[:2] for line in server.printed[:-1]] == [["MCP", server.mcp]]


def test_operator_api_needs_its_own_token(server_factory):
    server = server_factory()
    opened = server.http.post(server.operator, json={"task": TASK, "seed": 7})
    assert opened.status_code == 201
    token = opened.json()["token"]
    with httpx.Client(timeout=30) as anon:
        assert anon.get(server.operator).status_code == 401
        assert anon.get(server.operator, headers={"Authorization": f"Bearer {token}"}).status_code == 401
        assert anon.post(server.mcp, headers={"Authorization": f"Bearer {OPERATOR}"},
                         json={}).status_code == 401
    bad = server.http.post(server.operator, json={"task": "nope", "seed": 7})
    assert bad.status_code == 400 and "unknown task 'nope'" in bad.json()["error"]["message"]
    bad = server.http.post(server.operator, json={"task": TASK, "seed": "7"})
    assert bad.status_code == 400 and "seed as an integer" in bad.json()["error"]["message"]
    sid = opened.json()["id"]
    assert server.http.post(f"{server.operator}/{sid}/settle").status_code == 409
    assert server.http.post(f"{server.operator}/{sid}/labels", json={"colour": "x"}).status_code == 400
    assert server.http.get(f"{server.operator}/nope").status_code == 404


@pytest.mark.django_db
def test_an_http_session_ended_by_the_operator_is_a_trial_every_tool_accepts(server_factory, tmp_path):
    from django.core.management import call_command

    from explorer.models import Trial

    server = server_factory()
    opened = server.http.post(server.operator, json={"task": TASK, "seed": 11,
                                                     "labels": {"model": "m-1", "harness": "pytest"}}).json()
    outcomes = run(play(server.mcp, opened["token"], CALLS))
    assert [o.is_error for o in outcomes] == [False, False, False, True, False, False]
    labelled = server.http.post(f"{server.operator}/{opened['id']}/labels",
                                json={"metrics": {"total_tokens": 4321}})
    assert labelled.status_code == 200
    listed = server.http.get(server.operator).json()["sessions"]
    assert [(s["id"], s["calls"], s["settled"]) for s in listed] == [(opened["id"], len(CALLS), False)]
    ended = server.http.post(f"{server.operator}/{opened['id']}/end").json()
    assert ended["settled"] and ended["folder"]
    folder = Path(ended["folder"])
    # The token is revoked once the session is settled.
    with httpx.Client(timeout=30) as anon:
        assert anon.post(server.mcp, headers={"Authorization": f"Bearer {opened['token']}"},
                         json={}).status_code == 401
    summary = json.loads((folder / "summary.json").read_text())
    assert (summary["model"], summary["harness"], summary["metrics"]) == ("m-1", "pytest", {"total_tokens": 4321})

    assert storebench("replay", str(folder)).returncode == 0
    regraded = storebench("regrade", "--calibration", str(CALIBRATION), "--json", str(folder))
    assert regraded.returncode == 0, regraded.stdout
    call_command("import_trials", str(folder))
    assert Trial.objects.count() == 1

    # Byte-identical to replaying its calls through the writer of `storebench run`.
    doc, digest = load_calibration(CALIBRATION)
    twin = tmp_path / "twin"
    run_trial(TASK, 11, twin, actions=read_actions(folder / "actions.jsonl"), calibration=doc,
              calibration_hash=digest)
    for name in ALL_FILES:
        assert (folder / name).read_bytes() == (twin / name).read_bytes(), name
    manifest, twin_manifest = (json.loads((f / "manifest.json").read_text()) for f in (folder, twin))
    for name in ALL_FILES:
        assert manifest["files"][name] == twin_manifest["files"][name]
    assert manifest["suite"] == twin_manifest["suite"] and manifest["suite"].startswith("storebench-")


def test_a_session_that_reaches_its_horizon_settles_itself(server_factory):
    server = server_factory()
    opened = server.http.post(server.operator, json={"task": TASK, "seed": 7}).json()
    windows = arm(TASK, 7).n_windows
    outcomes = run(play(server.mcp, opened["token"], [("end_window", {})] * windows))
    assert not any(o.is_error for o in outcomes)
    (listed,) = server.http.get(server.operator).json()["sessions"]
    assert listed["settled"] and listed["over"]
    summary = json.loads((Path(listed["folder"]) / "summary.json").read_text())
    assert summary["ended_by"] == "horizon" and summary["termination"] == "horizon"
    assert storebench("replay", listed["folder"]).returncode == 0


def test_an_ended_episodes_token_is_refused_saying_the_episode_ended(server_factory):
    server = server_factory()
    opened = server.http.post(server.operator, json={"task": TASK, "seed": 7}).json()
    server.http.post(f"{server.operator}/{opened['id']}/end")
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with httpx.Client(timeout=30) as anon:
        refused = anon.post(server.mcp, json=listing, headers={
            "Authorization": f"Bearer {opened['token']}", "Accept": "application/json, text/event-stream"})
        made_up = anon.post(server.mcp, json=listing, headers={
            "Authorization": "Bearer made-up", "Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_token"
    assert refused.json()["error_description"].startswith("the episode behind this token has ended")
    assert made_up.status_code == 401 and "has ended" not in made_up.text


def test_operator_labels_are_checked_so_the_api_and_the_summary_stay_json(server_factory):
    server = server_factory()
    opened = server.http.post(server.operator, json={"task": TASK, "seed": 7}).json()
    labels = f"{server.operator}/{opened['id']}/labels"
    nan = server.http.post(labels, content=b'{"metrics": {"total_tokens": NaN}}')
    assert nan.status_code == 400 and nan.json()["error"]["message"].startswith("the request body is not JSON")
    for bad in ({"max_turns": "abc"}, {"turns_taken": -1}, {"env": 123}, {"model": "x" * 501},
                {"metrics": {"nested": {"a": 1}}}):
        assert server.http.post(labels, json=bad).status_code == 400, bad
    big = server.http.post(labels, content=b'{"model": "' + b"x" * 70_000 + b'"}')
    assert big.status_code == 413 and big.json()["error"]["code"] == "body_too_large"
    assert server.http.post(labels, json={"metrics": {"total_tokens": 1234, "cost": 0.5}}).status_code == 200
    assert server.http.get(server.operator).status_code == 200
    ended = server.http.post(f"{server.operator}/{opened['id']}/end").json()
    summary = json.loads((Path(ended["folder"]) / "summary.json").read_text())
    assert summary["metrics"] == {"total_tokens": 1234, "cost": 0.5}


def test_a_hub_told_to_write_no_trial_writes_none_beside_its_state(tmp_path):
    hub = EpisodeHub(state=tmp_path / "state", write_trials=False)
    token, session = hub.open_session(TASK, 7)
    hub.end(session.id)
    assert not (tmp_path / "state" / "trials").exists()


def test_a_hub_keeps_only_the_record_of_a_session_once_it_settles(tmp_path):
    hub = EpisodeHub(state=tmp_path / "state", write_trials=False)
    token, session = hub.open_session(TASK, 7)
    episode = weakref.ref(session.episode)
    hub.end(session.id)
    kept = hub.session(session.id)
    assert isinstance(kept, SettledSession) and kept.as_json() == session.as_json()
    assert hub.ended(token) is not None
    del session
    gc.collect()
    assert episode() is None  # the hub let go of the store it served


# --- durability ---------------------------------------------------------------------------------------------


def test_a_sigkilled_server_resumes_every_live_session(server_factory, tmp_path):
    first = server_factory()
    a = first.http.post(first.operator, json={"task": TASK, "seed": 7}).json()
    b = first.http.post(first.operator, json={"task": "steady", "seed": 13}).json()
    settled = first.http.post(first.operator, json={"task": TASK, "seed": 11}).json()
    first.http.post(f"{first.operator}/{settled['id']}/end")
    before_a = run(play(first.mcp, a["token"], CALLS))
    before_b = run(play(first.mcp, b["token"], CALLS[:3]))
    status_a = run(play(first.mcp, a["token"], [("store_status", {})]))[0]
    status_b = run(play(first.mcp, b["token"], [("store_status", {})]))[0]
    first.kill()

    second = server_factory()
    assert not any(line.startswith("MCP  ") for line in second.printed)  # each resumed session's line names it
    listed = {s["id"]: s for s in second.http.get(second.operator).json()["sessions"]}
    assert set(listed) == {a["id"], b["id"], settled["id"]}
    assert listed[settled["id"]]["settled"] and not listed[a["id"]]["settled"]
    # Same tokens, same stores: the free status reads exactly as before the kill.
    assert run(play(second.mcp, a["token"], [("store_status", {})]))[0] == status_a
    assert run(play(second.mcp, b["token"], [("store_status", {})]))[0] == status_b
    with httpx.Client(timeout=30) as anon:  # the settled session's token stays revoked
        assert anon.post(second.mcp, headers={"Authorization": f"Bearer {settled['token']}"},
                         json={}).status_code == 401
    after_a = run(play(second.mcp, a["token"], CALLS[1:]))
    ended = second.http.post(f"{second.operator}/{a['id']}/end").json()

    # An uninterrupted twin making the same calls in process ends with the same ledger.
    twin = arm(TASK, 7)
    seen = [twin.call(name, args) for name, args in CALLS + [("store_status", {})] * 2 + CALLS[1:]]
    twin.stop()
    ledger = (Path(ended["folder"]) / "ledger.jsonl").read_text()
    assert ledger == twin.ledger.to_jsonl()
    mine = before_a + after_a
    theirs = seen[:len(CALLS)] + seen[len(CALLS) + 2:]
    for outcome, result in zip(mine, theirs, strict=True):
        assert outcome.is_error == (not result.ok)
        assert outcome.text.endswith(result.text())
    assert not any(o.is_error for o in before_b)
    assert os.path.isdir(Path(ended["folder"]))


@pytest.mark.parametrize("fsync", [True, False])
def test_a_hub_on_the_same_state_rebuilds_each_live_session_exactly(tmp_path, fsync):
    first = EpisodeHub(state=tmp_path / "state", fsync=fsync)
    token, session = first.open_session(TASK, 7, labels={"model": "m"})
    for name, args in CALLS + [("get_order", "not an object")]:
        session.episode.call(name, args)
        first.after_call(session.episode)
    session.close_log()  # the first process is gone

    second = EpisodeHub(state=tmp_path / "state", fsync=fsync)
    (restored,) = second.sessions()
    assert restored.id == session.id and restored.labels == {"model": "m"}
    assert restored.episode.action_log == session.episode.action_log
    assert restored.episode.ledger.to_jsonl() == session.episode.ledger.to_jsonl()
    assert restored.episode.observations == session.episode.observations
    assert second.episode_for(token) is restored.episode  # the same token reaches it


def test_a_restart_opens_only_the_episodes_no_resumed_session_stands_for(tmp_path):
    from mcp_client.http import still_to_open

    first = EpisodeHub(state=tmp_path / "state", write_trials=False)
    _token, session = first.open_session(TASK, 7)
    session.close_log()  # the first process is gone; its supervisor runs the same command again
    second = EpisodeHub(state=tmp_path / "state", write_trials=False)
    asked = [(TASK, 7), (TASK, 7), (TASK, 11)]
    assert still_to_open(asked, second.sessions()) == [(TASK, 7), (TASK, 11)]
    assert still_to_open([(TASK, 11)], second.sessions()) == [(TASK, 11)]

"""QA findings on the baseline LLM runner (``storebench agent``), against stub endpoints on loopback.

- an endpoint that never answers a completion (connection refused, 500, text that is not
  JSON) plays nothing, so no trial folder is written and the command exits 1 saying so;
  one that fails after answering still gets its graded folder;
- a model that stops calling tools is reminded, given a last reminder after
  ``--max-idle-turns`` replies in a row, and the runner stops at the next one;
- ``--keep-turns`` is 0 or more;
- the printed JSON uses ``summary.json``'s names (``turns`` store calls, ``turns_taken``
  model turns).
"""
from __future__ import annotations

import asyncio
import io
import json
import socket
import subprocess
import sys
from pathlib import Path

from chat_stub import completion, endpoint

from mcp_client.agent import LAST_NUDGE, NUDGE, play

REPO = Path(__file__).resolve().parent.parent
TASK, SEED = "short-runway", 7

def text_only(_body: dict) -> tuple[int, bytes]:
    return completion({"role": "assistant", "content": "I would rather chat."})


def store_status(_body: dict) -> tuple[int, bytes]:
    return completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "store_status", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "list_orders", "arguments": '{"page_size": 2}'}}]})


def refused_url() -> str:
    """A loopback URL nobody listens on (a port just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def agent_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcp_client", "agent", "--model", "stub", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def run(base_url: str, trials: Path, **kw):
    return asyncio.run(play(TASK, SEED, model="stub", base_url=base_url, trials=trials, log=io.StringIO(), **kw))


# --- an endpoint that never answered ---------------------------------------------------------------------


def test_a_refused_connection_writes_no_trial_and_exits_1_saying_so(tmp_path):
    out = agent_cli("--base-url", refused_url(), "--trials", str(tmp_path / "trials"))
    assert out.returncode == 1
    assert "did not answer" in out.stderr
    assert "the endpoint never answered a completion, so nothing was played and no trial was written" in out.stderr
    assert list((tmp_path / "trials").iterdir()) == []


def test_an_endpoint_answering_500_writes_no_trial(tmp_path):
    with endpoint(lambda _body: (500, b'{"error": "boom"}')) as (base_url, _seen):
        result = run(base_url, tmp_path / "trials")
    assert result.ended_by == "endpoint error" and result.result is None and result.turns_taken == 0
    assert not (tmp_path / "trials").exists() or list((tmp_path / "trials").iterdir()) == []


def test_an_endpoint_answering_text_that_is_not_json_writes_no_trial(tmp_path):
    log = io.StringIO()
    with endpoint(lambda _body: (200, b"<html>not a completion</html>")) as (base_url, _seen):
        result = asyncio.run(play(TASK, SEED, model="stub", base_url=base_url, trials=tmp_path / "trials", log=log))
    assert result.result is None
    assert "answered something that is not a chat completion" in log.getvalue()
    assert log.getvalue().rstrip().endswith("no trial was written")


def test_an_endpoint_failing_after_answering_still_gets_its_graded_folder(tmp_path):
    answers = iter([store_status({}), (500, b"{}")])
    with endpoint(lambda _body: next(answers)) as (base_url, _seen):
        result = run(base_url, tmp_path / "trials")
    assert result.ended_by == "endpoint error" and result.turns_taken == 1
    summary = json.loads((Path(result.result["out"]) / "summary.json").read_text())
    assert summary["ended_by"] == "endpoint error" and summary["turns_taken"] == 1


# --- a model that stopped calling tools --------------------------------------------------------------------


def test_a_model_replying_only_text_is_stopped_after_the_last_reminder(tmp_path):
    with endpoint(text_only) as (base_url, seen):
        result = run(base_url, tmp_path / "trials")
    # Three idle replies (each reminded, the third with the last reminder), then one more: stop.
    assert result.turns_taken == len(seen) == 4 and result.ended_by == "no tool calls"
    assert [r["messages"][-1]["content"] for r in seen[1:]] == [NUDGE, NUDGE, LAST_NUDGE]


def test_the_idle_stop_is_recorded_in_the_trial_folder(tmp_path):
    with endpoint(text_only) as (base_url, _seen):
        result = run(base_url, tmp_path / "trials")
    summary = json.loads((Path(result.result["out"]) / "summary.json").read_text())
    assert (summary["ended_by"], summary["termination"], summary["turns_taken"]) == ("no tool calls", "stopped", 4)


def test_max_idle_turns_sets_how_many_idle_replies_come_before_the_last_reminder(tmp_path):
    with endpoint(text_only) as (base_url, seen):
        result = run(base_url, tmp_path / "trials", max_idle_turns=1)
    assert result.turns_taken == 2 and seen[1]["messages"][-1]["content"] == LAST_NUDGE


def test_a_tool_call_resets_the_idle_count(tmp_path):
    replies = iter([text_only, text_only, store_status, text_only, text_only, store_status])
    with endpoint(lambda body: next(replies)(body)) as (base_url, _seen):
        result = run(base_url, tmp_path / "trials", max_turns=6)
    assert result.turns_taken == 6 and result.ended_by == "turn cap"


def test_max_idle_turns_below_one_is_refused_with_one_line():
    out = agent_cli("--base-url", "http://127.0.0.1:9/v1", "--max-idle-turns", "0")
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == "storebench agent: error: argument --max-idle-turns: 0 is too small: give 1 or more"


def test_the_help_explains_max_idle_turns():
    out = subprocess.run([sys.executable, "-m", "mcp_client", "agent", "--help"], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert "--max-idle-turns" in out.stdout and 'ended_by "no tool calls"' in " ".join(out.stdout.split())


# --- --keep-turns ---------------------------------------------------------------------------------------------


def test_a_negative_keep_turns_is_refused_with_one_line():
    out = agent_cli("--base-url", "http://127.0.0.1:9/v1", "--keep-turns", "-1")
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == "storebench agent: error: argument --keep-turns: -1 is too small: give 0 or more"


def test_keep_turns_zero_sends_no_earlier_turn(tmp_path):
    with endpoint(store_status) as (base_url, seen):
        run(base_url, tmp_path / "trials", max_turns=3, keep_turns=0)
    assert [sum(m["role"] == "assistant" for m in r["messages"]) for r in seen] == [0, 0, 0]


# --- the printed JSON -------------------------------------------------------------------------------------------


def test_the_printed_json_uses_the_names_and_values_of_summary_json(tmp_path):
    with endpoint(store_status) as (base_url, _seen):
        out = agent_cli("--base-url", base_url, "--max-turns", "2", "--trials", str(tmp_path / "trials"))
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    summary = json.loads((Path(printed["out"]) / "summary.json").read_text())
    assert printed["turns_taken"] == summary["turns_taken"] == 2  # model turns
    assert printed["turns"] == summary["turns"] == 4  # store calls: two per turn
    shared = ("turns", "turns_taken", "operations_spent", "ended_by", "metrics")
    assert {k: printed[k] for k in shared} == {k: summary[k] for k in shared}

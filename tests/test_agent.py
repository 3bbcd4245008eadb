"""The baseline LLM runner against a scripted chat-completions endpoint on loopback.

The fake endpoint is a tiny HTTP server in this test (the standard library's), speaking the
chat-completions wire format: it reads the tool results the runner sends back and plays
short-runway to its horizon (list orders; ship the first one listed; end the window),
with one reply without tool calls and one with arguments that are not JSON along the way.
What is checked: the brief is the system prompt and the tools are the MCP tools; the whole
cell is played; compaction keeps the last three turns; tokens and turns are summed; and the
trial folder is graded, labelled, replays exactly and re-grades.
"""
from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import chat_stub
import pytest
from chat_stub import completion

from environment.brief import brief
from environment.tasks import get_task
from environment.tools import REGISTRY
from mcp_client.agent import play

REPO = Path(__file__).resolve().parent.parent
TASK, SEED = "short-runway", 7


class Script:
    """Decides each reply from the conversation so far, and keeps every request it saw."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.n = 0

    def reply(self, request: dict) -> dict:
        self.requests.append(request)
        self.n += 1
        last = request["messages"][-1]
        if self.n == 2:
            return {"role": "assistant", "content": "Let me think about the shop first."}
        if self.n == 3:
            return self._calls(("list_orders", "{not json"))
        if last["role"] == "tool" and last["content"].startswith("20") and '"rows"' in last["content"]:
            rows = json.loads(last["content"].split("\n", 1)[1])["rows"]
            if rows:
                return self._calls(("fulfill_order", json.dumps({"order_id": rows[0]["order_id"]})),
                                   ("end_window", "{}"))
            return self._calls(("end_window", "{}"))
        return self._calls(("list_orders", json.dumps({"page_size": 3})))

    def _calls(self, *calls: tuple[str, str]) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call-{self.n}-{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(calls)]}


@pytest.fixture
def endpoint():
    script = Script()

    def answer(body: dict) -> tuple[int, bytes]:
        return completion(script.reply(body), model=body["model"], prompt_tokens=100, completion_tokens=7)

    with chat_stub.endpoint(answer, api_key="k-test") as (base_url, _seen):
        yield base_url, script


def test_the_runner_plays_a_whole_short_cell_and_writes_a_graded_folder(endpoint, tmp_path):
    base_url, script = endpoint
    log = io.StringIO()
    run = asyncio.run(play(TASK, SEED, model="scripted-1", base_url=base_url, api_key="k-test",
                           trials=tmp_path / "trials", log=log))
    first = script.requests[0]
    assert first["model"] == "scripted-1"
    assert first["messages"][0] == {"role": "system", "content": brief(get_task(TASK))}
    assert {t["function"]["name"] for t in first["tools"]} == set(REGISTRY)
    # The whole cell: the horizon was reached within the cap.
    assert run.ended_by == "horizon" and run.session.episode.window == run.session.episode.n_windows
    assert run.turns_taken == len(script.requests) <= 150
    # Compaction: never more than three earlier turns in a request.
    for request in script.requests:
        assert sum(m["role"] == "assistant" for m in request["messages"]) <= 3
    assert any("earlier turn(s) were removed" in str(m.get("content")) for m in script.requests[-1]["messages"])
    # The reply without tool calls got the reminder; the bad arguments were answered, not sent.
    assert "shift is still running" in script.requests[2]["messages"][-1]["content"]
    assert "not valid JSON" in script.requests[3]["messages"][-1]["content"]
    shipped = [e for e in run.session.episode.action_log if e["tool"] == "fulfill_order"]
    assert shipped and any(e["ok"] for e in shipped)
    assert run.metrics["prompt_tokens"] == 100 * run.turns_taken and run.metrics["total_tokens"] == 107 * run.turns_taken
    assert f"turn {run.turns_taken}:" in log.getvalue()

    folder = Path(run.result["out"])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["model"] == "scripted-1" and summary["harness"] == "storebench-agent"
    assert summary["max_turns"] == 150 and summary["context_policy"] == "keep last 3 turns"
    assert summary["turns_taken"] == run.turns_taken and summary["ended_by"] == "horizon"
    assert summary["metrics"]["total_tokens"] == 107 * run.turns_taken
    assert summary["termination"] == "horizon"
    for command in (["replay", str(folder)],
                    ["regrade", "--calibration", str(REPO / "calibration" / "public.json"), str(folder)]):
        out = subprocess.run([sys.executable, "-m", "mcp_client", *command], cwd=REPO, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr


def test_the_progress_line_of_the_last_turn_names_the_last_window_and_the_store_closed(endpoint, tmp_path):
    base_url, _script = endpoint
    log = io.StringIO()
    run = asyncio.run(play(TASK, SEED, model="scripted-1", base_url=base_url, api_key="k-test",
                           trials=tmp_path / "trials", log=log))
    windows = run.session.episode.n_windows
    last = log.getvalue().splitlines()[-1]
    assert last == (f"turn {run.turns_taken}: 2 tool call(s), window {windows} of {windows} (store closed), "
                    f"tokens so far {100 * run.turns_taken} in / {7 * run.turns_taken} out")


def test_the_turn_cap_ends_the_episode(endpoint, tmp_path):
    base_url, _script = endpoint
    run = asyncio.run(play(TASK, SEED, model="scripted-1", base_url=base_url, api_key="k-test",
                           trials=tmp_path / "trials", max_turns=5, log=io.StringIO()))
    assert run.turns_taken == 5 and run.ended_by == "turn cap"
    summary = json.loads((Path(run.result["out"]) / "summary.json").read_text())
    assert summary["termination"] == "stopped" and summary["turns_taken"] == 5


def test_a_failing_endpoint_ends_the_episode_with_a_clear_message(endpoint, tmp_path):
    base_url, _script = endpoint
    out = subprocess.run([sys.executable, "-m", "mcp_client", "agent", "--model", "m", "--base-url", base_url,
                          "--api-key", "wrong", "--trials", str(tmp_path / "trials")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert "answered 401" in out.stderr and "no trial was written" in out.stderr
    assert json.loads(out.stdout)["ended_by"] == "endpoint error"
    assert list((tmp_path / "trials").iterdir()) == []  # it never answered a completion: nothing was played


def test_an_endpoint_refusing_a_request_sent_without_a_key_is_told_how_to_give_one(endpoint, tmp_path):
    base_url, _script = endpoint
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = subprocess.run([sys.executable, "-m", "mcp_client", "agent", "--model", "m", "--base-url", base_url,
                          "--trials", str(tmp_path / "trials")],
                         cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 1
    assert out.stderr.strip().endswith("no trial was written (no API key was sent: give one with --api-key KEY or "
                                       "set $OPENAI_API_KEY)")



class Oversized(Script):
    """Its second reply makes two calls over the server's size limits: a title of 70,000
    characters and a tool name of 200."""

    def reply(self, request: dict) -> dict:
        if self.n == 1:
            self.requests.append(request)
            self.n += 1
            return self._calls(("update_listing_copy", json.dumps({"product_id": "PRD-001", "title": "x" * 70_000})),
                               ("t" * 200, "{}"))
        return super().reply(request)


def test_a_call_over_the_size_limits_is_answered_as_an_error_and_the_cell_plays_on(tmp_path):
    script = Oversized()

    def answer(body: dict) -> tuple[int, bytes]:
        return completion(script.reply(body), model=body["model"], prompt_tokens=100, completion_tokens=7)

    with chat_stub.endpoint(answer, api_key="k-test") as (base_url, _seen):
        run = asyncio.run(play(TASK, SEED, model="scripted-1", base_url=base_url, api_key="k-test",
                               trials=tmp_path / "trials", max_turns=4, log=io.StringIO()))
    answers = [m["content"] for m in script.requests[2]["messages"] if m["role"] == "tool"][-2:]
    assert answers[0].startswith("Error: the arguments of 'update_listing_copy' take 70,0")
    assert answers[0].endswith("nothing was sent to the store")
    assert answers[1].startswith("Error: a tool name of 200 characters; names are at most 128")
    assert run.turns_taken == 4 and (Path(run.result["out"]) / "summary.json").exists()

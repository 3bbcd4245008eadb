"""The baseline runner sends a request again when the endpoint may answer later (rate limited,
overloaded, failing, or no answer), after its Retry-After or a doubling pause, a few times only;
a request the endpoint refuses for good (400, 401, 404) is not sent again."""
from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from chat_stub import completion, endpoint

from mcp_client.agent import ENDED_BY_ENDPOINT, Retry, play

REPO = Path(__file__).resolve().parent.parent
TASK, SEED = "short-runway", 7
FAST = Retry(retries=2, delay=0.01, delay_max=0.02)


def end_window(_body: dict) -> tuple[int, bytes]:
    return completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "end_window", "arguments": "{}"}}]})


def failing_first(times: int, status: int, headers: dict | None = None):
    """A responder that answers ``status`` to its first ``times`` requests, then plays end_window."""
    seen = [0]

    def respond(body: dict) -> tuple:
        seen[0] += 1
        if seen[0] <= times:
            return status, b'{"error": "busy"}', headers or {}
        return end_window(body)
    return respond


def run(base_url: str, trials: Path, log: io.StringIO, retry: Retry = FAST):
    return asyncio.run(play(TASK, SEED, model="stub", base_url=base_url, trials=trials, max_turns=2, log=log,
                            retry=retry))


def test_a_rate_limited_request_is_sent_again_and_the_run_goes_on(tmp_path):
    log = io.StringIO()
    with endpoint(failing_first(2, 429, {"Retry-After": "0"})) as (url, seen):
        result = run(url, tmp_path, log)
    assert result.result is not None and result.ended_by == "turn cap"
    assert len(seen) == 4  # two refused, then the two turns
    assert result.all_metrics()["retries"] == 2 and result.all_metrics()["requests"] == 2
    assert log.getvalue().count("answered 429") == 2 and "trying again in 0 s (2 of 2)" in log.getvalue()
    summary = json.loads((Path(result.result["out"]) / "summary.json").read_text())
    assert summary["metrics"]["retries"] == 2


def test_an_endpoint_still_failing_after_the_retries_ends_the_run_saying_how_often_it_tried(tmp_path):
    log = io.StringIO()
    with endpoint(failing_first(99, 503)) as (url, seen):
        result = run(url, tmp_path, log, Retry(retries=1, delay=0.01))
    assert len(seen) == 2 and result.result is None and result.ended_by == ENDED_BY_ENDPOINT
    assert "answered 503" in log.getvalue() and "(after 1 retry)" in log.getvalue()
    assert result.endpoint_error == f'the endpoint {url}/chat/completions answered 503: {{"error": "busy"}} (after 1 retry)'



@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_request_the_endpoint_refuses_for_good_is_not_sent_again(tmp_path, status):
    with endpoint(failing_first(99, status)) as (url, seen):
        result = run(url, tmp_path, io.StringIO())
    assert len(seen) == 1 and result.result is None and result.metrics["retries"] == 0


def test_retries_zero_never_sends_again(tmp_path):
    with endpoint(failing_first(1, 429)) as (url, seen):
        result = run(url, tmp_path, io.StringIO(), Retry(retries=0))
    assert len(seen) == 1 and result.result is None


def response(retry_after: str | None) -> httpx.Response:
    return httpx.Response(429, headers={"Retry-After": retry_after} if retry_after is not None else {})


def test_the_pause_is_the_endpoints_retry_after_else_doubling_up_to_its_cap():
    retry = Retry(retries=9, delay=0.5, delay_max=8.0)
    assert retry.wait(0, response("3")) == 3.0
    assert [retry.wait(n, response(None)) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert retry.wait(1, response("3600")) == 1.0  # longer than RETRY_AFTER_MAX: not waited
    assert retry.wait(0, response("Wed, 21 Oct 2026 07:28:00 GMT")) == 0.5  # a date is not read
    assert retry.wait(2, None) == 2.0  # no answer at all


def test_the_command_refuses_negative_retries_naming_the_bound():
    out = subprocess.run([sys.executable, "-m", "mcp_client", "agent", "--model", "stub", "--base-url",
                          "http://127.0.0.1:9/v1", "--retries", "-1"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == "storebench agent: error: argument --retries: -1 is too small: give 0 or more"


@pytest.mark.parametrize("value", ["nan", "-0.5", "warm"])
def test_the_command_refuses_a_temperature_that_is_no_sampling_temperature(value):
    out = subprocess.run([sys.executable, "-m", "mcp_client", "agent", "--model", "stub", "--base-url",
                          "http://127.0.0.1:9/v1", "--temperature", value], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "argument --temperature:" in out.stderr.splitlines()[-1]


def test_a_request_that_timed_out_says_so(tmp_path):
    import time

    def slow(body: dict) -> tuple[int, bytes]:
        time.sleep(1.5)
        return end_window(body)

    with endpoint(slow) as (url, _seen):
        result = asyncio.run(play(TASK, SEED, model="stub", base_url=url, trials=tmp_path, max_turns=1,
                                  log=io.StringIO(), retry=Retry(retries=0), timeout=0.2))
    assert result.result is None and result.endpoint_status is None
    assert result.endpoint_error == f"the endpoint {url}/chat/completions did not answer: ReadTimeout"

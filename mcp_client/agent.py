"""The baseline LLM runner: any OpenAI-compatible chat-completions endpoint plays one cell.

The harness follows the paper's settings:

* the model sees exactly what an MCP agent sees: the server's ``instructions`` (the
  merchant's brief) as the system prompt, and the 29 tools as function tools whose
  parameters are the published input schemas.  Every call goes through an MCP client
  session to the server (:func:`mcp_client.server.build_server`, connected in memory), so
  metering, refusals and the action log are those of any MCP host;
* at most ``max_turns`` (150) turns; a turn is one chat-completions request and the tool
  calls it asks for, run in order;
* context compaction keeps the last three turns: older turns are dropped from the request
  and replaced by one short note saying how many were dropped (the brief and the opening
  message always stay);
* a reply without tool calls is answered with a reminder that the shift is running; after
  ``max_idle_turns`` (3) such replies in a row the reminder is a last one, and if the next
  reply has no tool call either the runner stops (``ended_by`` ``"no tool calls"``), rather
  than spending the rest of the turn cap on a model that has stopped acting; tool
  arguments that are not a JSON object are answered with an error and not sent;
* tokens (``usage`` of every response) and turns are summed and logged per turn on stderr;
* a request the endpoint may answer later (no answer, a timeout, a rate limit or an overloaded
  or failing server: :data:`RETRY_STATUSES`) is sent again up to ``retries`` (2) times, after the
  endpoint's ``Retry-After`` or a doubling pause (:class:`Retry`), as the common SDKs do; only
  then does the endpoint count as failed.

The episode is a graded session (:mod:`mcp_client.sessions`): when it reaches the horizon,
the turn cap, or the idle limit, or the endpoint fails, the runner ends it, which writes its
trial folder with the labels ``model``, ``harness``, ``context_policy``, ``max_turns``,
``turns_taken`` (model turns; the summary's ``turns`` counts store calls), ``metrics`` (tokens,
requests, retries, tool calls, and ``temperature`` when one was sent: no such key when the
endpoint's own was used) and ``ended_by`` (``horizon``, ``suspended``, ``turn cap``, ``no tool
calls``, ``endpoint error``).  If the endpoint never answered a single completion, nothing was
played: no trial folder is written (``result`` is None) and the command exits 1.  Only ``httpx``
is needed, no SDK.

Sweeps over many cells are :mod:`mcp_client.sweep`; the ``storebench agent`` command is
:mod:`mcp_client.agent_command`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from environment.errors import StoreBenchError
from environment.suite import public_calibration
from environment.tools.format import store_header

from .client import episode_client
from .server import build_server
from .sessions import Session

__all__ = ["AgentRun", "HARNESS", "check_base_url", "compact", "context_policy", "no_key_note", "play",
           "temperature_arg"]

HARNESS = "storebench-agent"
MAX_TURNS = 150
KEEP_TURNS = 3
MAX_IDLE_TURNS = 3
OPENING = ("Your shift has started. Run the store with the tools until the shift ends; call store_status "
           "(free) whenever you need to see where things stand.")
NUDGE = ("The shift is still running and only tool calls act on the store. Continue with the tools, or call "
         "end_window to let the world move on.")
LAST_NUDGE = ("Last reminder: the shift is still running and only tool calls act on the store. If your next "
              "reply calls no tool, the run stops here and the store is settled as it stands.")
ENDED_BY_IDLE = "no tool calls"
ENDED_BY_ENDPOINT = "endpoint error"
RETRIES = 2  # a request the endpoint may answer later is sent again this many times (see Retry)
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
RETRY_AFTER_MAX = 60.0  # seconds of an endpoint's Retry-After that are waited; a longer one is not
TOKEN_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
COUNTS = (*TOKEN_COUNTS, "requests", "retries")  # AgentRun.metrics
KEY_REFUSED = frozenset({401, 403})  # an endpoint's answer to a request without the key it needs
COMMAND_KEY_HINT = "give one with --api-key KEY or set $OPENAI_API_KEY"  # how storebench agent takes a key


class Log(Protocol):
    """Where the runner writes its progress lines (standard error, a file, a cell's prefixed log)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class EndpointError(RuntimeError):
    """The chat-completions endpoint failed or answered something that is not a completion;
    ``status`` is its last HTTP status, None when it did not answer."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class AgentRun:
    """What the runner did: the session it played and its own account.

    ``turns_taken`` counts model turns (chat-completions requests answered), as in
    ``summary.json``; ``result`` is None when no trial folder was written; ``endpoint_error``
    says how the endpoint failed (it names the URL and the answer, never the key)."""

    session: Session
    turns_taken: int = 0
    tool_calls: int = 0
    metrics: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    ended_by: str = ""
    endpoint_error: str = ""  # how the endpoint failed, when ended_by is ENDED_BY_ENDPOINT
    endpoint_status: int | None = None  # its last HTTP status then (None: it did not answer)
    result: dict | None = None
    temperature: float | None = None  # the sampling temperature sent (None: none sent, the endpoint's own)

    def all_metrics(self) -> dict[str, int | float]:
        """The ``metrics`` label of ``summary.json``: the token counts, requests and tool calls, and the
        sampling temperature when one was sent (no ``temperature`` key when the endpoint chose)."""
        temperature = {} if self.temperature is None else {"temperature": self.temperature}
        return {**self.metrics, "tool_calls": self.tool_calls, **temperature}

    def summary(self) -> dict[str, Any]:
        """What the command prints: the score, and the runner's account under ``summary.json``'s names."""
        result = self.result or {}
        ep = self.session.episode
        return {"out": result.get("out"), "reward_composite": result.get("reward_composite"),
                "pass": result.get("pass"), "turns": len(ep.action_log), "operations_spent": ep.calls,
                "turns_taken": self.turns_taken, "ended_by": self.ended_by, "metrics": self.all_metrics()}


def openai_tools(tools: list[Any]) -> list[dict]:
    """MCP tools as chat-completions function tools (name, description, the input schema)."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.input_schema}} for t in tools]


def compact(head: list[dict], turns: list[list[dict]], keep: int = KEEP_TURNS) -> list[dict]:
    """The messages of one request: ``head`` (brief and opening), a note for dropped turns, the last ``keep``."""
    dropped = len(turns) - keep
    messages = list(head)
    if dropped > 0:
        messages.append({"role": "user", "content": f"[{dropped} earlier turn(s) were removed to save context. "
                                                    "Call store_status to re-orient if needed.]"})
    for turn in turns[-keep:] if keep else []:
        messages.extend(turn)
    return messages


@dataclass(frozen=True)
class Retry:
    """How a request the endpoint may answer later is tried again: a transport error (no answer, a
    timeout) or a status of :data:`RETRY_STATUSES` (rate limited, overloaded, a gateway's or
    server's failure) is sent again up to ``retries`` times, after the endpoint's ``Retry-After``
    (seconds, at most :data:`RETRY_AFTER_MAX`) or else ``delay`` doubled each time, up to ``delay_max``."""

    retries: int = RETRIES
    delay: float = 0.5
    delay_max: float = 8.0

    def wait(self, attempt: int, response: httpx.Response | None) -> float:
        after = response.headers.get("retry-after", "") if response is not None else ""
        try:
            told = float(after)
        except ValueError:
            told = -1.0
        if 0 <= told <= RETRY_AFTER_MAX:
            return told
        return min(self.delay * 2 ** attempt, self.delay_max)


async def _complete(http: httpx.AsyncClient, url: str, body: dict, retry: Retry, log: Log,
                    metrics: dict[str, int]) -> dict:
    """One completion; each request sent again is counted in ``metrics["retries"]`` and said on ``log``."""
    attempt = 0
    while True:
        response: httpx.Response | None = None
        try:
            response = await http.post(url, json=body)
        except httpx.HTTPError as exc:
            failure = f"did not answer: {type(exc).__name__}" + (f": {exc}" if str(exc) else "")  # a timeout has no text
        else:
            if response.status_code == 200:
                break
            failure = f"answered {response.status_code}: {response.text[:300]}"
            if response.status_code not in RETRY_STATUSES:
                raise EndpointError(f"the endpoint {url} {failure}", response.status_code)
        if attempt >= retry.retries:
            again = f" (after {attempt} {'retry' if attempt == 1 else 'retries'})" if attempt else ""
            raise EndpointError(f"the endpoint {url} {failure}{again}", None if response is None else response.status_code)
        pause = retry.wait(attempt, response)
        attempt += 1
        metrics["retries"] += 1
        print(f"the endpoint {failure.splitlines()[0][:200]}; trying again in {pause:g} s "
              f"({attempt} of {retry.retries})", file=log, flush=True)
        await asyncio.sleep(pause)
    try:
        data = response.json()
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise EndpointError(f"the endpoint {url} answered something that is not a chat completion: "
                            f"{response.text[:300]}") from exc
    if not isinstance(message, dict):
        raise EndpointError(f"the endpoint {url} answered a completion without a message")
    return data


async def play(task: str, seed: int, *, model: str, base_url: str, api_key: str | None = None,
               trials: str | Path = "trials", max_turns: int = MAX_TURNS, keep_turns: int = KEEP_TURNS,
               max_idle_turns: int = MAX_IDLE_TURNS, temperature: float | None = None, log: Log | None = None,
               timeout: float = 300.0, retry: Retry | None = None, key_hint: str = COMMAND_KEY_HINT) -> AgentRun:
    """Play ``task`` at ``seed`` with ``model`` behind ``base_url``; write the trial folder (none if the
    endpoint never answered a completion).  ``key_hint`` says how a key is given, in the message of an
    endpoint that refused a request sent without one (:func:`no_key_note`)."""
    if keep_turns < 0:
        raise StoreBenchError(f"keep_turns must be 0 or more (0 keeps no earlier turn), not {keep_turns}")
    if max_idle_turns < 1 or max_turns < 1:
        raise StoreBenchError(f"max_turns and max_idle_turns must be 1 or more, not {max_turns} and {max_idle_turns}")
    log = log or sys.stderr
    calibration, calibration_hash = public_calibration()
    session = Session.open(task, seed, out=Path(trials), state_root=None, calibration=calibration,
                           calibration_hash=calibration_hash)
    session.auto_settle = False  # the folder is written once, with the runner's totals, by end() below
    run = AgentRun(session, temperature=None if temperature is None else float(temperature))
    server = build_server(lambda: session.episode, after_call=lambda _ep: session.record())
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with episode_client(server) as client, httpx.AsyncClient(headers=headers, timeout=timeout) as http:
        brief = client.client.instructions or ""
        tools = openai_tools(await client.list_tools())
        head = [{"role": "system", "content": brief}, {"role": "user", "content": OPENING}]
        turns: list[list[dict]] = []
        idle = 0  # replies in a row without a tool call
        try:
            while run.turns_taken < max_turns and not session.episode.over:
                body: dict[str, Any] = {"model": model, "messages": compact(head, turns, keep_turns),
                                        "tools": tools, "tool_choice": "auto"}
                if run.temperature is not None:
                    body["temperature"] = run.temperature
                data = await _complete(http, url, body, retry or Retry(), log, run.metrics)
                run.turns_taken += 1
                run.metrics["requests"] += 1
                usage = data.get("usage") or {}
                for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                    if isinstance(usage.get(key), int):
                        run.metrics[key] += usage[key]
                message = data["choices"][0]["message"]
                calls = _well_formed(message.get("tool_calls"))
                turn: list[dict] = [{"role": "assistant", "content": message.get("content"),
                                     **({"tool_calls": calls} if calls else {})}]
                for call in calls:
                    turn.append({"role": "tool", "tool_call_id": call.get("id", ""),
                                 "content": await _run_tool(client, call)})
                    run.tool_calls += 1
                    if session.episode.over:
                        break
                idle = 0 if calls else idle + 1
                if 0 < idle <= max_idle_turns:
                    turn.append({"role": "user", "content": LAST_NUDGE if idle == max_idle_turns else NUDGE})
                turns.append(turn)
                store = store_header(session.episode)  # as the tools' header: never past the last window
                print(f"turn {run.turns_taken}: {len(calls)} tool call(s), window {store.window} of {store.windows}"
                      f"{' (store closed)' if store.closed else ''}, tokens so far {run.metrics['prompt_tokens']} in / "
                      f"{run.metrics['completion_tokens']} out", file=log, flush=True)
                if idle > max_idle_turns:
                    run.ended_by = ENDED_BY_IDLE
                    print(f"storebench agent: {idle} replies in a row without a tool call, the last after a last "
                          "reminder; ending the episode", file=log, flush=True)
                    break
            else:
                run.ended_by = session.ended_by_itself() or "turn cap"
        except EndpointError as exc:
            run.ended_by = ENDED_BY_ENDPOINT
            run.endpoint_error, run.endpoint_status = str(exc), exc.status
            if run.metrics["requests"] == 0:
                print(f"storebench agent: {exc}; the endpoint never answered a completion, so nothing was played "
                      f"and no trial was written{no_key_note(exc.status, api_key, key_hint)}", file=log, flush=True)
                return run
            print(f"storebench agent: {exc}; ending the episode", file=log, flush=True)
    labels = {"model": model, "harness": HARNESS, "context_policy": context_policy(keep_turns),
              "max_turns": max_turns, "turns_taken": run.turns_taken, "metrics": run.all_metrics()}
    run.result = session.end(labels, ended_by=run.ended_by)
    return run


def context_policy(keep_turns: int) -> str:
    return f"keep last {keep_turns} turns"


def _well_formed(calls: Any) -> list[dict]:
    """The reply's tool calls that can be answered: objects with a ``function`` object.  Anything
    else a model may send (a call that is a string, ``tool_calls`` as an object) is left out of
    the conversation, as a reply without that call."""
    if not isinstance(calls, list):
        return []
    return [c for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict)]


async def _run_tool(client: Any, call: dict) -> str:
    function = call["function"]
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return "Error: a tool call must name a tool (function.name, a string); nothing was called."
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return f"Error: the arguments of {name} are not valid JSON ({raw[:200]!r}); nothing was called."
    if not isinstance(arguments, dict):
        return f"Error: the arguments of {name} must be a JSON object; nothing was called."
    outcome = await client.call(name, arguments)
    return outcome.text


# --- checks of the runner's input (the command and the jobs that play it) -------------------------------


def no_key_note(status: int | None, api_key: str | None, hint: str) -> str:
    """What an endpoint's refusal is followed by when no key was sent: `` (no API key was sent: HINT)``
    if it answered 401 or 403 to a request without a key, else nothing.  ``hint`` says how the
    caller takes a key (the command's options, a worker's variable)."""
    return f" (no API key was sent: {hint})" if status in KEY_REFUSED and not api_key else ""


def check_base_url(base_url: str, *, credentials: str = "sent to the endpoint and printed in its error messages: "
                                                        "give the key with --api-key KEY or $OPENAI_API_KEY instead") -> None:
    """An endpoint's base URL: http(s) with a host, no credentials (``user:password@``; ``credentials``
    says what would become of them and how to give a key instead) and, if it names a port, a number;
    else a :class:`StoreBenchError` saying what to give (never echoing a URL with credentials)."""
    try:
        parts = urlsplit(base_url)
        if parts.username is not None or parts.password is not None:
            raise StoreBenchError(f"--base-url carries credentials (user:password@host); they would be {credentials}")
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as exc:
        raise StoreBenchError(f"--base-url{_shown(base_url)} is not a URL ({exc}); give the endpoint's base, e.g. "
                              "http://127.0.0.1:8000/v1") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StoreBenchError(f"--base-url{_shown(base_url)} is not an http(s) URL with a host; give the "
                              "endpoint's base, e.g. http://127.0.0.1:8000/v1")


def _shown(base_url: str) -> str:
    """The refused URL as a refusal quotes it: not at all when it holds an @ (urlsplit did not
    read credentials in it, but they may be there)."""
    return "" if "@" in base_url else f" {base_url!r}"


def temperature_arg(text: str) -> float:
    """argparse type: a sampling temperature, a finite number of 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; a temperature is e.g. 0 or 0.7") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a temperature: give a number of 0 or more")
    return value

"""The baseline LLM runner: any OpenAI-compatible chat-completions endpoint plays one cell.

    storebench agent --model NAME --base-url http://127.0.0.1:8000/v1 --task short-runway --seed 7
    storebench agent --model NAME --base-url ... --tasks all --seeds 7 11 13 --concurrency 4 --skip-played

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

A sweep (:func:`play_many`, or the command given several tasks or seeds) plays each cell once,
``concurrency`` of them at a time in one process: a model turn is mostly waiting on the endpoint,
and each cell has its own MCP server, session and connection, so cells share nothing but the
endpoint.  Each turn's line on the log names its cell.  With ``skip_played`` a cell that already
has a finished trial by the same model, this harness, turn cap, compaction and temperature under
``trials`` (not one the endpoint cut short) is not played again; its folder's score counts in the
summary, so an interrupted sweep is finished by running the same command again.  Ctrl-C stops a
sweep: no further cell starts, the cells playing are cancelled (they write no folder: a trial
folder is complete or absent), the command prints the summary of the cells that finished with
``"interrupted": true``, says on stderr to run it again with ``--skip-played``, and exits 130.  A
cell whose endpoint never answered is reported as unplayed and the sweep goes on; a malformed tool
call is answered as an error (or, not being an object, left out), as a refusal would be, and the
cell plays on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from environment.api import cell_constants
from environment.cli import TASKS_HELP, path_arg, positive_int, seed_arg, whole_number, writable_folder
from environment.errors import StoreBenchError
from environment.orchestration import batch_summary, expand_tasks, run_cells
from environment.suite import public_calibration
from environment.tasks import get_task

from .client import episode_client
from .server import build_server
from .sessions import Session, session_folder_name

__all__ = ["AgentRun", "HARNESS", "add_agent_command", "compact", "play", "play_many", "played_before", "sweep_summary"]

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
    metrics: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0,
                                                             "total_tokens": 0, "requests": 0,
                                                             "retries": 0})
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
               timeout: float = 300.0, retry: Retry | None = None) -> AgentRun:
    """Play ``task`` at ``seed`` with ``model`` behind ``base_url``; write the trial folder (none if the
    endpoint never answered a completion)."""
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
                print(f"turn {run.turns_taken}: {len(calls)} tool call(s), window {session.episode.window + 1} of "
                      f"{session.episode.n_windows}, tokens {run.metrics['prompt_tokens']} in / "
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
                      "and no trial was written", file=log, flush=True)
                return run
            print(f"storebench agent: {exc}; ending the episode", file=log, flush=True)
    labels = {"model": model, "harness": HARNESS, "context_policy": _context_policy(keep_turns),
              "max_turns": max_turns, "turns_taken": run.turns_taken, "metrics": run.all_metrics()}
    run.result = session.end(labels, ended_by=run.ended_by)
    return run


# --- sweeps -------------------------------------------------------------------------------------------------


class _CellLog:
    """A log that puts ``prefix`` before each whole line written to ``target`` (cells played at
    once write their lines in turn; a line is passed on only once it is complete)."""

    def __init__(self, target: Log, prefix: str) -> None:
        self.target, self.prefix, self.pending = target, prefix, ""

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.target.write(f"{self.prefix}{line}\n")
        return len(text)

    def flush(self) -> None:
        self.target.flush()


def _context_policy(keep_turns: int) -> str:
    return f"keep last {keep_turns} turns"


def played_before(trials: str | Path, task: str, seed: int, model: str, calibration: dict[str, Any] | None = None,
                  *, max_turns: int = MAX_TURNS, keep_turns: int = KEEP_TURNS,
                  temperature: float | None = None) -> dict[str, Any] | None:
    """The newest finished trial of ``task`` at ``seed`` by ``model`` under ``trials`` played by this
    runner (``summary.json``'s ``harness``) with the same turn cap, compaction and sampling temperature
    (``metrics.temperature``; a trial without one was played at the endpoint's own, and matches only
    ``temperature`` None), as a sweep's row; None if there is none.  A trial the endpoint cut short
    (``ended_by`` "endpoint error") is not finished: the cell is played again.

    A trial folder is written whole or not at all (:func:`environment.artifacts.write_trial`), so a
    folder with its ``summary.json`` and ``score.json`` is a finished trial; one whose files cannot be
    read is passed over (it is not a finished trial).  ``pass`` is its composite against the cell's
    threshold in ``calibration`` (or calibrated on the spot, as when it was played)."""
    found: list[tuple[Path, dict, dict]] = []
    for path in Path(trials).glob(f"{session_folder_name(task, seed, '*')}/summary.json"):
        try:
            summary = json.loads(path.read_text())
            score = json.loads((path.parent / "score.json").read_text())
        except (OSError, ValueError):
            continue
        if (isinstance(summary, dict) and isinstance(score, dict) and summary.get("model") == model
                and summary.get("harness") == HARNESS and summary.get("task") == task and summary.get("seed") == seed
                and summary.get("max_turns") == max_turns and summary.get("context_policy") == _context_policy(keep_turns)
                and summary.get("ended_by") != ENDED_BY_ENDPOINT
                and _temperature_of(summary) == (None if temperature is None else float(temperature))):
            found.append((path.parent, summary, score))
    if not found:
        return None
    folder, summary, score = max(found, key=lambda f: (f[0].stat().st_mtime, f[0].name))
    composite = score.get("reward_composite")
    threshold = cell_constants(get_task(task), seed, calibration)[0]["threshold"]
    return {"task": task, "seed": seed, "out": str(folder), "reward_composite": composite,
            "pass": isinstance(composite, (int, float)) and composite >= threshold, "turns": summary.get("turns"),
            "operations_spent": summary.get("operations_spent"), "turns_taken": summary.get("turns_taken"),
            "ended_by": summary.get("ended_by"), "metrics": summary.get("metrics") or {}, "skipped": True}


def _temperature_of(summary: dict) -> float | None:
    metrics = summary.get("metrics")
    value = metrics.get("temperature") if isinstance(metrics, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


async def play_many(cells: Sequence[tuple[str, int]], *, model: str, base_url: str, concurrency: int = 1,
                    skip_played: bool = False, trials: str | Path = "trials", log: Log | None = None,
                    finished: dict[int, dict[str, Any]] | None = None, **options: Any) -> list[dict[str, Any]]:
    """Play every ``(task, seed)`` cell with ``model``, ``concurrency`` at a time; one row per cell, in
    the order given: the cell and :meth:`AgentRun.summary` (``out`` None when the endpoint never
    answered), or with ``skip_played`` the row of a trial already there (:func:`played_before`,
    marked ``skipped``).  ``options`` go to :func:`play` for every cell.

    Each row is also put in ``finished`` (the cell's index in ``cells``: its row) as soon as its cell
    ends, so a caller still has the finished cells when the sweep is cancelled (Ctrl-C): cancelling
    it starts no further cell and cancels the cells playing, which write no trial folder (a cell's
    folder is written whole, without an await, once its play has ended); the cancellation is then
    raised, once every cell has stopped."""
    if concurrency < 1:
        raise StoreBenchError(f"concurrency must be 1 or more, not {concurrency}")
    log = log or sys.stderr
    calibration = public_calibration()[0] if skip_played else None
    gate = asyncio.Semaphore(concurrency)
    total = len(cells)
    done = finished if finished is not None else {}

    async def one(index: int, task: str, seed: int) -> dict[str, Any]:
        name = f"{task}/{seed}"
        if skip_played:
            before = played_before(trials, task, seed, model, calibration, max_turns=options.get("max_turns", MAX_TURNS),
                                   keep_turns=options.get("keep_turns", KEEP_TURNS),
                                   temperature=options.get("temperature"))
            if before is not None:
                print(f"{name}: already played by {model} ({before['out']}); skipped", file=log, flush=True)
                done[index] = before
                return before
        async with gate:
            print(f"{name}: playing (cell {index + 1} of {total})", file=log, flush=True)
            run = await play(task, seed, model=model, base_url=base_url, trials=trials,
                             log=_CellLog(log, f"{name} "), **options)
        row = {"task": task, "seed": seed, **run.summary()}
        if run.result is None:
            print(f"{name}: the endpoint never answered; nothing was played", file=log, flush=True)
        else:
            print(f"{name}: composite {row['reward_composite']}, {'pass' if row['pass'] else 'below threshold'}, "
                  f"{row['turns_taken']} model turns, ended by {row['ended_by']} -> {row['out']}", file=log, flush=True)
        done[index] = row
        return row

    return list(await asyncio.gather(*(one(i, task, seed) for i, (task, seed) in enumerate(cells))))


def sweep_summary(model: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A sweep's account: its cells, the graded trials' passes and mean composite
    (:func:`environment.orchestration.batch_summary`, as ``storebench batch``), the cells left
    unplayed because the endpoint never answered, token totals of the cells played now, and every row."""
    graded = [r for r in rows if r.get("out") is not None]
    tokens: dict[str, int] = {}
    for row in rows:
        if not row.get("skipped"):
            for key, value in (row.get("metrics") or {}).items():
                if isinstance(value, int):
                    tokens[key] = tokens.get(key, 0) + value
    return {"model": model, "harness": HARNESS, "cells": len(rows), **batch_summary(graded),
            "skipped": sum(bool(r.get("skipped")) for r in rows),
            "unplayed": [f"{r['task']}/{r['seed']}" for r in rows if r.get("out") is None],
            "metrics": tokens, "rows": list(rows)}


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


# --- the command ---------------------------------------------------------------------------------------------


def check_base_url(base_url: str) -> None:
    """An endpoint's base URL: http(s) with a host and, if it names a port, a number; else a
    :class:`StoreBenchError` saying what to give."""
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as exc:
        raise StoreBenchError(f"--base-url {base_url!r} is not a URL ({exc}); give the endpoint's base, e.g. "
                              "http://127.0.0.1:8000/v1") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StoreBenchError(f"--base-url {base_url!r} is not an http(s) URL with a host; give the endpoint's "
                              "base, e.g. http://127.0.0.1:8000/v1")


def temperature_arg(text: str) -> float:
    """argparse type: a sampling temperature, a finite number of 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; a temperature is e.g. 0 or 0.7") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a temperature: give a number of 0 or more")
    return value


def _cmd_agent(args: argparse.Namespace) -> int:
    cells = run_cells(expand_tasks(args.tasks), args.seeds)  # unknown tasks, a task or seed named twice: refused
    check_base_url(args.base_url)
    writable_folder(args.trials, "--trials")  # before the episode, so a bad path never costs one
    options = {"model": args.model, "base_url": args.base_url, "trials": args.trials,
               "api_key": args.api_key or os.environ.get("OPENAI_API_KEY"), "max_turns": args.max_turns,
               "keep_turns": args.keep_turns, "max_idle_turns": args.max_idle_turns, "temperature": args.temperature,
               "retry": Retry(retries=args.retries)}
    if len(cells) == 1 and not args.skip_played:
        run = asyncio.run(play(*cells[0], **options))
        print(json.dumps(run.summary(), indent=2))
        return 0 if run.ended_by != ENDED_BY_ENDPOINT else 1
    finished: dict[int, dict[str, Any]] = {}
    try:
        rows = asyncio.run(play_many(cells, concurrency=args.concurrency, skip_played=args.skip_played,
                                     finished=finished, **options))
    except KeyboardInterrupt:  # Ctrl-C: asyncio.run cancelled the sweep, which stopped its cells
        return _interrupted(args.model, cells, finished)
    print(json.dumps(sweep_summary(args.model, rows) if len(cells) > 1 else rows[0], indent=2))
    return 0 if all(row.get("ended_by") != ENDED_BY_ENDPOINT for row in rows if not row.get("skipped")) else 1


INTERRUPTED_EXIT = 130  # as a shell reports a command stopped by SIGINT


def _interrupted(model: str, cells: Sequence[tuple[str, int]], finished: dict[int, dict[str, Any]]) -> int:
    """A sweep stopped by Ctrl-C: the summary of the cells that finished, marked ``interrupted``, and
    on stderr how to play the others."""
    rows = [finished[index] for index in sorted(finished)]
    left = [f"{task}/{seed}" for index, (task, seed) in enumerate(cells) if index not in finished]
    print(json.dumps({**sweep_summary(model, rows), "interrupted": True, "not_finished": left}, indent=2))
    print(f"storebench agent: interrupted with {len(rows)} of {len(cells)} cells finished; to play the other "
          f"{len(left)}, run the same command again with --skip-played", file=sys.stderr, flush=True)
    return INTERRUPTED_EXIT


def add_agent_command(sub: Any) -> None:
    agent = sub.add_parser(
        "agent", help="play cells with an LLM behind any OpenAI-compatible chat-completions endpoint",
        description="The baseline runner: the model gets the merchant's brief as its system prompt and the 29 "
                    "MCP tools as function tools, plays up to --max-turns turns with context compaction keeping "
                    "the last --keep-turns turns, and the episode is graded into a trial folder under --trials "
                    "(labels: model, harness, token metrics, turns). One cell prints a JSON summary with "
                    "summary.json's names (turns: store calls; turns_taken: model turns). Several cells (more "
                    "than one task or seed) are a sweep: each cell played once, --concurrency at a time, each "
                    "turn's progress line on stderr naming its cell, then one JSON summary (cells, trials, "
                    "passed, mean_composite, unplayed cells, token totals and a row per cell). Exits 1 if the "
                    "endpoint failed on a cell played now; a cell whose endpoint never answered a completion "
                    "writes no trial folder. Ctrl-C stops a sweep: the cells playing are cancelled (no folder "
                    "written), the summary of the finished cells is printed with \"interrupted\": true, and it "
                    "exits 130; run it again with --skip-played to play the rest.")
    agent.add_argument("--model", required=True, help="model name sent to the endpoint")
    agent.add_argument("--base-url", required=True,
                       help="the endpoint's base URL, e.g. http://127.0.0.1:8000/v1 (POSTs to BASE/chat/completions)")
    agent.add_argument("--api-key", help="bearer key for the endpoint (default: $OPENAI_API_KEY, if set)")
    agent.add_argument("--task", "--tasks", dest="tasks", nargs="+", default=["short-runway"], metavar="TASK",
                       help=f"{TASKS_HELP} (default short-runway); with --seeds, every task-seed cell is played")
    agent.add_argument("--seed", "--seeds", dest="seeds", nargs="+", type=seed_arg, default=[7], metavar="SEED",
                       help="task seeds (default 7)")
    agent.add_argument("--concurrency", type=positive_int, default=1,
                       help="cells played at once in a sweep (default 1); the endpoint then gets up to this many "
                            "requests at a time")
    agent.add_argument("--skip-played", action="store_true",
                       help="do not play a cell that already has a finished trial by this --model with the same "
                            "--max-turns, --keep-turns and --temperature (or none, both times) under --trials (its "
                            "score counts in the summary; one the endpoint cut short is played again): run an "
                            "interrupted sweep again with this to finish it")
    agent.add_argument("--trials", default="trials", type=path_arg, help="where the trial folders are written (default ./trials)")
    agent.add_argument("--max-turns", type=positive_int, default=MAX_TURNS, help=f"turn cap (default {MAX_TURNS})")
    agent.add_argument("--keep-turns", type=whole_number(0), default=KEEP_TURNS,
                       help=f"earlier turns kept in context by compaction, 0 or more (default {KEEP_TURNS}; 0 "
                            "sends only the brief, the opening message and a note of what was dropped)")
    agent.add_argument("--max-idle-turns", type=positive_int, default=MAX_IDLE_TURNS,
                       help=f"replies in a row without a tool call before the runner gives a last reminder and, "
                            f"if the next reply calls no tool either, stops with ended_by \"{ENDED_BY_IDLE}\" "
                            f"(default {MAX_IDLE_TURNS})")
    agent.add_argument("--temperature", type=temperature_arg,
                       help="sampling temperature (default: the endpoint's); recorded in summary.json as "
                            "metrics.temperature (absent when not given)")
    agent.add_argument("--retries", type=whole_number(0), default=RETRIES,
                       help=f"times a request is sent again when the endpoint does not answer or answers "
                            f"{', '.join(map(str, sorted(RETRY_STATUSES)))} (rate limited, overloaded, failing), "
                            f"after its Retry-After or 0.5 s doubled each time up to 8 s (default {RETRIES}; 0 "
                            "never); counted in the trial's metrics as retries")
    agent.set_defaults(func=_cmd_agent)

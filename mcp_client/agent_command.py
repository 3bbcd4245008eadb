"""``storebench agent``: the baseline LLM runner's command, for one cell or a sweep.

    storebench agent --model NAME --base-url http://127.0.0.1:8000/v1 --task short-runway --seed 7
    storebench agent --model NAME --base-url ... --tasks all --seeds 7 11 13 --concurrency 4 --skip-played

One cell plays :func:`mcp_client.agent.play` and prints its summary; several cells (more than one
task or seed) are a sweep (:mod:`mcp_client.sweep`) and print :func:`~mcp_client.sweep.sweep_summary`.
It exits 1 if the endpoint failed on a cell played now.  Ctrl-C stops a sweep: the command prints
the summary of the cells that finished with ``"interrupted": true`` and the cells left, says on
stderr to run it again with ``--skip-played``, and exits 130.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from environment.cli import TASKS_HELP, path_arg, positive_int, seed_arg, whole_number, with_examples, writable_folder
from environment.orchestration import expand_tasks, run_cells

from .agent import (
    ENDED_BY_ENDPOINT,
    ENDED_BY_IDLE,
    KEEP_TURNS,
    MAX_IDLE_TURNS,
    MAX_TURNS,
    RETRIES,
    RETRY_STATUSES,
    Retry,
    check_base_url,
    play,
    temperature_arg,
)
from .sweep import play_many, sweep_summary

__all__ = ["add_agent_command"]


def _cmd_agent(args: argparse.Namespace) -> int:
    cells = run_cells(expand_tasks(args.tasks), args.seeds)  # unknown tasks, a task or seed named twice: refused
    check_base_url(args.base_url)
    writable_folder(args.trials, "--trials")  # before the episode, so a bad path never costs one
    options = {"model": args.model, "base_url": args.base_url, "trials": args.trials,
               "api_key": args.api_key or os.environ.get("OPENAI_API_KEY"), "max_turns": args.max_turns,
               "keep_turns": args.keep_turns, "max_idle_turns": args.max_idle_turns, "temperature": args.temperature,
               "retry": Retry(retries=args.retries)}
    if len(cells) == 1 and not args.skip_played:
        try:
            run = asyncio.run(play(*cells[0], **options))
        except KeyboardInterrupt:  # Ctrl-C: asyncio.run cancelled the episode, which wrote nothing
            print(f"storebench agent: interrupted: {cells[0][0]}/{cells[0][1]} was not finished and no trial folder "
                  "was written", file=sys.stderr, flush=True)
            return INTERRUPTED_EXIT
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
    summary = sweep_summary(model, rows)
    again = len(left) + len(summary["unplayed"])  # --skip-played plays these: a trial is missing for each
    print(json.dumps({**summary, "cells": len(cells), "interrupted": True, "not_finished": left}, indent=2))
    print(f"storebench agent: interrupted with {len(rows)} of {len(cells)} cells finished; to play the {again} "
          f"without a trial, run the same command again with --skip-played", file=sys.stderr, flush=True)
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
                    "passed, mean_composite, unplayed cells, the token totals of the cells played now, not of those "
                    "--skip-played skipped, and a row per cell). Exits 1 if the "
                    "endpoint failed on a cell played now; a cell whose endpoint never answered a completion "
                    "writes no trial folder. Ctrl-C stops a sweep: the cells playing are cancelled (no folder "
                    "written), the summary of the finished cells is printed with \"interrupted\": true, and it "
                    "exits 130; run it again with --skip-played to play the rest.")
    agent.add_argument("--model", required=True, help="model name sent to the endpoint")
    agent.add_argument("--base-url", required=True,
                       help="the endpoint's base URL, e.g. http://127.0.0.1:8000/v1 (POSTs to BASE/chat/completions); "
                            "one carrying user:password@ is refused: give the key with --api-key")
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
    with_examples(agent, "storebench agent --model my-model --base-url http://127.0.0.1:8000/v1 --task steady --seed 7",
                  "storebench agent --model my-model --base-url https://api.example.com/v1 --tasks eval \\",
                  "    --seeds 7 11 13 --concurrency 4 --trials trials/my-model --skip-played")

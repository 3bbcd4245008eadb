"""``manage.py run_agents --model M --base-url URL --tasks short-runway --seeds 7 11 --out trials/``:
submit a batch of model trials (one Celery task per cell, each playing ``storebench agent``'s
runner into ``OUT/job-<id>/<task>-<seed>-agent``) and follow its progress.  The API key is read by
each worker from the environment variable named by ``--api-key-env``; it is never stored.

A cell that fails fails only itself: the others play on, and the job then ends failed, naming
the failed cells; the command prints the done cells' summary and the job folder before saying
so."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from environment.cli import TASKS_HELP, path_arg, positive_int, positive_seconds, seed_arg, whole_number
from environment.errors import StoreBenchError
from jobs.agents import DEFAULT_KEY_ENV, RUNNER
from jobs.management.follow import submitted
from jobs.models import Job
from jobs.submit import submit_agents
from mcp_client.agent import KEEP_TURNS, MAX_IDLE_TURNS, MAX_TURNS, RETRIES, temperature_arg


class Command(BaseCommand):
    help = ("Submit a batch of model trials (one task per task-seed cell, each an LLM playing the cell over "
            "the 29 MCP tools, as `storebench agent` does) and show its progress.")

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True, help="model name sent to the endpoint")
        parser.add_argument("--base-url", required=True,
                            help="the OpenAI-compatible endpoint's base URL, http(s) with a host, e.g. "
                                 "http://127.0.0.1:8000/v1 (workers POST to BASE/chat/completions; every "
                                 "worker must reach it)")
        parser.add_argument("--tasks", nargs="+", default=["all"], help=f"{TASKS_HELP} (default all)")
        parser.add_argument("--seeds", nargs="+", type=seed_arg, default=[7, 11, 13],
                            help="seeds (default 7 11 13)")
        parser.add_argument("--out", required=True, type=path_arg,
                            help=f"folder to hold the trials: each cell gets OUT/<task>-<seed>-{RUNNER} (none "
                                 "of them may exist yet), holding the session folder and agent.log")
        parser.add_argument("--api-key-env", default=DEFAULT_KEY_ENV,
                            help=f"NAME of the environment variable each worker reads the bearer key from "
                                 f"(default {DEFAULT_KEY_ENV}); only the name is stored. Unset on a worker: "
                                 "it sends no key")
        parser.add_argument("--max-turns", type=positive_int, default=MAX_TURNS,
                            help=f"turn cap per trial (default {MAX_TURNS})")
        parser.add_argument("--keep-turns", type=whole_number(0), default=KEEP_TURNS,
                            help=f"earlier turns kept in context by compaction, 0 or more (default {KEEP_TURNS})")
        parser.add_argument("--max-idle-turns", type=positive_int, default=MAX_IDLE_TURNS,
                            help="replies in a row without a tool call before a last reminder; one more "
                                 f"ends the trial (default {MAX_IDLE_TURNS})")
        parser.add_argument("--temperature", type=temperature_arg,
                            help="sampling temperature (default: the endpoint's)")
        parser.add_argument("--retries", type=whole_number(0), default=RETRIES,
                            help=f"times a request is sent again when the endpoint does not answer, is rate "
                                 f"limited or overloaded (default {RETRIES}; see storebench agent --help)")
        parser.add_argument("--timeout", type=positive_seconds, default=3600,
                            help="seconds to wait for the job (default 3600); the job keeps running on the "
                                 "workers after that")
        parser.add_argument("--no-wait", action="store_true", help="submit and print the job id only")

    def handle(self, *args, **options):
        try:
            job = submit_agents(options["tasks"], options["seeds"], options["out"], model=options["model"],
                                base_url=options["base_url"], api_key_env=options["api_key_env"],
                                max_turns=options["max_turns"], keep_turns=options["keep_turns"],
                                max_idle_turns=options["max_idle_turns"], temperature=options["temperature"],
                                retries=options["retries"])
        except StoreBenchError as exc:
            raise CommandError(exc.message) from exc
        try:
            followed = submitted(job, "model trials", options, self.stdout.write)
        except CommandError:
            job.refresh_from_db()
            if job.status == Job.Status.FAILED and job.summary:  # some cells failed: show what the others did
                self.stdout.write(json.dumps(job.summary))
                self.stdout.write(f"the done cells are in {job.result_path}")
            raise
        if followed is not None:
            self.stdout.write(json.dumps(followed.summary))

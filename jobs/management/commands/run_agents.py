"""``manage.py run_agents --model M --base-url URL --tasks short-runway --seeds 7 11 --out trials/``:
submit a batch of model trials (one Celery task per cell, each playing ``storebench agent``'s
runner into ``OUT/job-<id>/<task>-<seed>-agent``) and follow its progress.  The API key is read by
each worker from the environment variable named by ``--api-key-env``; it is never stored.

A cell that fails fails only itself: the others play on, and the job then ends failed, naming
the failed cells; the command prints the done cells' summary and the job folder before saying
so.  ``run_agents --retry JOB`` plays those failed cells again, in the same job and folder."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from environment.cli import TASKS_HELP, path_arg, positive_int, positive_seconds, seed_arg, whole_number
from environment.errors import StoreBenchError
from jobs.agents import DEFAULT_KEY_ENV, RUNNER
from jobs.management.follow import raise_if_failed, submitted
from jobs.models import Job
from jobs.submit import retry_agents, submit_agents
from mcp_client.agent import KEEP_TURNS, MAX_IDLE_TURNS, MAX_TURNS, RETRIES, temperature_arg

# What a new job is given, with its default; --retry takes none of them: they are the job's own.
REQUIRED = ("model", "base_url", "out")
JOB_OPTIONS: dict[str, Any] = {**dict.fromkeys(REQUIRED), "tasks": ["all"], "seeds": [7, 11, 13],
                               "max_turns": MAX_TURNS, "keep_turns": KEEP_TURNS, "max_idle_turns": MAX_IDLE_TURNS,
                               "temperature": None, "retries": RETRIES}


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


class Command(BaseCommand):
    help = ("Submit a batch of model trials (one task per task-seed cell, each an LLM playing the cell over "
            "the 29 MCP tools, as `storebench agent` does) and show its progress. A cell that fails (its "
            "endpoint never answered) fails only itself; the job ends failed naming those cells, and "
            "--retry JOB_ID plays them again.")

    def add_arguments(self, parser):
        parser.add_argument("--model", help="model name sent to the endpoint (required, unless --retry)")
        parser.add_argument("--base-url",
                            help="the OpenAI-compatible endpoint's base URL, http(s) with a host, e.g. "
                                 "http://127.0.0.1:8000/v1 (workers POST to BASE/chat/completions; every "
                                 "worker must reach it; required, unless --retry)")
        parser.add_argument("--tasks", nargs="+", help=f"{TASKS_HELP} (default all)")
        parser.add_argument("--seeds", nargs="+", type=seed_arg, help="seeds (default 7 11 13)")
        parser.add_argument("--out", type=path_arg,
                            help=f"folder to hold the trials (required, unless --retry): each job writes "
                                 f"OUT/job-<id>, each cell OUT/job-<id>/<task>-<seed>-{RUNNER}, holding the "
                                 "session folder and agent.log")
        parser.add_argument("--api-key-env",
                            help=f"NAME of the environment variable each worker reads the bearer key from "
                                 f"(default {DEFAULT_KEY_ENV}; with --retry, the job's own); only the name is "
                                 "stored. Unset on a worker: it sends no key")
        parser.add_argument("--max-turns", type=positive_int, help=f"turn cap per trial (default {MAX_TURNS})")
        parser.add_argument("--keep-turns", type=whole_number(0),
                            help=f"earlier turns kept in context by compaction, 0 or more (default {KEEP_TURNS})")
        parser.add_argument("--max-idle-turns", type=positive_int,
                            help="replies in a row without a tool call before a last reminder; one more "
                                 f"ends the trial (default {MAX_IDLE_TURNS})")
        parser.add_argument("--temperature", type=temperature_arg,
                            help="sampling temperature (default: the endpoint's); recorded in each trial's "
                                 "summary.json as metrics.temperature")
        parser.add_argument("--retries", type=whole_number(0),
                            help=f"times a request is sent again when the endpoint does not answer, is rate "
                                 f"limited or overloaded (default {RETRIES}; see storebench agent --help)")
        parser.add_argument("--retry", type=positive_int, metavar="JOB_ID",
                            help="play again the failed cells of model-trial job JOB_ID (nothing else), in the "
                                 "same job and job folder, once that job has ended; the model, endpoint, cells, "
                                 "turn settings, temperature and key variable are the job's own (only "
                                 "--api-key-env may name another variable), then follow it as a new job")
        parser.add_argument("--timeout", type=positive_seconds, default=3600,
                            help="seconds to wait for the job (default 3600); the job keeps running on the "
                                 "workers after that")
        parser.add_argument("--no-wait", action="store_true", help="submit and print the job id only")

    def handle(self, *args, **options):
        try:
            if options["retry"] is not None:
                job, cells = self._retry(options)
                detail = f", playing again the {len(cells)} that failed: {', '.join(cells)}"
            else:
                job, detail = self._submit(options), ""
        except StoreBenchError as exc:
            raise CommandError(exc.message) from exc
        followed = submitted(job, "model trial", options, self.stdout.write, detail)
        if followed is None:
            return
        if followed.status != Job.Status.FAILED:
            self.stdout.write(json.dumps(followed.summary))
            self.stdout.write(f"trial folders in {followed.result_path}")
        elif followed.summary:  # some cells failed: show what the others did
            self.stdout.write(json.dumps(followed.summary))
            where = (f"the done cells are in {followed.result_path}; " if followed.done
                     else "no cell was played to the end; ")
            self.stdout.write(f"{where}play the failed ones again with `manage.py run_agents --retry {followed.pk}`")
        raise_if_failed(followed)

    def _submit(self, options: dict) -> Job:
        missing = [_flag(name) for name in REQUIRED if options[name] is None]
        if missing:
            named = ", ".join(missing[:-1]) + " and " + missing[-1] if len(missing) > 1 else missing[0]
            raise StoreBenchError(f"{named} {'is' if len(missing) == 1 else 'are'} required "
                                  "(unless --retry JOB_ID plays an ended job's failed cells again)")
        given = {name: default if options[name] is None else options[name] for name, default in JOB_OPTIONS.items()}
        tasks, seeds, out = given.pop("tasks"), given.pop("seeds"), given.pop("out")
        return submit_agents(tasks, seeds, out, api_key_env=options["api_key_env"] or DEFAULT_KEY_ENV, **given)

    def _retry(self, options: dict) -> tuple[Job, list[str]]:
        given = [_flag(name) for name in JOB_OPTIONS if options[name] is not None]
        if given:
            raise StoreBenchError(f"--retry plays job {options['retry']}'s failed cells as the job was submitted: "
                                  f"leave out {', '.join(given)} (only --api-key-env, --timeout and --no-wait go "
                                  "with --retry)")
        return retry_agents(options["retry"], api_key_env=options["api_key_env"])

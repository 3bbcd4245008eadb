"""``storebench``, the installed command: the core's subcommands plus those that need MCP.

:func:`environment.cli.build_parser` builds every core subcommand (world, tasks, run,
batch, replay, analyze, calibrate, regrade, search, bench); this module adds

* ``mcp``: serve episodes over MCP, on stdio (one episode) or streamable HTTP (many,
  one bearer token each, an operator API, durable sessions).  Every episode served
  ends as a graded trial folder (:mod:`mcp_client.sessions`);
* ``agent``: the baseline LLM runner (:mod:`mcp_client.agent`), any OpenAI-compatible
  chat-completions endpoint playing one cell over the MCP tools.

The split keeps the layer rule: ``environment`` never imports the MCP SDK, and the
console entry point ``storebench`` lives here, one layer up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environment.cli import build_parser as core_parser
from environment.cli import main as core_main
from environment.cli import path_arg, positive_int, seconds_above_zero, seed_arg, with_examples, writable_folder
from environment.errors import InvalidSeed, check_seed

OPERATOR_TOKEN_ENV = "STOREBENCH_OPERATOR_TOKEN"
ALLOWED_HOSTS_ENV = "STOREBENCH_ALLOWED_HOSTS"


def _labels(args: argparse.Namespace) -> dict:
    labels: dict[str, Any] = {}
    if getattr(args, "model", None):
        labels["model"] = args.model
    if getattr(args, "harness", None):
        labels["harness"] = args.harness
    return labels


def _read_labels_file(path: str | None) -> Any:
    """Labels a harness wrote while it played (token usage, say); read when the session settles."""
    if not path:
        return None
    if not Path(path).exists():
        print(f"storebench: --labels-file {path} does not exist; labels left out", file=sys.stderr)
        return None
    try:
        return json.loads(Path(path).read_text())
    except ValueError as exc:
        print(f"storebench: --labels-file {path} is not JSON ({exc}); labels left out", file=sys.stderr)
        return None


def _apply_labels_file(session: Any, path: str | None) -> None:
    """Add the harness's labels to a stdio session before it settles: they may add labels, never
    replace the command line's (``--model``, ``--harness``) nor the server's (``env``,
    ``ended_by``); see :mod:`mcp_client.sessions`.  A file that cannot be used is left out, with a
    line saying why, and the episode is still settled and written."""
    from .sessions import SessionError

    data = _read_labels_file(path)
    if data is None:
        return
    try:
        kept = session.add_client_labels(data)
    except SessionError as exc:
        print(f"storebench: --labels-file {path}: {exc.message}; labels left out", file=sys.stderr)
        return
    if kept:
        print(f"storebench: --labels-file {path} sets {', '.join(kept)}, which the command line gave; the command "
              "line's kept", file=sys.stderr)


def port_arg(text: str) -> int:
    """argparse type: a TCP port, 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: give 0 to 65535 (0 picks a free one)")
    return value


# Options that only mean something on one transport: given on the other they would be silently
# ignored, so they are refused instead.  The HTTP ones default to None here and take the defaults
# below (HTTP_DEFAULTS) once --http is known, so that giving one is always seen.
HTTP_ONLY = {"episode": "--episode", "host": "--host", "port": "--port", "allowed_host": "--allowed-host",
             "max_sessions_per_token": "--max-sessions-per-token", "header_timeout": "--header-timeout",
             "max_connections": "--max-connections", "state": "--state", "no_fsync": "--no-fsync",
             "operator_token": "--operator-token"}
HEADER_TIMEOUT = 10.0  # seconds a connection has to send a request head
HTTP_DEFAULTS = {"host": "127.0.0.1", "port": 8765, "max_sessions_per_token": 8, "header_timeout": HEADER_TIMEOUT}
STDIO_ONLY = {"model": "--model", "harness": "--harness", "labels_file": "--labels-file"}


def _given(args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    """The options given on the command line (a given 0 counts: only None and an unset flag do not)."""
    return [flag for dest, flag in options.items() if getattr(args, dest) is not None and getattr(args, dest) is not False]


def _cmd_mcp(args: argparse.Namespace) -> int:
    from environment.tasks import get_task

    http_only, stdio_only = _given(args, HTTP_ONLY), _given(args, STDIO_ONLY)
    if not args.http and http_only:
        print(f"storebench: {', '.join(http_only)} only {'applies' if len(http_only) == 1 else 'apply'} to serving "
              "over HTTP: add --http, or leave "
              f"{'it' if len(http_only) == 1 else 'them'} out to serve --task/--seed on stdio", file=sys.stderr)
        return 2
    if args.http and stdio_only:
        print(f"storebench: {', '.join(stdio_only)} only {'applies' if len(stdio_only) == 1 else 'apply'} to a "
              "stdio episode: leave "
              f"{'it' if len(stdio_only) == 1 else 'them'} out with --http (an HTTP session's labels go through "
              "the operator API: /operator/sessions and its labels route)", file=sys.stderr)
        return 2
    if args.no_trial and args.trials:
        print("storebench: --no-trial writes no trial folder, so --trials has nowhere to send one: give one of them",
              file=sys.stderr)
        return 2
    for dest, default in HTTP_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    if args.http:
        task_seed = [flag for flag, value in (("--task", args.task), ("--seed", args.seed)) if value is not None]
        if task_seed and args.episode:
            print(f"storebench: {' and '.join(task_seed)} with --episode: over HTTP every episode is an --episode "
                  "TASK:SEED (give it once per episode); leave --task and --seed out", file=sys.stderr)
            return 2
        if len(task_seed) == 1:
            print(f"storebench: {task_seed[0]} alone: over HTTP give --episode TASK:SEED (or both --task and "
                  "--seed, which serve that one episode)", file=sys.stderr)
            return 2
        episodes = []
        for spec in args.episode or ([f"{args.task}:{args.seed}"] if args.task else []):
            task_id, _, seed = spec.partition(":")
            if not seed.isdigit() or task_id in ("", "None"):
                print(f"storebench: --episode takes TASK:SEED, got {spec!r}", file=sys.stderr)
                return 2
            get_task(task_id)
            try:
                episodes.append((task_id, check_seed(int(seed))))
            except InvalidSeed as exc:
                print(f"storebench: --episode {spec!r}: {exc.message}", file=sys.stderr)
                return 2
        if args.no_fsync and not args.state:
            print("storebench: --no-fsync only applies with --state (it skips flushing each call written to the "
                  "state folder): add --state DIR or leave it out", file=sys.stderr)
            return 2
        operator_token = args.operator_token or os.environ.get(OPERATOR_TOKEN_ENV)
        if operator_token is not None and len(operator_token) < 16:
            print("storebench: the operator token must be at least 16 characters", file=sys.stderr)
            return 2
        if not episodes and not operator_token:
            print("storebench: nothing to serve: give --episode TASK:SEED, or an operator token "
                  f"(--operator-token or {OPERATOR_TOKEN_ENV}) to open sessions through the operator API",
                  file=sys.stderr)
            return 2
        from .http import host_security, serve_http, settle_at_exit
        from .limits import ServerLimits

        allowed_hosts = list(args.allowed_host or []) + [
            h for h in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()]
        try:
            host_security(args.host, args.port, allowed_hosts)
        except ValueError as exc:
            print(f"storebench: {exc}", file=sys.stderr)
            return 2
        if args.state:
            writable_folder(args.state, "--state")
        if args.trials and not args.no_trial:
            writable_folder(args.trials, "--trials")

        hub = serve_http(args.host, args.port, episodes, state=args.state,
                         trials=None if args.no_trial else (args.trials or (None if args.state else "trials")),
                         operator_token=operator_token, allowed_hosts=allowed_hosts, fsync=not args.no_fsync,
                         write_trials=not args.no_trial,
                         limits=ServerLimits(header_timeout=args.header_timeout,
                                             max_sessions_per_token=args.max_sessions_per_token,
                                             **({"max_connections": args.max_connections}
                                                if args.max_connections else {})))
        # Stopped (Ctrl-C, SIGTERM): with nothing durable, settle what is still open rather than lose it;
        # either way say where this run's trial folders went.
        settle_at_exit(hub, durable=args.state is not None)
        return 0
    if args.task is None or args.seed is None:
        print("storebench: stdio serving needs --task and --seed", file=sys.stderr)
        return 2
    get_task(args.task)  # refuse an unknown task before the server starts
    trials = None if args.no_trial else args.trials or "trials"
    if trials is not None:
        writable_folder(trials, "--trials")
    if args.labels_file is not None and not Path(args.labels_file).parent.is_dir():
        # Read only at hang-up: a typo would otherwise be found when the episode is over.
        print(f"storebench: --labels-file {args.labels_file}: its folder {Path(args.labels_file).parent} does not "
              "exist yet; the labels are read from that file when the host hangs up, so the harness must create "
              "it there (or fix the path)", file=sys.stderr, flush=True)
    from .server import serve_stdio

    # stderr is the host's log: stdout carries the protocol alone.
    print(f"storebench: serving {args.task} seed {args.seed} over MCP on stdin/stdout; "
          + (f"its trial folder goes under {trials} when the client hangs up or the shift ends" if trials else
             "no trial folder (--no-trial)"), file=sys.stderr, flush=True)
    # With a labels file, the folder is written at hang-up (not at the horizon), so the file is read first.
    session = serve_stdio(args.task, args.seed, trials=trials, labels=_labels(args),
                          settle_at_horizon=args.labels_file is None)
    if not session.episode.action_log and not session.settled:
        # Nobody played: a host that only listed the tools, a client that never connected.
        print("storebench: no tool was called, so no trial was written", file=sys.stderr)
        return 0
    _apply_labels_file(session, args.labels_file)
    result = session.end()
    if result.get("out"):
        print(f"storebench: wrote {result['out']} (composite {result['reward_composite']:.3f})", file=sys.stderr)
    return 0


def _add_mcp(sub: Any) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve episodes to MCP clients (stdio, or streamable HTTP with --http)",
        description="Serve the 29 tools over the Model Context Protocol. The server's instructions, the prompt "
                    "'brief' and the resource storebench://brief carry the merchant's brief. Without --http: one "
                    "episode of --task/--seed on stdin/stdout, for any MCP-capable harness; when the host hangs "
                    "up (or the horizon is reached) the episode is graded and its trial folder written under "
                    "--trials. With --http: every --episode TASK:SEED on http://HOST:PORT/mcp, each behind its "
                    "own bearer token (printed at start); a token reaches its episode only; with an operator "
                    "token, /operator opens, ends, settles and lists sessions; with --state every session's "
                    "calls are kept on disk and a restarted server resumes them. Grading, calibration and "
                    "reset are never reachable through a tool. An option marked --http (or stdio) is refused on "
                    "the other transport rather than ignored.")
    mcp.add_argument("--task", help="task id (required on stdio; with --http and no --episode, the same as --episode "
                                    "TASK:SEED)")
    mcp.add_argument("--seed", type=seed_arg, help="task seed (required on stdio; with --http, see --task)")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    mcp.add_argument("--episode", action="append", metavar="TASK:SEED",
                     help="an episode to open at start (repeatable; --http only)")
    mcp.add_argument("--host", help="--http: address to listen on (default 127.0.0.1)")
    mcp.add_argument("--port", type=port_arg, help="--http: port (default 8765; 0 picks a free one)")
    mcp.add_argument("--allowed-host", action="append", metavar="NAME[:PORT]",
                     help="--http: a host name clients use to reach the server (repeatable; or "
                          f"{ALLOWED_HOSTS_ENV}=a,b); needed when listening on 0.0.0.0 behind a real name")
    mcp.add_argument("--max-sessions-per-token", type=positive_int,
                     help="--http: live handshake-era MCP sessions one token may hold (default 8)")
    mcp.add_argument("--header-timeout", type=seconds_above_zero(HEADER_TIMEOUT),
                     help="--http: seconds a connection has to send a complete request head (default 10)")
    mcp.add_argument("--max-connections", type=positive_int,
                     help="--http: open connections at most (default: half the file-descriptor limit, <= 1000)")
    mcp.add_argument("--state", metavar="DIR", type=path_arg, help="--http: keep every session's calls here and resume them "
                                                    "on restart")
    mcp.add_argument("--no-fsync", action="store_true",
                     help="--http with --state: write each call without fsync (survives the server being killed, "
                          "not the machine crashing; saves a disk flush per operation)")
    mcp.add_argument("--trials", metavar="DIR", type=path_arg, help="where trial folders are written (default ./trials, or "
                                                     "STATE/trials with --state)")
    mcp.add_argument("--no-trial", action="store_true", help="write no trial folder (a throwaway episode)")
    mcp.add_argument("--operator-token", metavar="TOKEN",
                     help=f"--http: serve the operator API behind this bearer token (or set {OPERATOR_TOKEN_ENV})")
    mcp.add_argument("--model", help="stdio: label: the model playing (recorded in summary.json)")
    mcp.add_argument("--harness", help="stdio: label: the harness driving it (recorded in summary.json)")
    mcp.add_argument("--labels-file", metavar="FILE", type=path_arg,
                     help="stdio: a JSON object of labels (e.g. token metrics) read when the host hangs up; "
                          "the trial folder is then written, also for an episode that reached its horizon earlier")
    mcp.set_defaults(func=_cmd_mcp)
    with_examples(mcp, "storebench mcp --task steady --seed 7 --trials trials   # stdio, for an MCP host",
                  "storebench mcp --http --episode steady:7 --episode liquidity:11 --port 8765",
                  "storebench mcp --http --episode steady:7 --state state/   # sessions resume after a restart")


def _extend(sub: Any) -> None:
    from .agent_command import add_agent_command

    _add_mcp(sub)
    add_agent_command(sub)


def build_parser() -> argparse.ArgumentParser:
    return core_parser(_extend)


def main(argv: Sequence[str] | None = None) -> int:
    return core_main(argv, build_parser())


if __name__ == "__main__":
    sys.exit(main())

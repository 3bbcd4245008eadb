"""How long ``storebench mcp --http --state`` takes to start with settled sessions in its state folder.

Measured and printed, never asserted.  The figure is the hub's start
(``EpisodeHub(state=...)``: reading every session folder, resuming the live sessions,
listing the settled ones), each start in a fresh process as a restarted server has it,
with ``--sessions`` settled sessions in the folder and, for reference, with none.  Each
session (of :data:`TASK`, on the seeds the public calibration covers) plays ``--windows`` windows of a list, a status and an ``end_window`` and is
ended by the operator (the whole episode with the default, where it settles itself).
Also printed: the memory the hub holds once started (``tracemalloc``, a separate start).

``--mcp-client DIR`` times the ``mcp_client`` package found in ``DIR`` instead of this
one, for a side-by-side against an earlier commit on the same state folder::

    mkdir /tmp/before && git archive HEAD mcp_client | tar -x -C /tmp/before
    python -m benchmarks.mcp_state --mcp-client /tmp/before

The state folder is built with this checkout's code.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from environment.cli import positive_int

__all__ = ["build_state", "start_figures"]

TASK = "short-runway"
SEEDS = (7, 11, 13)  # the cells calibration/public.json covers: each settles without calibrating on the spot
_LOAD_FROM = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mcp_client", {init!r}, submodule_search_locations=[{folder!r}])
module = importlib.util.module_from_spec(spec)
sys.modules["mcp_client"] = module
spec.loader.exec_module(module)
"""
_START = """\
import json, sys, time, tracemalloc
{load}
from mcp_client.http import EpisodeHub
import mcp_client.http
memory = sys.argv[2] == "memory"
if memory:
    tracemalloc.start()
started = time.perf_counter()
hub = EpisodeHub(state=sys.argv[1])
seconds = time.perf_counter() - started
held = tracemalloc.get_traced_memory()[0] if memory else None
print(json.dumps({{"seconds": seconds, "bytes": held, "sessions": len(hub.sessions()),
                  "set_aside": len(hub.set_aside), "code": mcp_client.http.__file__}}))
"""


def build_state(state: Path, sessions: int, windows: int) -> None:
    """``sessions`` settled sessions of :data:`TASK` in ``state``, each played ``windows`` windows."""
    from mcp_client.http import EpisodeHub

    hub = EpisodeHub(state=state)
    for number in range(sessions):
        _token, session = hub.open_session(TASK, SEEDS[number % len(SEEDS)], labels={"model": "bench", "harness": "benchmarks.mcp_state"})
        for _window in range(windows):
            if session.settled:
                break
            for name, args in (("list_orders", {"page_size": 5}), ("store_status", {}), ("end_window", {})):
                session.episode.call(name, args)
                hub.after_call(session.episode)
        if not session.settled:
            hub.end(session.id)


def _start(state: Path, kind: str, mcp_client: Path | None) -> dict:
    load = "" if mcp_client is None else _LOAD_FROM.format(init=str(mcp_client / "mcp_client" / "__init__.py"),
                                                           folder=str(mcp_client / "mcp_client"))
    done = subprocess.run([sys.executable, "-c", _START.format(load=load), str(state), kind],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchmarks.mcp_state: a start failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def start_figures(state: Path, runs: int, mcp_client: Path | None = None) -> dict:
    """Median start of ``runs`` fresh processes on ``state``, each run's seconds, and the memory held."""
    timed = [_start(state, "time", mcp_client) for _ in range(runs)]
    memory = _start(state, "memory", mcp_client)
    return {"median_s": statistics.median(t["seconds"] for t in timed), "runs_s": [t["seconds"] for t in timed],
            "held_mib": memory["bytes"] / 2**20, "sessions": timed[0]["sessions"], "set_aside": timed[0]["set_aside"],
            "code": timed[0]["code"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcp_state", description=(
        "Time an HTTP MCP server's start on a --state folder holding settled sessions (medians of fresh "
        "processes; printed, never asserted)."))
    parser.add_argument("--sessions", type=positive_int, default=100, help="settled sessions (default 100)")
    parser.add_argument("--windows", type=positive_int, default=30,
                        help="windows each plays before it ends (default 30: short-runway's whole episode)")
    parser.add_argument("--runs", type=positive_int, default=5, help="starts timed per figure (default 5)")
    parser.add_argument("--mcp-client", type=Path, metavar="DIR",
                        help="time the mcp_client package in DIR (an export of another commit) instead of this one")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    if args.mcp_client is not None and not (args.mcp_client / "mcp_client" / "__init__.py").is_file():
        parser.error(f"--mcp-client {args.mcp_client} holds no mcp_client package; export one with "
                     f"git archive HEAD mcp_client | tar -x -C {args.mcp_client}")
    with tempfile.TemporaryDirectory(prefix="storebench-mcp-state-") as tmp:
        empty, full = Path(tmp) / "empty", Path(tmp) / "full"
        print(f"bench: building {args.sessions} settled sessions of {args.windows} window(s)", file=sys.stderr,
              flush=True)
        build_state(full, args.sessions, args.windows)
        figures = {"empty": start_figures(empty, args.runs, args.mcp_client),
                   "settled": start_figures(full, args.runs, args.mcp_client)}
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"code: {figures['settled']['code']}")
    for row in figures.values():
        runs = ", ".join(f"{s:.3f}" for s in row["runs_s"])
        print(f"start with {row['sessions']} settled session(s): median {row['median_s']:.3f} s "
              f"(runs {runs}); hub holds {row['held_mib']:.1f} MiB; set aside {row['set_aside']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Speed and size, measured (not asserted): ``storebench bench``.

One command measures, in one run so that figures sit side by side: the engine in
process (a tool call per tool, a window advance, arming, a busy episode), each
anchor's episode on ``steady`` and on ``full-year``, the full calibration with one
and with two worker processes (``--calibration``, on unless ``--quick``), and the
memory a live episode holds (with how many fit on one 24 GiB machine).  ``targets`` then
sets each figure against its target in the operations spec, met or not.

Figures are medians over repeated runs; absolute times drift on shared machines,
ratios less so.  This module reads the wall clock only to measure; nothing here
feeds the simulation.  It stays pure Python and starts no adapter: the MCP and
console round trips are measured by the ``benchmarks`` package (``python -m
benchmarks``), which runs these figures too and adds those; a part that cannot run
is reported as unavailable with the reason instead of failing the whole bench.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

from .anchors import ANCHORS, run_policy
from .api import arm
from .engine.state import OrderState
from .world import load_world


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 4)


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_engine(repeats: int = 5) -> dict[str, Any]:
    started = time.perf_counter()
    load_world()
    world_load = time.perf_counter() - started

    arm_times = [_timed(lambda: arm("steady", 7)) for _ in range(max(5, repeats * 2))]

    # One in-process tool call, per tool, on a live mid-episode store.
    ep = arm("steady", 7)
    for _ in range(6):
        ep.call("end_window")
    product = ep.products[2].id
    variant = ep.products[2].variants[0].id
    calls: dict[str, dict[str, Any]] = {
        "store_status": {}, "list_orders": {"page_size": 100}, "list_products": {"page_size": 100},
        "get_product": {"product_id": product}, "list_inventory": {"level": "variant", "page_size": 100},
        "list_returns": {}, "sales_report": {"days": 30, "page_size": 100},
        "search_supply_catalog": {"page_size": 100}, "finance_summary": {}, "ledger_entries": {"page_size": 100},
        "set_price": {"product_id": product, "price": "55.00"},
        "update_listing_copy": {"product_id": product, "description": "Soft merino with a relaxed fit."},
        "dispose_stock": {"variant_id": variant, "quantity": 1},
    }
    per_tool: dict[str, float | None] = {}
    all_samples = []
    for name, args in calls.items():
        samples = []
        for _ in range(repeats * 8):
            ep.ops_left = 10_000  # measure calls, not window advances
            samples.append(_timed(partial(ep.call, name, args)))
        per_tool[name] = _median_ms(samples)
        all_samples += samples
    ship = []
    for o in sorted(ep.orders.values(), key=lambda o: o.id):
        if o.status == OrderState.OPEN and o.variant.on_hand >= o.quantity:
            ep.ops_left = 10_000
            ship.append(_timed(partial(ep.call, "fulfill_order", {"order_id": o.id})))
    per_tool["fulfill_order"] = _median_ms(ship) if ship else None
    all_samples += ship

    # Window advance: end_window on an otherwise idle store.
    advances = []
    ep = arm("steady", 7)
    while not ep.over:
        advances.append(_timed(partial(ep.call, "end_window")))

    # A 60-window episode that makes 20 calls every window (19 + the last one advances).
    def busy_episode() -> None:
        e = arm("steady", 7)
        reads = [("list_orders", {}), ("list_returns", {}), ("list_inventory", {}), ("sales_report", {}),
                 ("get_product", {"product_id": product}), ("finance_summary", {})]
        i = 0
        while not e.over:
            open_orders = [o for o in e.orders.values() if o.status == OrderState.OPEN and o.variant.on_hand]
            if open_orders and i % 2:
                e.call("fulfill_order", {"order_id": min(open_orders, key=lambda o: o.deadline).id})
            else:
                e.call(*reads[i % len(reads)])
            i += 1

    busy = [_timed(busy_episode) for _ in range(max(3, repeats))]
    steady_st = [_timed(lambda: run_policy(arm("steady", 7), "smart-triage")) for _ in range(max(3, repeats))]
    full_year = [_timed(lambda: run_policy(arm("full-year", 7), "smart-triage")) for _ in range(2)]
    return {
        "world_generate_and_check_s": round(world_load, 3),
        "arm_episode_ms_p50": _median_ms(arm_times),
        "tool_call_ms_p50": _median_ms(all_samples),
        "tool_call_ms_p50_by_tool": per_tool,
        "window_advance_ms_p50": _median_ms(advances),
        "episode_60_windows_20_calls_s_p50": round(statistics.median(busy), 3),
        "smart_triage_steady_s_p50": round(statistics.median(steady_st), 3),
        "smart_triage_full_year_s_p50": round(statistics.median(full_year), 3),
        "medusa_reference_ms": {"trivial_read": 2.7, "read_one_product": 30, "update_price": 53,
                                "list_100_orders": 215, "list_100_products": "500-1100"},
    }


# --- whole episodes per anchor --------------------------------------------------------


def _play_anchor(task: str, name: str) -> None:
    run_policy(arm(task, 7), name)


def bench_anchors(repeats: int = 3, full_year_repeats: int = 1) -> dict[str, Any]:
    """Median wall time (s) of one whole episode per anchor, on steady and on full-year."""
    out = {}
    for task, n in (("steady", repeats), ("full-year", full_year_repeats)):
        out[task] = {name: round(statistics.median(_timed(partial(_play_anchor, task, name))
                                                   for _ in range(max(1, n))), 3) for name in ANCHORS}
    return out


# --- subprocesses -----------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def _run_json(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv``; its last stdout line as JSON, or ``{"unavailable": reason}``."""
    try:
        done = subprocess.run(argv, cwd=REPO, env=env or _env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"unavailable": f"timed out after {timeout:.0f} s: {' '.join(argv[1:4])}"}
    except OSError as exc:
        return {"unavailable": f"cannot run {argv[0]}: {exc}"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"unavailable": f"exit {done.returncode}: {tail[:300]}"}
    try:
        return cast(dict[str, Any], json.loads(lines[-1]))
    except ValueError:
        return {"unavailable": f"no JSON in the output: {lines[-1][:200]}"}


def bench_calibration(workers: tuple[int, ...] = (1, 2), timeout: float = 1800) -> dict[str, Any]:
    """Wall time of the full calibration (the 12 evaluation tasks on the public seeds,
    six anchors each) with each worker count, through ``storebench calibrate``; and
    whether every run wrote the same file."""
    from .tasks import PUBLIC_SEEDS, all_tasks

    tasks = [t.id for t in all_tasks("eval")]
    out: dict[str, Any] = {"tasks": len(tasks), "seeds": list(PUBLIC_SEEDS), "cells": len(tasks) * len(PUBLIC_SEEDS)}
    files = []
    with tempfile.TemporaryDirectory(prefix="storebench-bench-") as tmp:
        for n in workers:
            path = Path(tmp, f"cal-{n}.json")
            argv = [sys.executable, "-m", "environment", "calibrate", "--tasks", *tasks,
                    "--seeds", *map(str, PUBLIC_SEEDS), "--out", str(path), "--workers", str(n)]
            started = time.perf_counter()
            try:
                done = subprocess.run(argv, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                out[f"wall_s_{n}_workers"] = None
                out["unavailable"] = f"calibration with {n} workers timed out after {timeout:.0f} s"
                continue
            wall = time.perf_counter() - started
            if not path.exists():
                out[f"wall_s_{n}_workers"] = None
                out["unavailable"] = f"calibration with {n} workers wrote no file (exit {done.returncode})"
                continue
            out[f"wall_s_{n}_workers"] = round(wall, 1)
            files.append(path.read_bytes())
    if out.get(f"wall_s_{workers[0]}_workers") and out.get(f"wall_s_{workers[-1]}_workers"):
        out["speedup"] = round(out[f"wall_s_{workers[0]}_workers"] / out[f"wall_s_{workers[-1]}_workers"], 2)
    out["same_file_every_run"] = len(set(files)) == 1 if files else None
    return out


_MEMORY = (
    "import gc, json, os, sys\n"
    "from environment.anchors import run_policy\n"
    "from environment.api import arm\n"
    "def rss():\n"
    "    with open('/proc/self/statm') as fh:\n"
    "        return int(fh.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')\n"
    "task, n, play = sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'played'\n"
    "run_policy(arm(task, 7), 'smart-triage')  # world, imports and caches loaded once\n"
    "gc.collect(); base = rss(); episodes = []\n"
    "for i in range(n):\n"
    "    ep = arm(task, (7, 11, 13)[i % 3])\n"
    "    if play:\n"
    "        run_policy(ep, 'smart-triage')\n"
    "    episodes.append(ep)\n"
    "gc.collect()\n"
    "print(json.dumps({'base_rss': base, 'delta': rss() - base, 'episodes': len(episodes)}))\n"
)

GIB = 1024 ** 3


def bench_memory(cases: tuple[tuple[str, int, str], ...] = (("steady", 20, "armed"), ("steady", 20, "played"),
                                                             ("full-year", 6, "played")),
                 machine_gib: int = 24, timeout: float = 900) -> dict[str, Any]:
    """Resident memory per live episode: RSS growth of a fresh process (world loaded)
    over N episodes kept alive, armed only or played to the end by smart-triage (a
    played episode holds its whole action, event and window logs: the most a live one
    holds); and how many such episodes one machine of ``machine_gib`` GiB holds next to
    one copy of the world per process."""
    if not Path("/proc/self/statm").exists():
        return {"unavailable": "needs /proc/self/statm (Linux) to read the resident set size"}
    out = {}
    for task, n, mode in cases:
        r = _run_json([sys.executable, "-c", _MEMORY, task, str(n), mode], timeout)
        if "unavailable" in r:
            out[f"{task}_{mode}"] = r
            continue
        per = r["delta"] / r["episodes"]
        out[f"{task}_{mode}"] = {
            "episodes": r["episodes"], "mib_per_episode": round(per / 2 ** 20, 2),
            "process_base_mib": round(r["base_rss"] / 2 ** 20, 1),
            f"episodes_per_{machine_gib}_gib": int((machine_gib * GIB - r["base_rss"]) // per) if per > 0 else None,
        }
    return out


# --- all of it, and the targets -----------------------------------------------------------


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """Each speed target of the operations spec against the figure measured for it."""
    engine = figures.get("engine", {})
    per_tool = [v for v in engine.get("tool_call_ms_p50_by_tool", {}).values() if v is not None]
    anchors = figures.get("anchors", {})
    cal = figures.get("calibration", {})
    mcp = figures.get("mcp", {})
    console = figures.get("console", {})
    rows = []

    def row(target: str, value: object, met: bool | None, note: str = "") -> None:
        rows.append({"target": target, "measured": value, "met": met, **({"note": note} if note else {})})

    if per_tool:
        slowest = max(per_tool)
        row("one in-process tool call well under 1 ms (p50), reads of 100 rows included",
            {"all_tools_p50_ms": engine.get("tool_call_ms_p50"), "slowest_tool_p50_ms": slowest}, slowest < 1.0)
    if "window_advance_ms_p50" in engine:
        row("a window advance in a few milliseconds", engine["window_advance_ms_p50"],
            engine["window_advance_ms_p50"] <= 5.0)
    steady = anchors.get("steady", {}).get("smart-triage", engine.get("smart_triage_steady_s_p50"))
    if steady is not None:
        row("a smart-triage episode on steady (60 x 20) in about a second", steady, steady <= 1.5)
    full_year = anchors.get("full-year", {}).get("smart-triage", engine.get("smart_triage_full_year_s_p50"))
    if full_year is not None:
        row("a smart-triage episode on full-year (365 x 12) in a few seconds", full_year, full_year <= 5.0)
    if cal.get("wall_s_2_workers"):
        row("the full calibration (12 tasks x 3 seeds x 6 anchors) in minutes on two cores",
            {"1_worker_s": cal.get("wall_s_1_workers"), "2_workers_s": cal["wall_s_2_workers"]},
            cal["wall_s_2_workers"] <= 600)
    else:
        row("the full calibration in minutes on two cores", None, None,
            cal.get("unavailable", "not measured (--quick or --no-calibration)"))
    if "http_ratio" in mcp:
        row("a tool call over MCP within a small factor (<= 3) of a no-op MCP tool, same transport",
            {"http_ratio": mcp["http_ratio"], "stdio_ratio": mcp["stdio_ratio"]},
            max(mcp["http_ratio"], mcp["stdio_ratio"]) <= 3.0)
    else:
        row("a tool call over MCP within a small factor of a no-op MCP tool", None, None,
            mcp.get("unavailable", "not measured"))
    if "ratio" in console:
        row(f"a console page within a small factor (<= 3) of a minimal Django view under "
            f"{console.get('participants')} concurrent participants",
            {"ratio": console["ratio"], "tool_page_median_ms": console.get("tool_page_median_ms"),
             "noop_median_ms": console.get("noop_median_ms")}, console["ratio"] <= 3.0)
    else:
        row("a console page within a small factor of a minimal Django view", None, None,
            console.get("unavailable", "not measured"))
    return rows


ADAPTERS_ELSEWHERE = "measured by `python -m benchmarks` (the MCP and console figures need the adapters)"


def bench_all(repeats: int = 5, *, quick: bool = False, calibration: bool = True,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The core's figures in one run; ``quick`` trims repetitions and skips the calibration.

    The MCP and console round trips are measured by ``python -m benchmarks`` (which runs
    this too and adds them, with its own ``--participants`` and ``--mcp-calls``)."""
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    figures: dict[str, Any] = {"mode": "quick" if quick else "full", "cpu_count": os.cpu_count()}
    say("engine: tool calls, window advances, episodes")
    figures["engine"] = bench_engine(repeats=2 if quick else repeats)
    say("anchors: one episode each on steady and full-year")
    figures["anchors"] = bench_anchors(repeats=1 if quick else 3, full_year_repeats=1)
    say("memory per live episode")
    figures["memory"] = bench_memory((("steady", 6, "armed"), ("steady", 6, "played"), ("full-year", 2, "played"))
                                     if quick else (("steady", 20, "armed"), ("steady", 20, "played"),
                                                    ("full-year", 6, "played")))
    figures["mcp"] = {"unavailable": ADAPTERS_ELSEWHERE}
    figures["console"] = {"unavailable": ADAPTERS_ELSEWHERE}
    if calibration and not quick:
        say("calibration: the 36 evaluation cells with 1, then 2 workers")
        figures["calibration"] = bench_calibration()
    else:
        figures["calibration"] = {"unavailable": "skipped (--quick or --no-calibration)"}
    figures["targets"] = targets(figures)
    figures["bench_wall_s"] = round(time.perf_counter() - started, 1)
    return figures

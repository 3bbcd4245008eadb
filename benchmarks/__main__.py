"""``python -m benchmarks``: the whole bench (see :mod:`benchmarks.suite`)."""
from __future__ import annotations

import argparse
import json
import sys

from environment.cli import positive_int

from .suite import bench_everything


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=(
        "Measure the core (engine, anchors, calibration, memory), the MCP round trip and a console "
        "tool page, each against its target; figures are medians, printed, never asserted."))
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--repeats", type=positive_int, default=5, help="repetitions per figure (default 5)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and no calibration")
    parser.add_argument("--calibration", action=argparse.BooleanOptionalAction, default=True,
                        help="time the full calibration with 1 and 2 workers (default on; minutes)")
    parser.add_argument("--participants", type=positive_int, default=20, help="concurrent console participants (default 20)")
    parser.add_argument("--mcp-calls", type=positive_int, default=300, help="MCP calls per server (default 300)")
    args = parser.parse_args(argv)
    figures = bench_everything(args.repeats, quick=args.quick, calibration=args.calibration,
                               participants=args.participants, mcp_calls=args.mcp_calls,
                               progress=lambda msg: print(f"bench: {msg}", file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(figures, indent=2, default=str))
    else:
        for row in figures.pop("targets"):
            mark = {True: "MET", False: "NOT MET", None: "n/a"}[row["met"]]
            print(f"target [{mark}] {row['target']}: {row['measured']}" + (f" ({row['note']})" if "note" in row else ""))
        for key, value in figures.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``storebench``: the command line of the environment core.

Subcommands grow with the project; each one is a thin shell over a core function
and prints JSON with ``--json`` for scripts, readable text otherwise.  A refusal
by the core (a :class:`~environment.errors.StoreBenchError`) prints its message
and exits 2; a failed check exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from .errors import StoreBenchError


def _print_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


# --- world ------------------------------------------------------------------------


def _cmd_world_stats(args: argparse.Namespace) -> int:
    from .world import load_world
    from .world.stats import world_stats

    stats = world_stats(load_world(args.world))
    if args.json:
        _print_json(stats)
    else:
        width = max(len(k) for k in stats)
        for key, value in stats.items():
            print(f"{key:<{width}}  {value}")
    return 0


def _cmd_world_audit(args: argparse.Namespace) -> int:
    from .world import load_world
    from .world.audits import run_audits

    results = run_audits(load_world(args.world))
    passed = sum(r.passed for r in results)
    if args.json:
        _print_json({"passed": passed, "total": len(results), "audits": [r.as_dict() for r in results]})
    else:
        for r in results:
            print(f"{'PASS' if r.passed else 'FAIL'}  {r.name}: {r.detail}")
        print(f"{passed} of {len(results)} audits passed")
    return 0 if passed == len(results) else 1


def _cmd_world_hash(args: argparse.Namespace) -> int:
    from .world.codec import content_hash
    from .world.generate import generate
    from .world.loader import RECORDED_HASH_FILE, recorded_hash

    started = time.perf_counter()
    world = generate()
    seconds = time.perf_counter() - started
    actual = content_hash(world)
    if args.record:
        RECORDED_HASH_FILE.write_text(actual + "\n")
        print(f"recorded {actual} in {RECORDED_HASH_FILE}")
        return 0
    try:
        recorded = recorded_hash()
    except StoreBenchError:
        recorded = None
    result = {"generated": actual, "recorded": recorded, "matches": actual == recorded,
              "generate_seconds": round(seconds, 3)}
    if args.json:
        _print_json(result)
    else:
        print(f"generated {actual} in {seconds:.2f} s; recorded {recorded}; "
              f"{'match' if actual == recorded else 'MISMATCH'}")
    return 0 if actual == recorded else 1


def _cmd_world_export(args: argparse.Namespace) -> int:
    from .world import load_world
    from .world.loader import export_world

    export_world(load_world(), args.path)
    print(f"wrote the world to {args.path}")
    return 0


# --- parser ------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="storebench",
        description="StoreBench: run, grade and inspect the Ostrelle live-commerce environment.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    world = sub.add_parser("world", help="inspect the fixed Ostrelle world",
                           description="The world every task shares: catalog, supplier market, "
                                       "customers and 18 months of history.")
    wsub = world.add_subparsers(dest="world_command", metavar="WORLD_COMMAND", required=True)

    stats = wsub.add_parser("stats", help="headline counts and rates, and the world hash")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.add_argument("--world", metavar="FILE", help="a world export to read instead of generating")
    stats.set_defaults(func=_cmd_world_stats)

    aud = wsub.add_parser("audit", help="run the seed-quality audits (exit 1 if any fails)")
    aud.add_argument("--json", action="store_true", help="print JSON")
    aud.add_argument("--world", metavar="FILE", help="a world export to read instead of generating")
    aud.set_defaults(func=_cmd_world_audit)

    hsh = wsub.add_parser("hash", help="generate the world and compare its hash with the recorded one")
    hsh.add_argument("--json", action="store_true", help="print JSON")
    hsh.add_argument("--record", action="store_true",
                     help="write the generated hash as the recorded one (after reviewing a generator change)")
    hsh.set_defaults(func=_cmd_world_hash)

    exp = wsub.add_parser("export", help="write the world as canonical JSON (.json or .json.gz)")
    exp.add_argument("path", help="output file")
    exp.set_defaults(func=_cmd_world_export)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except StoreBenchError as exc:
        print(f"storebench: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

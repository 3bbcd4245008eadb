"""``python -m mcp_client TASK SEED``: serve one armed episode on stdio (for MCP hosts and
the Inspector).  The ``storebench mcp`` subcommand calls the same :func:`serve_stdio`."""

from __future__ import annotations

import argparse

from .server import serve_stdio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_client", description=__doc__)
    parser.add_argument("task", help="task id, e.g. short-runway")
    parser.add_argument("seed", type=int, help="episode seed")
    args = parser.parse_args(argv)
    serve_stdio(args.task, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

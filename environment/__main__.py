"""``python -m environment ...``: the core's commands of ``storebench`` (no ``mcp`` or ``agent``)."""
import sys

from .cli import build_parser, main

sys.exit(main(parser=build_parser(prog="python -m environment")))

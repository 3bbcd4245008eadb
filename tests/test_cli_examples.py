"""Every command's --help ends with examples, and every example is a command line the parser accepts."""
import argparse
import shlex

import pytest

from environment.cli import EXAMPLES_HEADING
from mcp_client.cli import build_parser


def _commands(parser: argparse.ArgumentParser, path=()):
    """(command words, parser) for every leaf command."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _commands(child, (*path, name))


COMMANDS = list(_commands(build_parser()))


def _example_lines(parser: argparse.ArgumentParser) -> list[str]:
    """The examples as command lines: continued lines joined, comments and redirections dropped."""
    lines, current = [], ""
    for raw in parser.epilog.splitlines()[1:]:
        current += raw.strip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        lines.append(current.split("#")[0].split(">")[0].strip())
        current = ""
    return lines


def test_the_suite_has_the_commands_a_researcher_uses():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"run", "batch", "replay", "regrade", "calibrate", "mcp", "agent", "tasks ablate"} <= names


@pytest.mark.parametrize("path, parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_ends_its_help_with_examples_the_parser_accepts(path, parser):
    assert parser.epilog and parser.epilog.startswith(EXAMPLES_HEADING)
    assert f"\n{EXAMPLES_HEADING}\n  storebench {' '.join(path)}" in parser.format_help()  # kept as written
    for line in _example_lines(parser):  # the first shows this command; a later one may show what follows it
        words = shlex.split(line)
        assert words[0] == "storebench", line
        build_parser().parse_args(words[1:])  # exits (a SystemExit) on any argument it refuses

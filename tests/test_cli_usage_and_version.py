"""An unknown argument is refused by the subcommand it was given to, with that subcommand's usage
(argparse left it to the top parser, whose usage only says ``COMMAND ...``), and ``--version``
says which folder the code runs from (two clones may share one virtual environment)."""
from __future__ import annotations

from pathlib import Path

import pytest

import environment
from environment.suite import suite_id
from mcp_client.cli import main


def refusal(capsys, *argv: str) -> str:
    """What ``storebench argv`` prints on stderr as it refuses its arguments (exit 2)."""
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    assert stop.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(("argv", "usage", "prog"), [
    (("run", "--task", "steady", "--seed", "7", "--policy", "rule-based", "--out", "t", "--bogus"),
     "usage: storebench run [-h] --task TASK", "storebench run"),  # a subcommand's own usage
    (("world", "stats", "--bogus"), "usage: storebench world stats [-h]", "storebench world stats"),  # nested
    (("mcp", "--bogus"), "usage: storebench mcp [-h]", "storebench mcp"),  # a command added above the core
    (("--bogus", "tasks", "list"), "usage: storebench [-h] [--version] COMMAND ...", "storebench"),  # before it
])
def test_an_unknown_flag_shows_the_usage_of_the_command_it_was_given_to(capsys, argv, usage, prog):
    err = refusal(capsys, *argv)
    assert err.startswith(usage)
    assert err.splitlines()[-1] == f"{prog}: error: unrecognized arguments: --bogus"


def test_version_names_the_folder_the_code_was_imported_from(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    source = Path(environment.__file__).resolve().parent
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"storebench {environment.__version__} (suite {suite_id()}) from {source}\n"

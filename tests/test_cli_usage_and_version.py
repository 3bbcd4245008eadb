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


def test_an_unknown_flag_on_a_subcommand_shows_that_subcommands_usage(capsys, tmp_path):
    err = refusal(capsys, "run", "--task", "steady", "--seed", "7", "--policy", "rule-based", "--out",
                  str(tmp_path / "t"), "--bogus")
    assert err.startswith("usage: storebench run [-h] --task TASK")
    assert err.splitlines()[-1] == "storebench run: error: unrecognized arguments: --bogus"


def test_an_unknown_argument_on_a_nested_subcommand_shows_the_nested_usage(capsys):
    err = refusal(capsys, "world", "stats", "--bogus")
    assert err.startswith("usage: storebench world stats [-h]")
    assert err.splitlines()[-1] == "storebench world stats: error: unrecognized arguments: --bogus"


def test_an_unknown_flag_on_a_command_added_above_the_core_shows_its_usage(capsys):
    err = refusal(capsys, "mcp", "--bogus")
    assert err.startswith("usage: storebench mcp [-h]")
    assert err.splitlines()[-1] == "storebench mcp: error: unrecognized arguments: --bogus"


def test_an_unknown_flag_before_the_command_shows_the_top_usage(capsys):
    err = refusal(capsys, "--bogus", "tasks", "list")
    assert err.startswith("usage: storebench [-h] [--version] COMMAND ...")
    assert err.splitlines()[-1] == "storebench: error: unrecognized arguments: --bogus"


def test_version_names_the_folder_the_code_was_imported_from(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    source = Path(environment.__file__).resolve().parent
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"storebench {environment.__version__} (suite {suite_id()}) from {source}\n"

"""The ``storebench`` command is layered: the core's commands in ``environment.cli`` (no MCP),
``mcp`` and ``agent`` added one layer up in ``mcp_client.cli``, the console entry point."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORE = {"world", "tasks", "run", "batch", "replay", "analyze", "calibrate", "regrade", "search", "bench"}


def commands(parser) -> set[str]:
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(sub.choices)


def test_the_core_parser_has_no_mcp_commands_and_the_installed_one_adds_them():
    from environment.cli import build_parser as core
    from mcp_client.cli import build_parser as full

    assert commands(core()) == CORE
    assert commands(full()) == CORE | {"mcp", "agent"}


def test_the_console_entry_point_is_the_layered_command():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"storebench": "mcp_client.cli:main"}


def test_python_m_environment_runs_without_the_mcp_sdk_loaded():
    code = ("import sys; from environment.cli import main; rc = main(['tasks', 'list', '--json']); "
            "assert not any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules), 'mcp imported'")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_every_subcommand_has_a_description_in_its_help():
    from mcp_client.cli import build_parser

    def undescribed(parser, path: str) -> list[str]:
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        found = [] if parser.description or not path else [path]
        for sub in subs:
            for name, child in sub.choices.items():
                found += undescribed(child, f"{path} {name}".strip())
        return found

    assert undescribed(build_parser(), "") == []

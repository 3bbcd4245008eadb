"""``storebench mcp`` after QA: an option of one transport given on the other is refused with one
line, not silently ignored."""
from __future__ import annotations

import pytest

from mcp_client.cli import main


def refusal(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_stdio_refuses_an_episode_option(capsys):
    err = refusal(capsys, "mcp", "--task", "steady", "--seed", "7", "--episode", "steady:11")
    assert err == ("storebench: --episode only applies to serving over HTTP: add --http, or leave it out to serve "
                   "--task/--seed on stdio\n")


@pytest.mark.parametrize("option", [["--state", "s"], ["--port", "8765"], ["--host", "127.0.0.1"],
                                    ["--allowed-host", "a.example"], ["--max-sessions-per-token", "8"],
                                    ["--header-timeout", "10"], ["--max-connections", "9"], ["--no-fsync"],
                                    ["--operator-token", "x" * 16]])
def test_stdio_refuses_every_http_only_option_even_at_its_default(capsys, option):
    err = refusal(capsys, "mcp", "--task", "steady", "--seed", "7", *option)
    assert err.startswith(f"storebench: {option[0]} only applies to serving over HTTP: add --http")


def test_stdio_names_every_http_only_option_given(capsys, tmp_path):
    err = refusal(capsys, "mcp", "--task", "steady", "--seed", "7", "--state", str(tmp_path), "--port", "9")
    assert err == ("storebench: --port, --state only apply to serving over HTTP: add --http, or leave them out to "
                   "serve --task/--seed on stdio\n")
    assert list(tmp_path.iterdir()) == []


def test_http_refuses_a_stdio_only_label(capsys):
    err = refusal(capsys, "mcp", "--http", "--episode", "steady:7", "--model", "m")
    assert err == ("storebench: --model only applies to a stdio episode: leave it out with --http (an HTTP session's "
                   "labels go through the operator API: /operator/sessions and its labels route)\n")



def test_port_zero_without_http_is_refused_like_any_other_port(capsys):
    err = refusal(capsys, "mcp", "--task", "steady", "--seed", "7", "--port", "0")
    assert err.startswith("storebench: --port only applies to serving over HTTP: add --http")


def test_no_fsync_without_state_is_refused(capsys):
    err = refusal(capsys, "mcp", "--http", "--episode", "steady:7", "--no-fsync")
    assert err == ("storebench: --no-fsync only applies with --state (it skips flushing each call written to the "
                   "state folder): add --state DIR or leave it out\n")


def test_a_header_timeout_of_zero_or_less_is_refused_with_a_value_near_the_default(capsys):
    with pytest.raises(SystemExit):
        main(["mcp", "--http", "--episode", "steady:7", "--header-timeout", "-5"])
    err = capsys.readouterr().err
    assert err.endswith("argument --header-timeout: -5 is not a time: give a number of seconds above zero, e.g. 10\n")


def test_no_trial_with_a_trials_folder_is_refused(capsys, tmp_path):
    err = refusal(capsys, "mcp", "--task", "steady", "--seed", "7", "--no-trial", "--trials", str(tmp_path / "t"))
    assert err == ("storebench: --no-trial writes no trial folder, so --trials has nowhere to send one: give one of "
                   "them\n")
    assert not (tmp_path / "t").exists()

"""Bad input to ``storebench`` is refused up front, with a message that names it, and costs no work."""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from environment.errors import SEED_MAX, InvalidSeed, check_seed
from mcp_client.cli import main


def refusal(capsys, *argv: str | Path) -> str:
    """Run ``storebench argv``; it must exit 2 (argparse's or the command's refusal): its stderr."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("seed", [-1, SEED_MAX + 1, 7.0, "7", True])
def test_check_seed_refuses_what_is_not_a_task_seed(seed):
    with pytest.raises(InvalidSeed, match="is not a task seed: give a whole number from 0 to 2,147,483,647"):
        check_seed(seed)


def test_check_seed_takes_the_range_ends():
    assert (check_seed(0), check_seed(SEED_MAX)) == (0, SEED_MAX)


def test_a_negative_seed_is_refused_before_any_trial(capsys, tmp_path):
    err = refusal(capsys, "run", "--task", "steady", "--seed", "-1", "--policy", "absentee", "--out", tmp_path / "t")
    assert "argument --seed: -1 is not a task seed" in err
    assert not (tmp_path / "t").exists()


def test_batch_names_the_line_of_a_malformed_action_log_and_writes_nothing(capsys, tmp_path):
    log = tmp_path / "actions.jsonl"
    log.write_text('{"tool": "end_window", "arguments": {}}\nnot json\n')
    err = refusal(capsys, "batch", "--tasks", "steady", "--seeds", "7", "--actions", log, "--out", tmp_path / "b")
    assert f"{log} line 2 is not JSON" in err
    assert not (tmp_path / "b").exists()


def test_batch_refuses_zero_workers(capsys, tmp_path):
    err = refusal(capsys, "batch", "--policy", "absentee", "--workers", "0", "--out", tmp_path / "b")
    assert "argument --workers: 0 is too small: give 1 or more" in err


def test_calibrate_refuses_an_output_inside_a_file_before_any_cell(capsys, tmp_path):
    (tmp_path / "a-file").write_text("")
    err = refusal(capsys, "calibrate", "--tasks", "counter-punch", "--seeds", "7", "--out",
                  tmp_path / "a-file" / "cal.json")
    assert f"--out: {tmp_path / 'a-file'} is a file, not a folder" in err
    assert "[1/1]" not in err  # no cell was calibrated


def test_ablate_refuses_out_for_one_lens(capsys, tmp_path):
    err = refusal(capsys, "tasks", "ablate", "counter-punch", "--out", tmp_path / "ablation.md")
    assert "--out writes the report's ablation table and goes with `all`" in err


def test_ablate_refuses_workers_for_one_lens(capsys):
    err = refusal(capsys, "tasks", "ablate", "steady", "--workers", "3")
    assert err == ("storebench: --workers runs lenses in parallel and goes with `all`; one lens is ablated in one "
                   "process: leave --workers out\n")


def test_analyze_of_a_folder_that_is_no_trial_names_the_missing_file(capsys, tmp_path):
    err = refusal(capsys, "analyze", tmp_path)
    assert f"{tmp_path / 'manifest.json'} is missing: is {tmp_path} a trial folder written by storebench?" in err


def test_world_stats_of_a_missing_export_says_how_to_write_one(capsys, tmp_path):
    err = refusal(capsys, "world", "stats", "--world", tmp_path / "world.json")
    assert f"cannot read the world export {tmp_path / 'world.json'}: No such file or directory" in err
    assert "storebench world export FILE" in err


def test_mcp_refuses_a_port_out_of_range(capsys):
    err = refusal(capsys, "mcp", "--http", "--port", "70000", "--episode", "steady:7")
    assert "argument --port: 70000 is not a port: give 0 to 65535" in err


def test_mcp_refuses_a_port_in_use_before_serving(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = refusal(capsys, "mcp", "--http", "--port", str(port), "--episode", "steady:7")
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in err


def test_mcp_on_stdio_refuses_a_trials_path_that_is_a_file_before_serving(capsys, tmp_path):
    (tmp_path / "a-file").write_text("")
    err = refusal(capsys, "mcp", "--task", "steady", "--seed", "7", "--trials", tmp_path / "a-file")
    assert f"--trials: {tmp_path / 'a-file'} is a file, not a folder" in err


def test_agent_refuses_a_base_url_that_is_no_url_before_the_episode(capsys, tmp_path):
    err = refusal(capsys, "agent", "--model", "m", "--base-url", "notaurl", "--trials", tmp_path / "trials")
    assert "--base-url 'notaurl' is not an http(s) URL" in err
    assert not (tmp_path / "trials").exists()


def test_agent_refuses_a_base_url_carrying_credentials_without_echoing_them(capsys, tmp_path):
    err = refusal(capsys, "agent", "--model", "m", "--base-url", "http://me:s3cret@127.0.0.1:9/v1",
                  "--trials", tmp_path / "trials")
    assert err == ("storebench: --base-url carries credentials (user:password@host); they would be sent to the "
                   "endpoint and printed in its error messages: give the key with --api-key KEY or $OPENAI_API_KEY "
                   "instead\n")
    assert not (tmp_path / "trials").exists()


def test_agent_refuses_an_unreadable_base_url_with_credentials_without_echoing_them(capsys, tmp_path):
    err = refusal(capsys, "agent", "--model", "m", "--base-url", "http://me:s3cret@[::1/v1",
                  "--trials", tmp_path / "trials")
    assert err == ("storebench: --base-url is not a URL (Invalid IPv6 URL); give the endpoint's base, e.g. "
                   "http://127.0.0.1:8000/v1\n")


def test_agent_refuses_a_schemeless_base_url_with_credentials_without_echoing_them(capsys, tmp_path):
    err = refusal(capsys, "agent", "--model", "m", "--base-url", "me:s3cret@host.example/v1",
                  "--trials", tmp_path / "trials")
    assert err == ("storebench: --base-url is not an http(s) URL with a host; give the endpoint's base, e.g. "
                   "http://127.0.0.1:8000/v1\n")


def test_replay_names_the_unreadable_file(capsys, tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"task": "steady", "seed": 7}))
    (tmp_path / "summary.json").write_text("{")
    assert main(["replay", str(tmp_path)]) == 1
    assert f"cannot read the trial: {tmp_path / 'summary.json'} cannot be read as JSON" in capsys.readouterr().out


def test_bench_refuses_zero_repeats_before_measuring(capsys):
    err = refusal(capsys, "bench", "--repeats", "0")
    assert "argument --repeats: 0 is too small: give 1 or more" in err
    assert "bench: engine" not in err  # nothing was measured


def test_the_whole_bench_refuses_a_negative_count(capsys):
    from benchmarks.__main__ import main as bench_main

    with pytest.raises(SystemExit) as stop:
        bench_main(["--mcp-calls", "-1"])
    assert stop.value.code == 2
    assert "argument --mcp-calls: -1 is too small: give 1 or more" in capsys.readouterr().err


def test_mcp_over_http_refuses_task_and_seed_beside_episodes(capsys):
    err = refusal(capsys, "mcp", "--http", "--task", "steady", "--seed", "7", "--episode", "liquidity:11")
    assert ("storebench: --task and --seed with --episode: over HTTP every episode is an --episode TASK:SEED "
            "(give it once per episode); leave --task and --seed out") in err


def test_mcp_over_http_refuses_a_task_without_its_seed(capsys):
    err = refusal(capsys, "mcp", "--http", "--task", "steady")
    assert "storebench: --task alone: over HTTP give --episode TASK:SEED" in err


def test_world_export_refuses_a_name_that_says_no_json(capsys, tmp_path):
    err = refusal(capsys, "world", "export", tmp_path / "new" / "w.txt")
    assert f"the export path {tmp_path / 'new' / 'w.txt'} names neither a .json nor a .json.gz file" in err
    assert not (tmp_path / "new").exists()  # refused before its folder was made


def test_python_m_environment_names_itself_and_says_it_has_the_cores_commands_only():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "environment", "--help"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], check=True)
    assert done.stdout.startswith("usage: python -m environment ")
    assert "the installed `storebench` command has these and also mcp and agent" in " ".join(done.stdout.split())
    listed = [line.split()[0] for line in done.stdout.split("COMMAND\n", 1)[1].split("\n\n")[0].splitlines()
              if line.startswith("    ") and not line.startswith("      ")]
    assert "world" in listed and "regrade" in listed and "mcp" not in listed and "agent" not in listed

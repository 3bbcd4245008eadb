"""QA findings on the RL adapters: OpenEnv's server defaults, options and errors; the two
adapters' shared defaults (reward, calibrating a missing cell) and action shapes."""
from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import environment.rl  # noqa: F401 (registers StoreBench-v0)
from environment.errors import InvalidSeed
from environment.rl.gym_env import StoreBenchEnv
from environment.rl.session import DEFAULT_REWARD, REWARD_MODES, RLConfigError, Session
from environment.tasks import get_task
from environment.tasks.loader import TaskFileError

REPO = Path(__file__).resolve().parent.parent
PROG = "python -m mcp_client.openenv_env"


@pytest.fixture(scope="module")
def openenv():
    from mcp_client import openenv_env

    return openenv_env.classes()


@pytest.fixture(scope="module")
def client():
    from starlette.testclient import TestClient

    from mcp_client.openenv_env import create_app

    with TestClient(create_app(max_concurrent_envs=2)) as c:
        yield c


def serve(monkeypatch, *argv: str):
    """Run the server's ``main`` with ``argv``, keeping the app instead of listening; (exit code, app)."""
    import uvicorn

    from mcp_client.openenv_env import main

    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.update(app=app, **kw))
    return main(list(argv)), served


# --- 1, 9: the server's options ----------------------------------------------------------------------------


def test_the_server_reward_defaults_to_the_in_process_default(monkeypatch):
    from starlette.testclient import TestClient

    code, served = serve(monkeypatch)
    assert code == 0
    with TestClient(served["app"]) as c, c.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"task": "counter-punch", "task_seed": 7}})
        ws.receive_json()
        ws.send_json({"type": "state"})
        assert ws.receive_json()["data"]["reward_mode"] == DEFAULT_REWARD == "dense-relative"


def test_the_server_offers_every_reward_mode():
    from mcp_client.openenv_env import build_parser

    reward = next(a for a in build_parser()._actions if a.dest == "reward")
    assert tuple(reward.choices) == REWARD_MODES == ("dense-relative", "dense", "shaped", "composite")


def test_every_server_option_has_help_text():
    from mcp_client.openenv_env import build_parser

    options = [a for a in build_parser()._actions if a.dest != "help"]
    assert {a.dest for a in options} == {"host", "port", "task", "task_seed", "reward", "max_steps",
                                         "max_concurrent_envs"}
    assert [a.dest for a in options if not (a.help and len(a.help) > 20)] == []


def test_the_help_says_a_plain_http_step_has_no_episode_as_the_server_answers(client):
    from mcp_client.openenv_env import build_parser

    answer = client.post("/step", json={"action": {"type": "call_tool", "tool_name": "store_status",
                                                   "arguments": {}}}).json()
    assert answer["done"] is True and answer["observation"]["error"]["message"].startswith("no episode: reset first")
    help_text = " ".join(build_parser().format_help().split())
    assert ("POST /step has no episode to act on (list_tools answers the tools; a call_tool answers done: true "
            "with the error \"no episode: reset first\")") in help_text


def test_the_server_listens_by_default_on_a_port_neither_the_console_nor_mcp_takes(monkeypatch):
    import re

    taken = dict(re.findall(r"^(PORT|MCP_PORT) \?= (\d+)$", (REPO / "Makefile").read_text(), re.M))
    assert taken == {"PORT": "8000", "MCP_PORT": "8765"}
    code, served = serve(monkeypatch)
    assert code == 0 and served["port"] == 8766


def test_the_server_task_seed_option_is_the_seed_every_reset_plays(monkeypatch):
    from starlette.testclient import TestClient

    code, served = serve(monkeypatch, "--task", "counter-punch", "--task-seed", "13", "--reward", "dense")
    assert code == 0
    with TestClient(served["app"]) as c, c.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 5}})
        ws.receive_json()
        ws.send_json({"type": "state"})
        state = ws.receive_json()["data"]
    assert (state["task"], state["task_seed"], state["reward_mode"]) == ("counter-punch", 13, "dense")


def test_a_task_seed_option_that_is_no_task_seed_is_refused_by_the_parser():
    out = subprocess.run([sys.executable, "-m", "mcp_client.openenv_env", "--task-seed", "-1"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1].startswith(f"{PROG}: error: argument --task-seed: -1 is not a task seed")


# --- 2: bad input to the server --------------------------------------------------------------------------------


def test_an_unknown_task_option_exits_2_with_one_line():
    out = subprocess.run([sys.executable, "-m", "mcp_client.openenv_env", "--task", "nope"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [f"{PROG}: --task: unknown task 'nope'; known tasks: "
                                       + out.stderr.split("known tasks: ", 1)[1].strip()]
    assert "short-runway" in out.stderr


def test_create_app_checks_its_environment_options_at_once():
    from mcp_client.openenv_env import create_app

    with pytest.raises(TaskFileError, match="unknown task 'nope'"):
        create_app(task="nope")


def test_a_reset_with_a_task_seed_that_is_no_task_seed_is_answered_422(client):
    response = client.post("/reset", json={"task_seed": -1})
    assert response.status_code == 422
    assert response.json() == {"detail": "-1 is not a task seed: give a whole number from 0 to 2,147,483,647, "
                                         "e.g. 7, 11 or 13 (the public seeds)", "code": "invalid_seed"}


def test_a_reset_with_an_unknown_task_is_answered_422(client):
    response = client.post("/reset", json={"task": "nope"})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("unknown task 'nope'; known tasks: ")
    assert response.json()["code"] == "task_file_invalid"


def test_a_reset_with_an_unknown_keyword_is_answered_422(client):
    response = client.post("/reset", json={"tsk": "short-runway"})
    assert response.status_code == 422
    assert response.json() == {"detail": "unknown reset keywords ['tsk']; they are task, task_seed, reward "
                                         "(besides OpenEnv's seed and episode_id)", "code": "invalid_config"}


def test_a_reset_with_an_unknown_reward_mode_is_answered_422_with_its_code(client):
    response = client.post("/reset", json={"reward": "money"})
    assert response.status_code == 422
    assert response.json() == {"detail": "reward must be one of dense-relative, dense, shaped, composite, not "
                                         "'money'", "code": "invalid_config"}


def test_a_refused_reset_in_a_websocket_session_answers_the_message(client):
    with client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"task": "short-runway", "reward": "money"}})
        answer = ws.receive_json()
    assert answer["type"] == "error"
    assert answer["data"]["message"] == "reward must be one of dense-relative, dense, shaped, composite, not 'money'"


def test_an_in_process_reset_still_raises_the_core_error(openenv):
    env = openenv["StoreBenchEnvironment"](task="short-runway")
    with pytest.raises(InvalidSeed):
        env.reset(task_seed=-1)


def test_an_environments_episodes_have_ids_apart_when_none_is_given(openenv):
    env = openenv["StoreBenchEnvironment"](task="short-runway", task_seed=7)
    ids = []
    for _ in range(2):
        env.reset()
        ids.append(env.state.episode_id)
    env.reset(episode_id="mine")
    assert ids == ["short-runway-7-1", "short-runway-7-2"] and env.state.episode_id == "mine"


# --- 3: a cell outside the calibration file ----------------------------------------------------------------


def test_gymnasium_plays_a_seed_outside_the_calibration_file_by_default():
    env = gym.make("StoreBench-v0", task="counter-punch", task_seed=12)
    _obs, info = env.reset()
    assert info["reward_mode"] == "dense-relative" and info["task_seed"] == 12
    assert env.unwrapped.session.calibration_source == "calibrated for this cell on the spot"


def test_both_adapters_and_the_session_calibrate_a_missing_cell_by_default(openenv):
    defaults = {cls.__name__: inspect.signature(cls).parameters["calibrate_missing"].default
                for cls in (Session, StoreBenchEnv, openenv["StoreBenchEnvironment"])}
    assert defaults == {"Session": True, "StoreBenchEnv": True, "StoreBenchEnvironment": True}


def test_refusing_a_missing_cell_says_exactly_what_to_pass():
    env = gym.make("StoreBench-v0", task="counter-punch", task_seed=12, calibrate_missing=False)
    with pytest.raises(RLConfigError) as caught:
        env.reset()
    assert caught.value.message == (
        "reward='dense-relative' needs calibration constants, and the cell counter-punch seed 12 is not in the "
        "calibration; construct the environment with calibrate_missing=True (the default: calibrates the cell on "
        "the spot, about a second, once per process), or with calibration=PATH naming a calibration file that has "
        "the cell, or reset with reward='dense' (needs no constants)")


def test_a_configuration_error_is_still_a_value_error():
    with pytest.raises(ValueError, match="reward must be one of dense-relative, dense, shaped, composite, not 'x'"):
        gym.make("StoreBench-v0", reward="x")


# --- 4: OpenEnv takes Gymnasium's action shapes -----------------------------------------------------------


def test_openenv_takes_a_plain_dict_action_without_charging_store_status(openenv):
    env = openenv["StoreBenchEnvironment"](task="short-runway", task_seed=7)
    env.reset()
    obs = env.step({"tool": "store_status"})
    assert obs.error is None and obs.tool_name == "store_status" and not obs.result["is_error"]
    assert env.session.ep.ops_left == get_task("short-runway").ops_per_window  # store_status is free


def test_openenv_dict_json_text_and_pair_actions_act_as_the_call_tool_action(openenv):
    from openenv.core.env_server.mcp_types import CallToolAction

    texts = []
    for action in (CallToolAction(tool_name="list_orders", arguments={"page_size": 2}),
                   {"tool": "list_orders", "arguments": {"page_size": 2}},
                   '{"tool": "list_orders", "arguments": {"page_size": 2}}',
                   ("list_orders", {"page_size": 2})):
        env = openenv["StoreBenchEnvironment"](task="short-runway", task_seed=7, reward="dense")
        env.reset()
        obs = env.step(action)
        texts.append((obs.tool_name, obs.result["data"], obs.error))
    assert all(t == texts[0] for t in texts[1:]) and texts[0][2] is None


def test_openenv_answers_a_malformed_dict_as_gymnasium_does(openenv):
    action = {"tool": "list_orders", "args": {}}
    env = openenv["StoreBenchEnvironment"](task="short-runway", task_seed=7, reward="dense")
    env.reset()
    obs = env.step(action)
    gym_env = gym.make("StoreBench-v0", task="short-runway", task_seed=7, reward="dense")
    gym_env.reset()
    gym_obs = gym_env.step(action)[0]
    assert obs.result["data"] == gym_obs
    assert json.loads(gym_obs.split("\n", 1)[1])["error"] == {
        "code": "malformed_action", "message": "unknown keys ['args']: an action has only \"tool\" and \"arguments\""}
    assert obs.error.message == "unknown keys ['args']: an action has only \"tool\" and \"arguments\""


def test_a_cell_calibrated_on_the_spot_that_fails_the_gates_says_so(monkeypatch):
    """counter-punch seed 3 (outside the file): its judgment anchors do not outscore blast-list, so its
    rewards would rank volume play above judgment. A warning at reset and the final info say which gates."""
    from environment.rl import session as session_module
    from environment.rl.session import GateWarning

    monkeypatch.setattr(session_module, "_calibrated_on_the_spot", {})
    env = gym.make("StoreBench-v0", task="counter-punch", task_seed=3)
    with pytest.warns(GateWarning, match=r"^counter-punch seed 3: this cell was calibrated on the spot and fails the "
                                         r"calibration's gates, .* \(ordering: rule-based .*\)$"):
        env.reset()
    terminated = False
    while not terminated:
        _obs, _reward, terminated, _truncated, info = env.step('{"tool": "end_window"}')
    assert info["gates_failed"] and info["gates_failed"][0].startswith("ordering: rule-based ")


def test_a_cell_of_the_calibration_file_fails_no_gate():
    env = gym.make("StoreBench-v0", task="counter-punch", task_seed=7)
    env.reset()
    terminated = False
    while not terminated:
        _obs, _reward, terminated, _truncated, info = env.step('{"tool": "end_window"}')
    assert info["gates_failed"] == []

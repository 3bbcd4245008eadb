"""The RL adapters: StoreBench-v0 (Gymnasium), the OpenEnv environment, the parallel runner."""

import json
import subprocess
import sys
import warnings
from decimal import Decimal
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import environment.rl
from environment.anchors import run_policy
from environment.api import arm
from environment.calibration import cell_of, load_calibration
from environment.engine.settlement import SHAPED_FLOOR, business_normalized, score
from environment.errors import InvalidSeed
from environment.rl.session import CHARGE_TOOL, PUBLIC_CALIBRATION
from environment.rl.vector import make_vector_env, run_many
from environment.tasks import get_task
from environment.tools.registry import REGISTRY

REPO_ROOT = Path(__file__).resolve().parent.parent
END = '{"tool": "end_window"}'
NOT_TOOLS = ("reset", "score", "stop", "snapshot", "__stop__", "close", "step", "state", "settle", "grade")


def act(tool, **arguments):
    return json.dumps({"tool": tool, "arguments": arguments})


def make(task="short-runway", task_seed=7, **kw):
    """The absolute dense channel unless a test asks for another (the default is dense-relative)."""
    kw.setdefault("reward", "dense")
    return gym.make("StoreBench-v0", task=task, task_seed=task_seed, **kw)


def play(env, actions, **reset_kw):
    """Reset, then step through ``actions`` (ending with end_window until the store closes)."""
    first, info = env.reset(**reset_kw)
    steps = []
    for a in actions:
        steps.append(env.step(a))
        if steps[-1][2] or steps[-1][3]:
            return first, steps
    while not (steps and (steps[-1][2] or steps[-1][3])):
        steps.append(env.step(END))
    return first, steps


def ops(task):
    """Operations per window of ``task`` (read from its file, which is tuned apart from these tests)."""
    return get_task(task).ops_per_window


def public_cell(task, seed):
    return cell_of(load_calibration(PUBLIC_CALIBRATION)[0], task, seed)


# --- Gymnasium --------------------------------------------------------------------------------


def test_registered_and_passes_check_env():
    environment.rl.register()  # idempotent
    assert "StoreBench-v0" in gym.registry
    env = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)  # render check included: render_mode="ansi" is supported
    assert [str(w.message) for w in caught] == []  # not even the missing frame rate it used to note
    env.close()


def test_make_reset_gives_prompt_then_store_status():
    env = make()
    obs, info = env.reset()
    assert obs in env.observation_space
    prompt = env.unwrapped.episode.task.prompt.strip()
    assert obs.startswith(prompt + "\n\n")
    header, body = obs[len(prompt) + 2:].split("\n", 1)
    n = ops("short-runway")
    assert header == info["header"] and f" | window 1 of 30 | operations left {n} of {n} |" in header
    assert json.loads(body)["operations_left"] == n
    assert (info["task"], info["task_seed"], info["window"], info["operations_left"]) == ("short-runway", 7, 1, n)
    assert env.unwrapped.episode.calls == 0  # store_status is free
    assert len(env.unwrapped.tools) == 29


def test_end_window_episode_rewards_sum_to_business_raw():
    env = make()
    _, steps = play(env, [])
    rewards = [s[1] for s in steps]
    assert len(steps) == 30 and steps[-1][2] and not steps[-1][3]
    ep = env.unwrapped.episode
    raw = score(ep).business_raw
    assert abs(sum(rewards) - float(raw)) < 1e-6
    assert [Decimal(c) / 100 for c in ep.dense_rewards()] == [Decimal(str(r)) for r in rewards]
    info = steps[-1][4]
    cell = public_cell("short-runway", 7)
    official = score(ep, Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))
    assert info["score"] == official.as_json() and info["end_reason"] == "horizon reached"
    assert info["business_raw"] == float(raw)


def test_rewards_are_zero_except_on_window_closing_steps():
    env = make("counter-punch", 11)
    obs, info = env.reset()
    ep = env.unwrapped.episode
    product = ep.products[0].id
    script = ([act("list_orders", page_size=1)] * ops("counter-punch")  # the last is the window's last operation
              + [act("get_product", product_id=product), act("store_status"), END]
              + [act("list_returns"), "{not json", act("get_product", product_id="PRD-999")] * 4)
    closed = 0
    total = 0.0
    for a in script + [END] * 20:
        obs, reward, terminated, truncated, info = env.step(a)
        total += reward
        if info["windows_closed"] == closed and not terminated:
            assert reward == 0.0
        closed = info["windows_closed"]
        if terminated:
            break
    assert terminated and abs(total - info["business_raw"]) < 1e-6


def test_malformed_action_is_an_error_observation_costing_one_operation():
    env = make()
    env.reset()
    ep = env.unwrapped.episode
    cases = ["not json at all", "[1, 2]", '{"tool": 3}', '{"arguments": {}}',
             '{"tool": "list_orders", "args": {}}', '{"tool": "teleport"}', 42, None,
             '{"tool": "list_orders", "arguments": ' + "[" * 5000 + "]" * 5000 + "}"]
    per_window = ops("short-runway")
    for case in cases:
        left, calls, log, window = ep.ops_left, ep.calls, len(ep.action_log), ep.window
        obs, reward, terminated, truncated, info = env.step(case)
        header, body = obs.split("\n", 1)
        error = json.loads(body)["error"]
        assert error["code"] in ("malformed_action", "unknown_tool") and error["message"]
        assert info["malformed"] and not info["ok"] and info["tool"] is None
        assert (ep.calls, len(ep.action_log)) == (calls + 1, log + 1), case
        # One operation spent: the window's last one closes it, and the next window starts full.
        assert (ep.window, ep.ops_left) == ((window, left - 1) if left > 1 else (window + 1, per_window)), case
        assert f"operations left {ep.ops_left} of" in header
        assert reward == 0.0 or left == 1
        assert ep.action_log[-1]["tool"] == CHARGE_TOOL and "malformed_action" in ep.action_log[-1]["arguments"]
    # A known tool with bad arguments is the core's own refusal, charged by the core.
    if ep.ops_left == 1:
        env.step(END)
    left = ep.ops_left
    obs, *_ , info = env.step(act("list_orders", page="2"))
    assert json.loads(obs.split("\n", 1)[1])["error"]["code"] == "invalid_argument"
    assert ep.ops_left == left - 1 and info["tool"] == "list_orders" and not info["malformed"]


def test_a_malformed_last_operation_closes_the_window_and_replays():
    env = make("counter-punch", 7)
    env.reset()
    ep = env.unwrapped.episode
    for _ in range(ops("counter-punch") - 1):
        env.step(act("finance_summary"))
    obs, reward, *_ , info = env.step("oops")
    assert info["windows_closed"] == 1 and reward != 0.0
    twin = arm("counter-punch", 7)
    for entry in ep.action_log:
        twin.call(entry["tool"], entry["arguments"])
    assert twin.ledger.to_jsonl() == ep.ledger.to_jsonl() and twin.window == ep.window


def test_no_action_name_reaches_reset_score_or_stop():
    assert not set(NOT_TOOLS) & set(REGISTRY)
    env = make()
    first, _ = env.reset()
    ep = env.unwrapped.episode
    for name in NOT_TOOLS:
        for action in (act(name), json.dumps({"tool": name})):
            ops = ep.ops_left
            obs, reward, terminated, truncated, info = env.step(action)
            assert json.loads(obs.split("\n", 1)[1])["error"]["code"] == "unknown_tool"
            assert not (terminated or truncated or ep.over) and "score" not in info
            assert ep.ops_left == ops - 1 or info["windows_closed"] > 0
    assert ep.task.id == "short-runway" and not ep.over


def test_same_options_same_first_observation_and_trajectory():
    product_actions = [act("list_products", page_size=5), act("list_orders", page_size=3), "garbage",
                       act("set_price", product_id="PRD-001", price="44.00"), END, act("finance_summary"), END]
    runs = []
    for env in (make(), make()):  # two instances, two resets each
        for _ in range(2):
            first, steps = play(env, product_actions, options={"task": "cash-crunch", "task_seed": 11})
            runs.append((first, [(o, r, te, tr, i) for o, r, te, tr, i in steps]))
    assert all(run == runs[0] for run in runs[1:])
    assert runs[0][1][-1][4]["task"] == "cash-crunch"
    # Gymnasium's seed picks the task seed when none is given, and only that.
    env = gym.make("StoreBench-v0", task="short-runway")
    drawn = {env.reset(seed=s)[1]["task_seed"] for s in range(12)}
    assert drawn <= {7, 11, 13} and len(drawn) > 1
    assert env.reset(seed=3) == env.reset(seed=3)


@pytest.mark.parametrize("task_seed", ["7", 7.9, True])
def test_a_task_seed_option_is_checked_not_coerced(task_seed):
    env = make()
    with pytest.raises(InvalidSeed, match=f"{task_seed!r} is not a task seed"):
        env.reset(options={"task_seed": task_seed})


@pytest.mark.parametrize("task_seed", [-1, 2**40])
def test_an_out_of_range_task_seed_is_refused_as_one_before_any_calibration_lookup(task_seed):
    env = gym.make("StoreBench-v0", task="short-runway")  # dense-relative: needs the cell's constants
    with pytest.raises(InvalidSeed, match=f"{task_seed} is not a task seed"):
        env.reset(options={"task_seed": task_seed})


@pytest.mark.parametrize("max_steps", [0, -1])
def test_a_step_cap_below_one_is_refused_at_construction(max_steps):
    with pytest.raises(ValueError, match=f"max_steps must be a whole number of at least 1, not {max_steps}"):
        make(max_steps=max_steps)


def test_truncation_at_max_steps_settles_the_store():
    env = make(max_steps=5)
    _, steps = play(env, [act("store_status")] * 10)
    assert len(steps) == 5 and steps[-1][3] and not steps[-1][2]
    info = steps[-1][4]
    assert info["end_reason"] == "stopped at the step cap" and info["score"] is not None
    assert abs(sum(s[1] for s in steps) - info["business_raw"]) < 1e-6


def test_a_refused_reset_leaves_the_episode_being_played_as_it_was():
    env = make("short-runway", 7, calibrate_missing=False)
    env.reset()
    with pytest.raises(ValueError, match="reward='dense-relative' needs calibration constants"):
        env.reset(options={"task_seed": 999, "reward": "dense-relative"})
    _, reward, terminated, truncated, info = env.step(act("store_status"))
    assert info["reward_mode"] == "dense" and (info["task"], info["task_seed"]) == ("short-runway", 7)
    assert reward == 0.0 and not terminated and not truncated


@pytest.mark.parametrize("mode", ["dense", "dense-relative", "composite"])
def test_a_step_after_settle_pays_nothing_and_says_truncated(mode):
    env = make(reward=mode)
    env.reset()
    env.step(act("list_orders"))
    settled = env.unwrapped.settle()
    _, reward, terminated, truncated, info = env.step(act("store_status"))  # a free read still answers
    assert reward == 0.0 and truncated and not terminated
    assert info["end_reason"] == "stopped before the horizon" and info["dense_return"] == settled["dense_return"]
    obs, reward, _terminated, truncated, _info = env.step(act("list_orders"))
    assert reward == 0.0 and truncated
    assert obs.endswith('no further operations are accepted. This episode is over: reset the environment to play '
                        'another."}}')


@pytest.mark.parametrize(("action", "said"), [
    (("store_status",), 'an action is a JSON text, a dict {"tool": NAME, "arguments": {...}} or a (tool, arguments) '
                        "tuple, not a 1-item tuple"),
    (["store_status", {}], 'an action is a JSON text, a dict {"tool": NAME, "arguments": {...}} or a (tool, '
                           "arguments) tuple, not a 2-item list"),
    ('{"tool": 5}', 'the action must name a tool: "tool" is of type int, not a string'),
    ('{"tool": "store_status", "tool": "list_orders"}', "the action names 'tool' twice; give each key once"),
])
def test_a_malformed_action_is_told_what_an_action_is(action, said):
    env = make()
    _obs, first = env.reset()
    obs, _reward, _terminated, _truncated, info = env.step(action)
    assert json.loads(obs.split("\n", 1)[1]) == {"error": {"code": "malformed_action", "message": said}}
    assert info["operations_left"] == first["operations_left"] - 1  # charged, as every malformed action is


def test_a_numpy_step_cap_is_a_whole_number():
    import numpy as np

    env = make(max_steps=np.int64(3))
    _, steps = play(env, [act("store_status")] * 5)
    assert len(steps) == 3 and steps[-1][3]


def test_a_cell_missing_from_the_calibration_has_no_official_score():
    env = make("short-runway", 999, calibrate_missing=False)
    _, steps = play(env, [])
    info = steps[-1][4]
    assert info["score"] is None and info["calibration_source"] is None
    assert abs(sum(s[1] for s in steps) - info["business_raw"]) < 1e-6
    with pytest.raises(ValueError, match="construct the environment with calibrate_missing=True"):
        env.reset(options={"reward": "shaped"})  # a configuration error, raised at reset
    obs, info = env.reset()  # the reward option lasted for that reset only
    assert info["reward_mode"] == "dense"


def test_shaped_reward_is_terminal_and_clipped_to_minus_two_one():
    # Selling every line at $1.00 sinks the business term well below -2 before clipping.
    env = make("counter-punch", 7, reward="shaped")
    env.reset()
    ep = env.unwrapped.episode
    ruin = [act("set_price", product_id=p.id, price="1.00") for p in ep.products if p.active]
    _, steps = play(env, ruin)  # resets the same cell again
    ep = env.unwrapped.episode
    rewards = [s[1] for s in steps]
    assert all(r == 0.0 for r in rewards[:-1]) and -2.0 <= rewards[-1] <= 1.0
    info = steps[-1][4]
    s = score(ep, Decimal(str(info["score"]["business_zero_raw"])), Decimal(str(info["score"]["business_scale"])))
    unclipped = (s.business_raw - s.business_zero_raw) / s.business_scale
    assert unclipped < SHAPED_FLOOR and rewards[-1] == float(SHAPED_FLOOR) == info["shaped_business"]
    assert info["reward_composite"] == float(s.reward_composite)  # the official composite, [0, 1] business
    # An ordinary episode: the shaped reward is the business term, unclipped within [-2, 1].
    env = make("counter-punch", 7, reward="shaped")
    _, steps = play(env, [])
    s = score(env.unwrapped.episode, Decimal(str(steps[-1][4]["score"]["business_zero_raw"])),
              Decimal(str(steps[-1][4]["score"]["business_scale"])))
    expected = business_normalized(s.business_raw, s.business_zero_raw, s.business_scale, floor=SHAPED_FLOOR)
    assert steps[-1][1] == float(expected) and -2 <= steps[-1][1] <= 1


def test_vector_envs_batch_text_observations():
    single = make()
    first, _ = single.reset()
    after = single.step(act("list_orders", page_size=2))[0]
    for mode in ("sync", "async"):
        envs = make_vector_env(2, mode, task="short-runway", task_seed=7)
        obs, _ = envs.reset(seed=0)
        assert obs == (first, first)
        obs, rewards, *_ = envs.step((act("list_orders", page_size=2), act("list_orders", page_size=2)))
        assert obs == (after, after)
        envs.close()


# --- OpenEnv ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openenv():
    from mcp_client import openenv_env as openenv_adapter

    return openenv_adapter.classes()


def test_openenv_lists_exactly_the_29_tools_and_rolls_out_to_the_composite(openenv):
    from openenv.core.env_server.mcp_types import RESERVED_TOOL_NAMES, CallToolAction, ListToolsAction

    env = openenv["StoreBenchEnvironment"](task="counter-punch", task_seed=13, reward="composite")
    listed = env.step(ListToolsAction()).tools  # discovery needs no reset
    assert sorted(t.name for t in listed) == sorted(REGISTRY) and len(listed) == 29
    assert not {t.name for t in listed} & (set(RESERVED_TOOL_NAMES) | set(NOT_TOOLS))
    assert all(t.input_schema == REGISTRY[t.name].input_schema() for t in listed)

    obs = env.reset()
    assert obs.prompt and obs.result["data"].startswith(obs.prompt) and not obs.done
    obs = env.step(CallToolAction(tool_name="list_orders", arguments={"page_size": 3}))
    assert obs.error is None and not obs.result["is_error"] and obs.reward == 0.0
    obs = env.step(CallToolAction(tool_name="stop"))
    assert obs.error.error_type.value == "tool_not_found" and not obs.done
    while not obs.done:
        obs = env.step(CallToolAction(tool_name="end_window"))
    ep = env.session.ep
    cell = public_cell("counter-punch", 13)
    official = score(ep, Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))
    assert obs.reward == float(official.reward_composite) == obs.score["reward_composite"]
    assert env.state.over and env.state.score == official.as_json()
    again = env.step(CallToolAction(tool_name="end_window"))
    assert again.done and again.reward == 0.0 and again.score is None  # paid once

    shaped = openenv["StoreBenchEnvironment"](reward="shaped")
    obs = shaped.reset(task="counter-punch", task_seed=13)
    while not obs.done:
        obs = shaped.step(CallToolAction(tool_name="end_window"))
    assert obs.reward == float(business_normalized(official.business_raw, official.business_zero_raw,
                                                   official.business_scale, floor=SHAPED_FLOOR))


def test_openenv_server_plays_an_episode_over_a_websocket_session(openenv):
    from starlette.testclient import TestClient

    from mcp_client.openenv_env import create_app

    with TestClient(create_app(max_concurrent_envs=2)) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"task": "counter-punch", "task_seed": 7, "reward": "composite"}})
        assert ws.receive_json()["data"]["observation"]["tool_name"] == "store_status"
        ws.send_json({"type": "step", "data": {"type": "list_tools"}})
        assert len(ws.receive_json()["data"]["observation"]["tools"]) == 29
        done, message = False, None
        while not done:
            ws.send_json({"type": "step", "data": {"type": "call_tool", "tool_name": "end_window", "arguments": {}}})
            message = ws.receive_json()["data"]
            done = message["done"]
    assert message["reward"] == message["observation"]["score"]["reward_composite"]
    assert message["reward"] == public_cell("counter-punch", 7)["anchors"]["absentee"]["reward_composite"]


@pytest.mark.parametrize("kw", [{"seed": -5}, {"seed": "x"}, {"task_seed": "7"}, {"task_seed": 7.9}])
def test_openenv_reset_refuses_a_seed_that_is_not_a_task_seed(openenv, kw):
    env = openenv["StoreBenchEnvironment"](task="short-runway")
    with pytest.raises(InvalidSeed, match="is not a task seed"):
        env.reset(**kw)


def test_openenv_step_with_something_other_than_an_action_names_the_action_types(openenv):
    env = openenv["StoreBenchEnvironment"](task="short-runway", task_seed=7)
    env.reset()
    obs = env.step(42)
    assert obs.error.message.startswith("an action is a CallToolAction or ListToolsAction (OpenEnv's MCP actions), "
                                        "or, as for Gymnasium, {\"tool\": NAME, \"arguments\": {...}} as a dict or "
                                        "JSON text; not int")
    assert env.session.ep.ops_left == ops("short-runway") - 1  # charged like any malformed action


def test_gymnasium_and_openenv_default_to_the_same_channel(openenv):
    from environment.rl.session import DEFAULT_REWARD

    gym_env = gym.make("StoreBench-v0", task="short-runway", task_seed=7)
    _obs, info = gym_env.reset()
    open_env = openenv["StoreBenchEnvironment"](task="short-runway", task_seed=7)
    open_env.reset()
    assert info["reward_mode"] == open_env.session.reward_mode == DEFAULT_REWARD == "dense-relative"


def test_idling_earns_zero_on_the_relative_dense_channel_and_acting_is_measured_against_it():
    env = gym.make("StoreBench-v0", task="short-runway", task_seed=7)
    _, idle = play(env, [])  # end every window untouched: the idle store itself
    assert len(idle) == 30 and all(step[1] == 0.0 for step in idle)
    assert idle[-1][4]["dense_relative_return"] == 0.0 and idle[-1][4]["business_raw"] > 0  # the idle store earns
    _, acted = play(env, [act("list_orders", page_size=5), act("fulfill_order", order_id="nope")])
    info = acted[-1][4]
    absolute = gym.make("StoreBench-v0", task="short-runway", task_seed=7, reward="dense")
    _, same = play(absolute, [act("list_orders", page_size=5), act("fulfill_order", order_id="nope")])
    # Relative rewards sum to what the actions changed against the idle store, window by window.
    assert abs(sum(s[1] for s in acted) - (same[-1][4]["business_raw"] - idle[-1][4]["business_raw"])) < 1e-6
    assert info["dense_relative_return"] == round(sum(s[1] for s in acted), 2)


def test_importing_the_adapters_loads_neither_openenv_nor_mcp():
    code = ("import sys, environment.rl, mcp_client.openenv_env, environment.rl.vector; "
            "print(sorted(m for m in ('openenv', 'mcp', 'fastmcp', 'django', 'celery', 'channels') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --- many episodes ----------------------------------------------------------------------------


def test_the_parallel_runner_refuses_a_seed_that_is_not_a_task_seed():
    with pytest.raises(InvalidSeed, match="'7' is not a task seed"):
        run_many([("short-runway", "7")], "absentee", workers=0)


def test_parallel_runner_matches_serial_play():
    cells = [("counter-punch", 7), ("short-runway", 11), ("counter-punch", 13)]
    pooled = run_many(cells, "smart-triage", workers=2)
    serial = run_many(cells, "smart-triage", workers=0)
    assert pooled == serial
    for (task, seed), result in zip(cells, pooled, strict=True):
        ep = run_policy(arm(task, seed), "smart-triage")
        cell = public_cell(task, seed)
        direct = score(ep, Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))
        assert result["score"] == direct.as_json() and (result["task"], result["seed"]) == (task, seed)
        assert result["score"]["reward_composite"] == cell["anchors"]["smart-triage"]["reward_composite"]

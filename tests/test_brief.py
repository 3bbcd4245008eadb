"""The merchant's brief reaches the agent in band and gives nothing hidden away.

For every bundled task: the brief carries the task's prompt and its public terms
(horizon, windows, operations per window, opening cash), and none of what the agent
must not know: the task id, its title, the seed, or any event's platform message or
rumour text (those arrive through ``announcements`` when they happen, if at all).
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from environment.api import arm
from environment.brief import brief
from environment.engine.economics import economics_for
from environment.tasks import all_tasks

TASKS = [t.id for t in all_tasks()]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9-]+", text.lower()))


@pytest.mark.parametrize("task_id", TASKS)
def test_the_brief_has_the_terms_and_nothing_hidden(task_id):
    from environment.tasks import get_task

    task = get_task(task_id)
    text = brief(task)
    assert text.startswith(task.prompt.strip())
    econ = economics_for(dict(task.economics), task.listing_cap)
    assert f"{task.horizon_days} days" in text
    assert f"{task.windows} windows of {task.window_hours} hours" in text
    assert f"{task.ops_per_window} operations" in text
    assert f"${econ.starting_cash / 100:,.2f}" in text
    assert "except store_status" in text
    # What identifies the cell or its script never appears.
    if task_id not in _words(task.prompt):
        assert task_id not in _words(text)
    assert task.title.lower() not in text.lower()
    for event in task.events:
        for secret in (event.message, event.rumor):
            if secret:
                assert secret not in text, (task_id, secret)
        if event.vendor and event.vendor != "largest":
            assert event.vendor not in text
    assert "seed" not in text.lower()


def test_the_brief_does_not_depend_on_the_seed():
    a, b = arm("steady", 7), arm("steady", 13)
    assert brief(a.task) == brief(b.task)


def test_tasks_show_prompt_prints_the_brief():
    from environment.tasks import get_task

    out = subprocess.run([sys.executable, "-m", "environment", "tasks", "show", "steady", "--prompt"],
                         capture_output=True, text=True, check=True)
    assert out.stdout == brief(get_task("steady"))


def test_tasks_show_an_unknown_task_is_a_clear_error():
    out = subprocess.run([sys.executable, "-m", "environment", "tasks", "show", "nope", "--prompt"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "unknown task 'nope'" in out.stderr


def test_the_brief_states_the_traffic_the_engine_draws():
    """The brief's traffic claim is the engine's: usual shoppers a day over the store's last month."""
    from environment import simtime
    from environment.brief import TRAFFIC_OVER_HISTORY
    from environment.engine.dynamics import BASE_TRAFFIC, expected_shoppers
    from environment.simtime import DAY
    from environment.world.params import store_season

    ep = arm("peak-season", 7)  # no traffic event before day 12
    doy = simtime.day_of_year(ep.now)
    per_day = sum(expected_shoppers(ep, p, ep.now, store_season(doy) * BASE_TRAFFIC, doy)
                  for p in ep.products if p.active)
    last_month = sum(o.quantity for o in ep.world.orders if o.placed_at >= ep.start - 30 * DAY) / 30
    words = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
    assert round(per_day / last_month) == words[TRAFFIC_OVER_HISTORY]
    assert f"about {TRAFFIC_OVER_HISTORY} times the daily orders" in brief(ep.task)


def test_the_brief_says_what_the_last_operations_answer_is_as_the_store_gives_it():
    from environment.tasks import get_task

    task = get_task("steady")
    assert 'what it read is as of the window it was made in (its result says "window_ended": true)' in brief(task)
    ep = arm(task, 7)
    for _ in range(task.ops_per_window - 1):
        assert "window_ended" not in (ep.call("list_orders", {"page_size": 1}).data or {})
    last = ep.call("list_orders", {"page_size": 1})
    assert last.data["window_ended"] is True and " | window 2 of " in last.header

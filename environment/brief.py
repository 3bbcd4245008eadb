"""The merchant's brief: what an agent is told before its first call.

The brief is the task's own prompt (written to a merchant, never naming the task)
followed by the terms every task shares, filled in from the task file: how long
the shift runs, how many windows of how many hours, how many operations each
window gives, the opening cash and deposit, the platform's main fees and fines,
what a call costs, and what the grade rewards.  It is built from public fields
only: the task id, its title, the seed and the event script (what happens, when,
and whether it is announced) never appear.  An announced event reaches the agent
the way it reaches a merchant, through ``announcements`` once it happens.

The MCP server sends this text as its ``instructions``, as the prompt ``brief``
and as the resource ``storebench://brief``; ``storebench tasks show TASK --prompt``
prints it; the baseline runner uses it as the system prompt.  Nothing here is
secret, so one text serves every channel.
"""

from __future__ import annotations

from .engine.economics import Economics, economics_for
from .tasks import Task

__all__ = ["TRAFFIC_OVER_HISTORY", "brief"]

# The platform's usual traffic against the store's orders of the month before the shift,
# as the engine draws it (a test holds this word to the engine's figure).
TRAFFIC_OVER_HISTORY = "five"


def _usd(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def brief(task: Task) -> str:
    """The brief for ``task``: its prompt, then the shared terms (see the module)."""
    econ: Economics = economics_for(dict(task.economics), task.listing_cap)
    windows = task.windows
    days = task.horizon_days
    terms = [
        f"The shift: {days} days from {task.start[:10]}, played as {windows} windows of "
        f"{task.window_hours} hours. Each window gives you {task.ops_per_window} operations; unspent "
        f"operations do not carry over. Every tool call except store_status costs one operation, "
        f"including a call the store refuses. Spending a window's last operation, or calling end_window, "
        f"moves the world on to the next window. The call that spends the last operation is answered with "
        f"the next window's header, but what it read is as of the window it was made in (its result says "
        f"\"window_ended\": true): read again before acting on times and deadlines.",
        f"Money: you open with {_usd(econ.starting_cash)} in cash and a {_usd(econ.deposit)} deposit held by "
        f"the platform. Sales are paid out after a {econ.settlement_days}-day settlement delay, less a "
        f"{econ.commission_bp / 100:g}% commission. A label costs {_usd(econ.label_fee)} per order you ship; "
        f"orders still unshipped at their deadline go out with the platform's carrier at "
        f"{_usd(econ.autoship_fee)} each, as capacity allows, and an order nobody ships is fined. A return "
        f"left unanswered for {econ.return_escalate_days} days escalates and is fined "
        f"{_usd(econ.ignored_return_fine)}. Publishing a listing costs {_usd(econ.insertion_fee)}, with at "
        f"most {econ.listing_cap} live listings. If cash stays below zero for {econ.suspend_after_days} days "
        f"the store is suspended and the shift ends.",
        f"Traffic: the marketplace now sends the store about {TRAFFIC_OVER_HISTORY} times the daily orders "
        "of its last month (its sales history predates that growth). Announced changes in traffic are "
        "relative to this level.",
        "What is graded at the end of the shift: mostly the growth of the store's net assets (cash, "
        "deposit and money owed to you; stock still on the shelf or on the way when the shift ends goes to "
        f"the liquidator at {econ.salvage_bp / 100:g}% of its cost), then reliability (orders shipped "
        "on time and returns handled), then continuity (acting in every window rather than leaving the "
        "store alone). Stopping early forfeits the windows left.",
        "Call store_status (free) to see where things stand; platform_terms and announcements say more.",
    ]
    return task.prompt.strip() + "\n\n" + "\n\n".join(terms) + "\n"

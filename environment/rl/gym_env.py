"""``StoreBench-v0``: the store as a Gymnasium environment with text observations and actions.

    import gymnasium as gym
    import environment.rl  # registers StoreBench-v0

    env = gym.make("StoreBench-v0", task="short-runway", task_seed=7)
    obs, info = env.reset()                       # the task prompt, then store_status
    obs, reward, terminated, truncated, info = env.step('{"tool": "list_orders", "arguments": {"page_size": 20}}')

Spaces
    ``observation_space``: ``Text`` of printable ASCII and newlines, up to
    :data:`MAX_OBSERVATION` characters.  An observation is the last tool result as an
    agent reads it over MCP (:meth:`ToolResult.text`: the store header line, then
    compact JSON; a refusal is ``{"error": {"code", "message", ...}}``), with any
    non-ASCII character written as a JSON escape.  The first observation is the task
    prompt, a blank line, then the ``store_status`` result.
    ``action_space``: ``Text`` up to :data:`MAX_ACTION` characters, holding
    ``{"tool": NAME, "arguments": {...}}``.  The 29 tools and their JSON schemas are
    :attr:`StoreBenchEnv.tools`.

Steps, malformed actions, ending, seeding and rewards follow :mod:`.session`, whose
docstring is the one statement of those rules.  In short: one action is one tool call;
a malformed action is answered with a structured error and costs one operation;
``reset``/``score``/``stop`` are never actions; ``terminated`` when the store ends
(horizon or suspension), ``truncated`` at ``max_steps`` (the store is then settled as
if the operator walked away) and after ``settle()``; ``reward="dense-relative"`` (default, as for OpenEnv) pays
the dense channel minus the idle store's, so idling earns 0; ``reward="dense"`` pays each
window's change
of net assets + salvage x inventory at cost in dollars on the step that closes it,
summing to ``business_raw``; ``reward="shaped"`` pays only at the end, the business
term clipped to [-2, 1]; ``reward="composite"`` pays only at the end, the official
composite.

Any task seed plays out of the box: a cell missing from the calibration file (the
shipped one has seeds 7, 11 and 13) is calibrated on the spot at its first reset
(``calibrate_missing=True``, the default here as for OpenEnv; about a second per
new cell, once per process).  Pass ``calibrate_missing=False`` to refuse such cells
instead (then only ``reward="dense"`` plays them).

``info`` carries the header, the window, operations left and the step count; once
the episode has ended, also ``end_reason``, ``business_raw`` (dollars), the dense
rewards, and ``score``: the official score (``reward_composite`` etc.) graded with
the cell's calibration constants, or ``None`` when the calibration has no such cell.

Rendering: ``render_mode="ansi"`` returns the current observation text; no other mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from ..engine import Episode
from ..tasks import PUBLIC_SEEDS
from .session import DEFAULT_REWARD, OBSERVATION_CHARSET, RLConfigError, Session, tool_specs

ENV_ID = "StoreBench-v0"
#: The longest observation: four times the longest tool result (a 100-row supply catalogue page).
MAX_OBSERVATION = 131_072
#: The longest action: room for the longest arguments (a 4,000-character listing description).
MAX_ACTION = 16_384
ACTION_CHARSET = "\t" + OBSERVATION_CHARSET


class StoreBenchEnv(gym.Env[str, str]):
    """One StoreBench store per episode, driven through the 29 tools by JSON text actions."""

    # A text frame has no natural rate; one is declared so that Gymnasium's checker and
    # wrappers that pace or record frames have one (its toy-text environments do the same).
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, task: str | None = None, task_seed: int | None = None, *, reward: str = DEFAULT_REWARD,
                 calibration: str | Path | dict[str, Any] | None = "public", calibrate_missing: bool = True,
                 max_steps: int | None = None, seeds: Sequence[int] = PUBLIC_SEEDS,
                 tasks: Sequence[str] | None = None, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise RLConfigError(f"render_mode must be None or one of {self.metadata['render_modes']}, "
                                f"not {render_mode!r}")
        self.render_mode = render_mode
        self.session = Session(task, task_seed, reward=reward, calibration=calibration,
                               calibrate_missing=calibrate_missing, max_steps=max_steps, seeds=seeds,
                               tasks=tasks, max_observation=MAX_OBSERVATION)
        self.observation_space = spaces.Text(max_length=MAX_OBSERVATION, charset=OBSERVATION_CHARSET)
        self.action_space = spaces.Text(max_length=MAX_ACTION, charset=ACTION_CHARSET)
        self.tools = tool_specs()

    @property
    def episode(self) -> Episode | None:
        """The live :class:`~environment.engine.Episode` (for harnesses and tests, not agents)."""
        return self.session.ep

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        task, task_seed = self.session.resolve(self.np_random, options)
        obs = self.session.start(task, task_seed, options.get("reward"))
        return obs, self.session.info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        step = self.session.act(action)
        return step.text, float(step.reward), bool(step.terminated), bool(step.truncated), self.session.info(step)

    def settle(self) -> dict[str, Any]:
        """Settle the store now, for a harness whose agent stopped acting (never an action)."""
        return self.session.settle()

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.session.last_text
        return None

    def close(self) -> None:
        self.session.ep = None

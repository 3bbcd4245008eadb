"""One RL episode over the tool surface: the logic every RL adapter shares.

:class:`Session` sits between an adapter (the Gymnasium environment in
:mod:`.gym_env`, the OpenEnv environment in :mod:`mcp_client.openenv_env`) and the core
:class:`~environment.engine.Episode`.  It decides which cell to play, turns an
agent's action into exactly one :meth:`Episode.call`, and turns the store's money
into rewards.  It imports neither gymnasium nor any training library.

Seeding (the one place it is decided)
-------------------------------------
A cell is a (task, task seed) pair.  At every reset:

- the task is ``options["task"]`` if given, else the adapter's constructor
  ``task``, else drawn uniformly from ``tasks`` (default: every task of the
  training split);
- the task seed is ``options["task_seed"]`` if given, else the constructor's
  ``task_seed``, else drawn uniformly from ``seeds`` (default
  :data:`~environment.tasks.PUBLIC_SEEDS`).  Every one of these is held to
  :func:`~environment.errors.check_seed` (else :class:`~environment.errors.InvalidSeed`).

The draws use the random generator the adapter passes in (Gymnasium's
``np_random``, seeded by ``reset(seed=...)``; for OpenEnv a generator made from the
reset ``seed``), the task first, then the task seed, and only for what was not
given.  That generator is used for nothing else: the store itself is a pure
function of (task, task seed, action sequence), so a given cell and a given
action sequence give the same trajectory whatever the Gymnasium seed.

Actions
-------
An action names one of the 29 tools and its arguments: a JSON text
``{"tool": NAME, "arguments": {...}}`` (``arguments`` may be omitted), or the
already-parsed ``dict`` / ``(name, arguments)`` pair.  A well-formed action goes
to the core unchanged, and the core's rules apply: every call but
``store_status`` spends one operation, refused calls included, and spending a
window's last operation closes the window.

Anything else is a *malformed action*: text that is not JSON, JSON that is not an
object, keys other than ``tool`` and ``arguments``, a ``tool`` that is not a
string, or a name that is not one of the 29 tools (``reset``, ``score``,
``stop``, ``snapshot``... are never tools).  A malformed action never raises: it
is answered with a structured error (code ``malformed_action`` or
``unknown_tool``) and costs one operation, like any refused call, so that
flooding the store with noise is not free.  The core has no verb for "charge
one operation for a call that named no tool", so the charge goes through the
core as a refused call of :data:`CHARGE_TOOL` whose only argument,
``malformed_action``, holds (an excerpt of) the raw action.  The core refuses
it as an unknown argument, spends the operation, records it in the action log
(so a replay of the log reproduces the trajectory exactly) and closes the
window if that was its last operation.

Ending
------
There is no stop, reset or score action.  An episode ends when the store does:
the horizon is reached or the store is suspended (``terminated``).  The agent
"ending" simply means it stops acting; a harness that stops stepping calls
:meth:`Session.settle` (a Python method, never an action) to freeze the store
and settle it, as an operator walking away would.  Adapters cap an episode at
``max_steps`` actions (default: twice the task's total operation budget, since
``store_status`` is free): at the cap the store is settled in the same way and
the step reports ``truncated``; a step after :meth:`Session.settle` is refused
(``store_closed``), pays nothing and reports ``truncated`` too.

Rewards
-------
Every adapter (Gymnasium, OpenEnv, the vector runner) defaults to the same channel,
``reward="dense-relative"``: the dense channel below minus, window by window, the
dense channel of the idle store, the same cell with every window ended untouched
(the absentee anchor; computed once per cell and process).  Idling therefore earns
exactly 0 on every step, and a finished episode's rewards sum to its business_raw
minus the idle store's: what the agent's actions added.

``reward="dense"``: on each step, the dense channel's change for the window(s)
that step closed, in dollars: per window, the change of net assets plus salvage
rate x inventory at cost (:meth:`Episode.dense_rewards`).  Steps that close no
window earn exactly 0.  The step that ends the episode also carries settlement,
so the rewards of a finished episode sum to ``business_raw`` in dollars.

``reward="shaped"``: 0 on every step but the last, which earns the business term
clipped to [-2, 1] instead of [0, 1] (spec, section 5).  ``reward="composite"``:
0 on every step but the last, which earns the official composite.  The official
score is reported unchanged either way.

Every mode but ``dense`` needs the cell's calibration constants (the terminal modes
for their reward, ``dense-relative`` so that the ending reports the official score):
from the calibration file (default: the shipped ``calibration/public.json``, which
has the public seeds 7, 11 and 13), else, by default (``calibrate_missing=True``,
the same in every adapter, so that training over many seeds works out of the box),
by calibrating a missing cell on the spot.  The cost: the first reset of each cell
outside the file runs the calibration's anchor policies on it, about 0.5 to 1.5
seconds per cell on this machine, once per process (cached); later resets of that
cell cost nothing extra.  Such a cell was never checked against the calibration's gates:
where it fails one (on some seeds the judgment anchors do not outscore blast-list), its
rewards may rank volume play above judgment, so it is checked as it is calibrated, a
:class:`GateWarning` names the gates it fails (once per cell and process), and the
episode's final info lists them (``gates_failed``, [] for a cell that passes them all).
With ``calibrate_missing=False`` such a cell is refused
at reset (:class:`RLConfigError`) unless ``reward="dense"``, which needs no constants.
The official score is reported only when constants exist; otherwise it is ``None``.

Configuration errors (a reward mode, a reset option, a step cap, a missing cell)
are :class:`RLConfigError` (code ``invalid_config``): part of the core's error tree and still a
``ValueError``.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from ..calibration import FROM_FILE, GATES_NOTE, calibrate_cell, cell_of, load_calibration, unchecked_gates
from ..engine import Episode, ToolResult
from ..engine.settlement import SHAPED_FLOOR, Score, business_normalized, compose, score
from ..errors import ErrorCode, StoreBenchError, check_seed
from ..suite import PUBLIC_CALIBRATION
from ..tasks import PUBLIC_SEEDS, Task, all_tasks, get_task
from ..tools.registry import REGISTRY
from ..world import load_world

#: The refused call that carries a malformed action's operation (see the module docstring).
CHARGE_TOOL = "finance_summary"
STOPPED_AT_CAP = "stopped at the step cap"  # the episode's end_reason when max_steps truncates it
# Said after the core's store_closed to a step made once the episode was over (Gymnasium leaves
# such a step undefined; this one pays nothing and says what to do).
AFTER_THE_END = "This episode is over: reset the environment to play another."
#: Reward modes: per-window dollars against the idle store (the default of every adapter),
#: per-window dollars, terminal shaped business, terminal official composite.
REWARD_MODES = ("dense-relative", "dense", "shaped", "composite")
DEFAULT_REWARD = "dense-relative"
#: What a step's observation may contain: printable ASCII and newlines.  Tool results are
#: JSON, so any other character is written as a JSON ``\\uXXXX`` escape.
OBSERVATION_CHARSET = "\n" + "".join(chr(c) for c in range(32, 127))
_EXCERPT = 500
_OUTSIDE_CHARSET = re.compile(r"[^\n -~]")

_calibration_files: dict[str, dict[str, Any] | None] = {}


class RLConfigError(StoreBenchError, ValueError):
    """An adapter was configured or reset with something it cannot play (a ``ValueError`` too)."""

    code = ErrorCode.INVALID_CONFIG
_calibrated_on_the_spot: dict[tuple[str, int], dict[str, Any]] = {}


class GateWarning(UserWarning):
    """A cell calibrated on the spot fails the calibration's gates: its rewards may rank volume
    play above judgment (``info["gates_failed"]`` at the episode's end names the gates)."""


def tool_specs() -> list[dict[str, Any]]:
    """The 29 tools as an agent sees them: name, description, JSON input schema."""
    return [{"name": spec.name, "description": spec.description, "input_schema": spec.input_schema()}
            for spec in REGISTRY.values()]


def load_calibration_doc(calibration: str | Path | dict[str, Any] | None) -> dict[str, Any] | None:
    """``"public"`` (the shipped file, None if it is absent), a path, a loaded document, or None."""
    if calibration is None or isinstance(calibration, dict):
        return calibration
    if calibration == "public":
        if not PUBLIC_CALIBRATION.is_file():
            return None
        calibration = PUBLIC_CALIBRATION
    key = str(Path(calibration).resolve())
    if key not in _calibration_files:
        _calibration_files[key] = load_calibration(calibration)[0]
    return _calibration_files[key]


def _ascii(text: str) -> str:
    return text if text.isascii() else text.encode("ascii", "backslashreplace").decode("ascii")


def observation_text(header: str, body: dict[str, Any] | None) -> str:
    """The header line, then compact JSON: :meth:`ToolResult.text`, with non-ASCII escaped."""
    return _ascii(header) + "\n" + json.dumps(body, separators=(",", ":"), ensure_ascii=True)


def _fit(text: str, max_length: int | None) -> str:
    """Keep an observation inside the observation space: printable ASCII and newlines (any other
    character escaped), at most ``max_length`` characters (never reached by the 29 tools' results,
    whose largest page is about a quarter of the default)."""
    if _OUTSIDE_CHARSET.search(text):
        text = _OUTSIDE_CHARSET.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    if max_length is None or len(text) <= max_length:
        return text
    tail = f"\n[observation cut: {len(text) - max_length} more characters]"
    return text[:max_length - len(tail)] + tail


class Malformed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Repeated(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (``json`` keeps the last of a repeated
    key: a second "tool" would silently replace the first)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise _Repeated(next(k for k, _ in pairs if k in seen or seen.add(k)))  # type: ignore[func-returns-value]
    return obj


def parse_action(action: Any) -> tuple[str, Any]:
    """``(tool, arguments)`` from an action, or :class:`Malformed` saying what is wrong."""
    if isinstance(action, tuple) and len(action) == 2:
        tool, arguments = action
        obj = {"tool": tool, "arguments": arguments}
    elif isinstance(action, dict):
        obj = action
    elif isinstance(action, str | bytes):
        try:
            obj = json.loads(action, object_pairs_hook=_once_each)
        except _Repeated as repeated:
            raise Malformed("malformed_action", f"the action names {repeated.key!r} twice; give each key once") from None
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise Malformed("malformed_action", f"the action is not JSON ({reason}); send "
                            '{"tool": NAME, "arguments": {...}}') from None
    else:
        shape = f"a {len(action)}-item {type(action).__name__}" if isinstance(action, tuple | list) else \
            type(action).__name__
        raise Malformed("malformed_action", 'an action is a JSON text, a dict {"tool": NAME, "arguments": {...}} or a '
                        f"(tool, arguments) tuple, not {shape}")
    if not isinstance(obj, dict):
        raise Malformed("malformed_action", f"the action must be a JSON object, not {type(obj).__name__}; "
                        'send {"tool": NAME, "arguments": {...}}')
    extra = sorted(str(k) for k in obj if k not in ("tool", "arguments"))
    if extra:
        raise Malformed("malformed_action", f"unknown keys {extra}: an action has only \"tool\" and \"arguments\"")
    tool = obj.get("tool")
    if not isinstance(tool, str):
        raise Malformed("malformed_action", "the action must name a tool: \"tool\" is "
                        + ("missing" if tool is None else f"of type {type(tool).__name__}, not a string"))
    if tool not in REGISTRY:
        raise Malformed("unknown_tool", f"there is no tool {tool[:80]!r}; the tools are: "
                        + ", ".join(sorted(REGISTRY)))
    return tool, obj.get("arguments", {})


def _excerpt(action: Any) -> str:
    try:
        text = action if isinstance(action, str) else repr(action)
    except RecursionError:
        text = f"<a {type(action).__name__} nested too deeply>"
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + f"... ({len(text)} characters)"


_idle_dense: dict[tuple[str, int], list[int]] = {}


def idle_dense_rewards(task: Task, seed: int) -> list[int]:
    """The dense channel of the idle store (every window ended untouched), per window, in cents."""
    key = (task.id, seed)
    if key not in _idle_dense:
        from ..anchors import get_anchor

        ep = Episode(task, seed, load_world())
        get_anchor("absentee").run(ep)
        _idle_dense[key] = ep.dense_rewards()
    return _idle_dense[key]


class Step:
    """What one action did: the text the agent reads, and the reward bookkeeping."""

    __slots__ = ("tool", "ok", "error_code", "header", "body", "text", "reward", "dense_cents",
                 "terminated", "truncated", "ended", "malformed")
    # Declared for type checkers: ``__init__`` sets every slot (None when not given).
    tool: str | None
    ok: bool
    error_code: str | None
    header: str
    body: dict[str, Any] | None
    text: str
    reward: float
    dense_cents: int
    terminated: bool
    truncated: bool
    ended: bool
    malformed: bool

    def __init__(self, **kw: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


class Draws(Protocol):
    """What cells are drawn with: Gymnasium's ``np_random`` (a numpy ``Generator``) or OpenEnv's seeded stand-in."""

    def integers(self, n: int, /) -> int: ...


class Session:
    """Cell choice, action dispatch and rewards for one adapter (reused across resets)."""

    def __init__(self, task: str | None = None, task_seed: int | None = None, *, reward: str = DEFAULT_REWARD,
                 calibration: str | Path | dict[str, Any] | None = "public", calibrate_missing: bool = True,
                 max_steps: int | None = None, seeds: Sequence[int] = PUBLIC_SEEDS,
                 tasks: Sequence[str] | None = None, max_observation: int | None = None) -> None:
        if reward not in REWARD_MODES:
            raise RLConfigError(f"reward must be one of {', '.join(REWARD_MODES)}, not {reward!r}")
        if task is not None:
            get_task(task)
        index = getattr(max_steps, "__index__", None)  # an int or a NumPy integer; not a float or text
        cap = None if max_steps is None or index is None or isinstance(max_steps, bool) else index()
        if max_steps is not None and (cap is None or cap < 1):
            raise RLConfigError(f"max_steps must be a whole number of at least 1, not {max_steps!r}; give None for "
                             "the default cap (twice the task's operations)")
        self.task_id = task
        self.task_seed = None if task_seed is None else check_seed(task_seed)
        self.default_reward = self.reward_mode = reward
        self.calibration = load_calibration_doc(calibration)
        self.calibrate_missing = calibrate_missing
        self.max_steps = cap
        self.seeds = tuple(check_seed(s) for s in seeds)
        self.tasks = tuple(tasks) if tasks is not None else tuple(t.id for t in all_tasks() if t.split == "train")
        for tid in self.tasks:
            get_task(tid)
        if not self.seeds or not self.tasks:
            raise RLConfigError("seeds and tasks to draw from must not be empty")
        self.max_observation = max_observation
        self.ep: Episode | None = None
        self.cell: dict[str, Any] | None = None
        self.calibration_source: str | None = None
        self.steps = 0
        self.step_cap = 0
        self.paid_cents = 0
        self.paid_relative_cents = 0
        self.idle: list[int] | None = None
        self.truncated = False
        self.last_text = ""

    # -- cells ------------------------------------------------------------------------

    def resolve(self, rng: Draws, options: Mapping[str, Any] | None = None) -> tuple[str, int]:
        """The cell to play (see the module docstring for the rule)."""
        options = dict(options or {})
        unknown = sorted(set(options) - {"task", "task_seed", "reward"})
        if unknown:
            raise RLConfigError(f"unknown reset options {unknown}; the options are task, task_seed, reward")
        task = options.get("task", self.task_id)
        if task is None:
            task = self.tasks[int(rng.integers(len(self.tasks)))]
        seed = options.get("task_seed", self.task_seed)
        if seed is None:
            seed = self.seeds[int(rng.integers(len(self.seeds)))]
        return get_task(task).id, check_seed(seed)

    def constants(self, task: Task, seed: int) -> tuple[dict[str, Any] | None, str | None]:
        cell = cell_of(self.calibration, task.id, seed) if self.calibration else None
        if cell is not None:
            return cell, FROM_FILE
        if not self.calibrate_missing:
            return None, None
        key = (task.id, seed)
        if key not in _calibrated_on_the_spot:
            cell = calibrate_cell(task, seed, load_world())
            failed = unchecked_gates(task.id, cell)
            if failed:  # once per cell and process, as the calibration itself
                warnings.warn(f"{task.id} seed {seed}: {GATES_NOTE} ({'; '.join(failed)})", GateWarning, stacklevel=2)
            _calibrated_on_the_spot[key] = cell
        return _calibrated_on_the_spot[key], "calibrated for this cell on the spot"

    def start(self, task_id: str, seed: int, reward: str | None = None) -> str:
        """Arm the cell; returns the first observation: the task prompt, then ``store_status``.

        ``reward`` overrides the constructor's reward mode for this episode only.  A refused
        start changes nothing: the episode being played, if any, goes on as it was."""
        seed = check_seed(seed)
        reward = self.default_reward if reward is None else reward
        if reward not in REWARD_MODES:
            raise RLConfigError(f"reward must be one of {', '.join(REWARD_MODES)}, not {reward!r}")
        task = get_task(task_id)
        cell, source = self.constants(task, seed)
        if cell is None and reward != "dense":
            raise RLConfigError(
                f"reward={reward!r} needs calibration constants, and the cell {task.id} seed {seed} is "
                "not in the calibration; construct the environment with calibrate_missing=True (the default: "
                "calibrates the cell on the spot, about a second, once per process), or with calibration=PATH "
                "naming a calibration file that has the cell, or reset with reward='dense' (needs no constants)")
        self.reward_mode = reward
        self.ep = Episode(task, seed, load_world())
        self.cell, self.calibration_source = cell, source
        self.steps = 0
        self.step_cap = self.max_steps if self.max_steps is not None else 2 * task.windows * task.ops_per_window
        self.paid_cents = 0
        self.paid_relative_cents = 0
        self.idle = idle_dense_rewards(task, seed) if self.reward_mode == "dense-relative" else None
        self.truncated = False
        status = self.ep.call("store_status")
        self.last_text = _fit(task.prompt.strip() + "\n\n" + observation_text(status.header, status.data),
                              self.max_observation)
        return self.last_text

    # -- acting -------------------------------------------------------------------------

    def act(self, action: Any, refusal: Malformed | None = None) -> Step:
        """One step.  ``refusal``: an adapter's own reason ``action`` is malformed (it is then not parsed)."""
        ep = self.ep
        if ep is None:
            raise RuntimeError("reset the environment before stepping it")
        was_over = ep.over
        self.steps += 1
        malformed = refusal
        parsed: tuple[str, Any] | None = None
        if malformed is None:
            try:
                parsed = parse_action(action)
            except Malformed as exc:
                malformed = exc
        tool: str | None
        body: dict[str, Any] | None
        code: str | None
        if malformed is None:
            assert parsed is not None
            tool, arguments = parsed
            result = ep.call(tool, arguments)
            header = result.header
            body = result.data if result.ok else {"error": result.error}
            ok, code = result.ok, (None if result.error is None else result.error.get("code"))
        else:
            tool = None
            charged: ToolResult = ep.call(CHARGE_TOOL, {"malformed_action": _excerpt(action)})
            header = charged.header
            if charged.error and charged.error.get("code") == ErrorCode.STORE_CLOSED:
                body = {"error": charged.error}
                code = ErrorCode.STORE_CLOSED
            else:
                body = {"error": {"code": malformed.code, "message": malformed.message}}
                code = malformed.code
            ok = False
        refusal_body = body.get("error") if body is not None else None
        if was_over and code == ErrorCode.STORE_CLOSED and isinstance(refusal_body, dict):
            said = str(refusal_body.get("message", "")).rstrip()
            body = {"error": {**refusal_body, "message": f"{said}{'' if said.endswith('.') else '.'} {AFTER_THE_END}"}}
        ended_now = ep.over and not was_over
        if not ep.over and self.steps >= self.step_cap:
            ep.stop(STOPPED_AT_CAP)  # settled as if the operator walked away
            self.truncated = ended_now = True
            header = ep.header_line()
        text = _fit(observation_text(header, body), self.max_observation)
        self.last_text = text
        if was_over:  # the store was over before this step (ended, or settled by settle()): nothing to pay
            dense, reward = 0, 0.0
        else:
            dense = self._dense_delta()
            reward = self._relative_delta() / 100 if self.reward_mode == "dense-relative" else \
                self._reward(dense, ended=ended_now)
        return Step(tool=tool, ok=ok, error_code=code, header=header, body=body, text=text, reward=reward,
                    dense_cents=dense, terminated=ep.over and not self.truncated,
                    truncated=ep.over and self.truncated, ended=ended_now, malformed=malformed is not None)

    def settle(self) -> dict[str, Any]:
        """Freeze and settle the store now (the operator walks away); returns :meth:`final_info`.

        For harnesses whose agent stopped acting.  Never an action.  The settlement's dense
        change is not delivered as a reward by any step; it is in ``final_info()``.  The
        episode counts as truncated, as at the step cap: a step after it is refused
        (``store_closed``), pays nothing and says ``truncated``."""
        if self.ep is not None and not self.ep.over:
            self.ep.stop()
            self.truncated = True
        return self.final_info()

    def _episode(self) -> Episode:
        """The episode being played; before :meth:`start` there is none."""
        if self.ep is None:
            raise RuntimeError("reset the environment before stepping it")
        return self.ep

    def _dense_delta(self) -> int:
        total = sum(self._episode().dense_rewards())
        delta = total - self.paid_cents
        self.paid_cents = total
        return delta

    def _relative_delta(self) -> int:
        """This step's change of (dense channel - the idle store's), in cents, window by window."""
        assert self.idle is not None
        total = sum(d - (self.idle[i] if i < len(self.idle) else 0) for i, d in enumerate(self._episode().dense_rewards()))
        delta = total - self.paid_relative_cents
        self.paid_relative_cents = total
        return delta

    def _reward(self, dense_cents: int, *, ended: bool) -> float:
        if self.reward_mode == "dense":
            return dense_cents / 100
        if not ended:
            return 0.0
        s = self.official()
        if self.reward_mode == "composite":
            return float(s.reward_composite)
        return float(self.shaped_business(s))

    # -- scores --------------------------------------------------------------------------

    def official(self) -> Score:
        cell = self.cell
        if cell is None:
            return score(self._episode())
        return score(self._episode(), Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))

    def shaped_business(self, s: Score) -> Decimal:
        return business_normalized(s.business_raw, s.business_zero_raw, s.business_scale, floor=SHAPED_FLOOR)

    def info(self, step: Step | None = None) -> dict[str, Any]:
        ep = self._episode()
        out = {
            "task": ep.task.id, "task_seed": ep.seed, "header": ep.header_line(),
            "window": min(ep.window + 1, ep.n_windows), "windows_total": ep.n_windows,
            "windows_closed": ep.window, "operations_left": 0 if ep.over else ep.ops_left,
            "steps": self.steps, "max_steps": self.step_cap, "reward_mode": self.reward_mode,
        }
        if step is not None:
            out.update(tool=step.tool, ok=step.ok, error=step.error_code, malformed=step.malformed,
                       dense_reward=step.dense_cents / 100)
        if ep.over:
            out.update(self.final_info())
        return out

    def final_info(self) -> dict[str, Any]:
        ep = self._episode()
        s = self.official()
        has_constants = self.cell is not None
        out = {
            "end_reason": ep.end_reason or None, "business_raw": float(s.business_raw),
            "dense_return": self.paid_cents / 100, "dense_rewards": [c / 100 for c in ep.dense_rewards()],
            "dense_relative_return": None if self.idle is None else self.paid_relative_cents / 100,
            "calibration_source": self.calibration_source,
            # the gates the cell fails: a cell calibrated on the spot was never checked (see GATES_NOTE)
            "gates_failed": (None if self.cell is None
                             else unchecked_gates(ep.task.id, self.cell, self.calibration_source or "")),
            "score": s.as_json() if has_constants else None,
            "reward_composite": float(s.reward_composite) if has_constants else None,
            "shaped_business": float(self.shaped_business(s)) if has_constants else None,
            "shaped_composite": (float(compose(self.shaped_business(s), s.reliability, s.continuity))
                                 if has_constants else None),
        }
        return out

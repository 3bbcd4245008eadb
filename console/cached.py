"""Cached views: the last result of each read, re-readable for free.

A participant's stand-in for an agent's memory of what it has already read: for
every read tool and set of arguments called successfully this shift (``get_product``
of PRD-001 and of PRD-002 are two views, as are two pages of a list), the newest such
call, marked with the simulated time and window it was read at. Re-reading one shows the stored
result; nothing is sent to the store and no operation is spent.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from environment.tools import REGISTRY
from environment.tools.registry import ToolKind
from shifts.results import read_as_of

from .toolforms import WORKSPACE_ORDER

_FAMILY_ORDER = {family.value: index for index, family in enumerate(WORKSPACE_ORDER)}


@dataclass(frozen=True)
class CachedView:
    tool: str
    title: str
    family: str
    seq: int  # the stored call to re-read
    read_at: str  # simulated time, "YYYY-MM-DD HH:MM"
    window: int
    arguments: dict
    newest: bool = True  # the newest view of its tool (whatever the arguments)

    @property
    def arguments_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.arguments.items()))


_READ_TOOLS = frozenset(name for name, spec in REGISTRY.items() if spec.kind == ToolKind.READ)
_SCALARS = frozenset({str, int, bool, type(None)})


def _read_tools() -> frozenset[str]:
    return _READ_TOOLS


def _arguments_key(arguments: dict) -> object:
    """What tells two argument sets apart, as ``json.dumps(arguments, sort_keys=True)``
    does: scalars by type and value (a float by its text, so -0.0 is not 0.0), anything
    else by its JSON.  Worked out for every read of the shift on every call, so cheap."""
    if all(type(value) in _SCALARS or type(value) is float for value in arguments.values()):
        return tuple(sorted((name, type(value), repr(value) if type(value) is float else value)
                            for name, value in arguments.items()))
    return json.dumps(arguments, sort_keys=True)


@dataclass(frozen=True)
class _Seen:
    """The newest read of each (tool, arguments) among the first ``count`` calls of a
    shift's list, the last of which was ``last`` (the very object)."""

    count: int
    last: object
    newest: dict


# Per shift, what the last reply worked out: the next one reads only the calls after it.
_seen: dict[int, _Seen] = {}
MAX_SHIFTS_SEEN = 2048


def _newest_reads(calls, shift_id: int | None) -> dict:
    reads = _read_tools()
    seen = _seen.get(shift_id) if shift_id is not None else None
    # The calls a reply gets are the live cache's records, the same objects from one call to the
    # next while the cache lives: a list that begins with the calls seen before continues them.
    if seen is not None and 0 < seen.count <= len(calls) and calls[seen.count - 1] is seen.last:
        newest, start = dict(seen.newest), seen.count
    else:
        newest, start = {}, 0
    for call in calls[start:]:
        if call.tool in reads and not call.is_error and call.reached_core:
            key = (call.tool, _arguments_key(call.arguments))
            newest.pop(key, None)
            newest[key] = call
    if shift_id is not None and calls:
        if len(_seen) >= MAX_SHIFTS_SEEN and shift_id not in _seen:
            _seen.clear()
        _seen[shift_id] = _Seen(len(calls), calls[-1], newest)
    return newest


def cached_views(calls, minutes_per_window: int, shift_id: int | None = None) -> list[CachedView]:
    """The newest successful call of each read tool and argument set among ``calls``
    (ordered by seq), grouped by tool family in the workspace's order, each tool's
    views newest first.  With ``shift_id``, what was worked out for the shift's calls
    before is kept (per process) and only the calls after those are read."""
    newest = _newest_reads(calls, shift_id)
    last_of_tool = {tool: call.seq for (tool, _), call in newest.items()}
    views = []
    for (tool, _), call in newest.items():
        read = read_as_of(call, minutes_per_window)
        if read is None:
            continue
        spec = REGISTRY[tool]
        views.append(CachedView(tool=tool, title=spec.title, family=spec.family.value, seq=call.seq,
                                read_at=read[0], window=read[1],
                                arguments=dict(call.arguments), newest=last_of_tool[tool] == call.seq))
    return sorted(views, key=lambda v: (_FAMILY_ORDER[v.family], v.tool, -v.seq))

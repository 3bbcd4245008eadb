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


def cached_views(calls) -> list[CachedView]:
    """The newest successful call of each read tool and argument set among ``calls``
    (ordered by seq), grouped by tool family in the workspace's order, each tool's
    views newest first."""
    reads = _read_tools()
    newest: dict = {}
    for call in calls:
        if call.tool in reads and not call.is_error and call.reached_core:
            key = (call.tool, _arguments_key(call.arguments))
            newest.pop(key, None)
            newest[key] = call
    last_of_tool = {tool: call.seq for (tool, _), call in newest.items()}
    views = []
    for (tool, _), call in newest.items():
        header = call.typed_header  # the store header stored with the call
        if header is None:
            continue
        spec = REGISTRY[tool]
        views.append(CachedView(tool=tool, title=spec.title, family=spec.family.value, seq=call.seq,
                                read_at=header.time, window=header.window,
                                arguments=dict(call.arguments), newest=last_of_tool[tool] == call.seq))
    return sorted(views, key=lambda v: (_FAMILY_ORDER[v.family], v.tool, -v.seq))

"""Cached views: the last result of each read tool, re-readable for free.

A participant's stand-in for an agent's memory of what it has already read: for
every read tool called successfully this shift, the newest such call, marked with
the simulated time and window it was read at. Re-reading one shows the stored
result; nothing is sent to the store and no operation is spent.
"""
from __future__ import annotations

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


def _read_tools() -> set[str]:
    return {name for name, spec in REGISTRY.items() if spec.kind == ToolKind.READ}


def cached_views(calls) -> list[CachedView]:
    """The newest successful call of each read tool among ``calls`` (ordered by seq),
    grouped by tool family in the workspace's order."""
    reads = _read_tools()
    newest = {}
    for call in calls:
        if call.tool in reads and not call.is_error and call.reached_core:
            newest[call.tool] = call
    views = []
    for tool, call in newest.items():
        header = call.typed_header  # the store header stored with the call
        if header is None:
            continue
        spec = REGISTRY[tool]
        views.append(CachedView(tool=tool, title=spec.title, family=spec.family.value, seq=call.seq,
                                read_at=header.time, window=header.window,
                                arguments=dict(call.arguments)))
    return sorted(views, key=lambda v: (_FAMILY_ORDER[v.family], v.tool))

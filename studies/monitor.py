"""The live monitor: one row per open attempt, read from its shift and stored calls.

A page view writes nothing: an attempt's status is read through its shift
(:attr:`studies.models.Attempt.outcome`), and the store header is the typed one stored
with the last call that reached the core (never parsed from a result's text).

Wall time runs from the shift's start; active time is wall time minus pauses.  The
window and operations come from the store header of the last call.  Deadline risk
compares the wall time left with the time the remaining windows would take at the
participant's pace so far (active seconds per window played):

* ``overdue``: the deadline has passed;
* ``high``: under an hour left, or the projection exceeds the time left;
* ``medium``: under three hours left, or the projection exceeds 75% of it;
* ``low``: otherwise; ``not started`` before the shift starts.

Each row names whom its attempt may be reassigned to (the domain's rule,
:func:`studies.attempts.reassignment_targets`: never the attempt's own participant, nor
anyone :func:`~studies.attempts.reassign` would refuse), with their labels: the action form's
"To" list is rebuilt from the rows at each update (everyone some row names), and narrowed to
the chosen shift's row.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from environment.tools import REGISTRY
from environment.tools.format import StoreHeader

from .assignment import seen_pairs
from .attempts import reassignment_candidates, reassignment_targets
from .models import OPEN_STATUSES, Attempt, Participant, Study
from .permissions import Action, require

FREE_TOOLS = tuple(name for name, spec in REGISTRY.items() if spec.free)


def deadline_risk(remaining_s: float | None, windows_left: int | None, pace_s: float | None) -> str:
    if remaining_s is None:
        return "not started"
    if remaining_s <= 0:
        return "overdue"
    projected = pace_s * windows_left if pace_s is not None and windows_left is not None else None
    if remaining_s < 3600 or (projected is not None and projected > remaining_s):
        return "high"
    if remaining_s < 3 * 3600 or (projected is not None and projected > 0.75 * remaining_s):
        return "medium"
    return "low"


@dataclass(frozen=True)
class MonitorRow:
    attempt: Attempt
    status: str
    window: int | None
    windows: int | None
    ops_spent: int
    ops_left: int | None
    wall_s: int | None
    active_s: int | None
    last_tool: str
    last_at: datetime | None
    deadline: datetime | None
    remaining_s: int | None
    risk: str
    targets: tuple[Participant, ...] = ()  # whom the attempt may be reassigned to

    @property
    def named_targets(self) -> str:
        """The targets as JSON ``[[id, label], ...]``: the page rebuilds its "To" list from them."""
        return json.dumps([[p.pk, p.label] for p in self.targets])


def _paused_seconds(shift, now) -> float:
    pauses = getattr(shift, "pauses", None)
    if pauses is None:
        return 0.0
    return sum(((p.ended_at or now) - p.started_at).total_seconds() for p in pauses.all())


def row_for(attempt: Attempt, now=None, targets: tuple[Participant, ...] = ()) -> MonitorRow:
    now = now or timezone.now()
    shift = attempt.shift
    last = shift.calls.order_by("-seq").first()
    stored = (shift.calls.exclude(store_header=None).order_by("-seq")
              .values_list("store_header", flat=True).first())
    header = StoreHeader.from_dict(stored) if stored else None
    spent = shift.calls.filter(reached_core=True).exclude(tool__in=FREE_TOOLS).count()
    wall = active = remaining = None
    pace = None
    windows_left = None
    if shift.started_at:
        wall = (now - shift.started_at).total_seconds()
        active = max(0.0, wall - _paused_seconds(shift, now))
        remaining = (shift.deadline - now).total_seconds() if shift.deadline else None
    if header is not None:
        windows_left = header.windows - header.window + 1
        if header.window > 1 and active is not None:
            pace = active / (header.window - 1)
    return MonitorRow(
        attempt=attempt, status=attempt.outcome.status_label, window=header.window if header else None,
        windows=header.windows if header else None, ops_spent=spent, ops_left=header.ops_left if header else None,
        wall_s=int(wall) if wall is not None else None, active_s=int(active) if active is not None else None,
        last_tool=last.tool if last else "", last_at=last.created_at if last else None, deadline=shift.deadline,
        remaining_s=int(remaining) if remaining is not None else None,
        risk=deadline_risk(remaining, windows_left, pace), targets=targets,
    )


def monitor_rows(actor, study: Study) -> list[MonitorRow]:
    require(actor, study, Action.MONITOR)
    now = timezone.now()
    open_attempts = (Attempt.objects.filter(study=study, status__in=OPEN_STATUSES)
                     .select_related("shift", "study", "participant", "cell").order_by("assigned_at", "pk"))
    candidates, seen = reassignment_candidates(study), seen_pairs(study)
    return [row_for(a, now, tuple(reassignment_targets(study, a, candidates, seen)))
            for a in open_attempts if a.outcome.is_open]


def reassignment_choices(rows: list[MonitorRow]) -> list[Participant]:
    """The action form's "To" list: everyone some row's attempt may be reassigned to, by label."""
    found = {p.pk: p for row in rows for p in row.targets}
    return sorted(found.values(), key=lambda p: p.label)

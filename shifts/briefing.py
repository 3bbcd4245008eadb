"""The briefing and the practice gate: who may start which shift.

A participant starts no shift before acknowledging the *current* briefing (the text
is the console's template ``console/briefing.html``; its version is
:data:`BRIEFING_VERSION`, bumped whenever the prose changes, so everyone reads the new
text once).  A scored shift also needs one ended practice shift on the practice task,
and no other scored shift of the person still running (one at a time: each has its own
wall-clock deadline, and a reference score is one person's attention on one store).  These rules are
checked here, on the server, by :func:`refusal_to_start`, which
:func:`shifts.lifecycle.begin_shift` calls; templates only mirror them.

An app above the shift domain may add a rule of its own with :func:`add_start_gate`
(the studies app does, from its ``ready()``: a study participant starts no shift,
practice included, before consenting to the study's current text).  A gate is a read:
it answers with a :class:`~shifts.errors.StartRefused` or None and changes nothing.
Gates are asked before the briefing rules, in the order they were added.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .errors import StaleBriefing, StartRefused
from .models import RUNNING, BriefingAcknowledgement, Shift
from .naming import name_of

StartGate = Callable[[Any, Shift], StartRefused | None]
_gates: list[StartGate] = []

BRIEFING_VERSION = "2026-12-02.1"  # the platform auto-ships as its carrier allows, not always on time

# The practice cell every participant gets on acknowledging the briefing (task id, seed):
# the dedicated practice task (environment/tasks/files/practice/), a short calm store
# that is no eval or train task, so a study can never assign the same cell afterwards
# (studies refuse it as a cell) and no calibration, batch or leaderboard includes it.
PRACTICE_CELL = ("practice", 1)

NEEDS_BRIEFING = "Read and acknowledge the briefing before starting a shift."
NEEDS_PRACTICE = "Finish your practice shift before starting a scored shift."
NEEDS_ONE_AT_A_TIME = ("Finish {name} before starting another scored shift: one scored shift runs at a time "
                      "(end it on its page, or it ends at its deadline).")
STALE_VERSION = ("The briefing changed since you opened it: read the current version "
                 "and acknowledge it again.")


def acknowledgement(user) -> BriefingAcknowledgement | None:
    """The user's acknowledgement of the current briefing, if any."""
    return BriefingAcknowledgement.objects.filter(user=user, version=BRIEFING_VERSION).first()


# The console's practice shifts: those on the practice task.  A coordinator's practice
# attempt on a study cell is a practice shift too, but not the briefing's short practice:
# it unlocks nothing.
ON_PRACTICE_TASK = Q(is_practice=True, task_id=PRACTICE_CELL[0])


def practice_shifts(user_or_id):
    return Shift.objects.filter(ON_PRACTICE_TASK, participant=user_or_id)


def practice_completed(user) -> bool:
    """Whether ``user`` has finished the practice: ended, or past its deadline (it ends at its
    next touch or the sweep; a page shows it as due and must not keep scored shifts locked)."""
    over = Q(status=Shift.Status.ENDED) | Q(status__in=RUNNING, deadline__lte=timezone.now())
    return practice_shifts(user).filter(over).exists()


def add_start_gate(gate: StartGate) -> None:
    """Ask ``gate(user, shift)`` too before any shift starts (adding it twice adds it once)."""
    if gate not in _gates:
        _gates.append(gate)


def refusal_to_start(user, shift: Shift) -> StartRefused | None:
    """Why ``user`` may not start ``shift`` now (with where to go about it), or None if they may."""
    for gate in _gates:
        refused = gate(user, shift)
        if refused is not None:
            return refused
    if acknowledgement(user) is None:
        return StartRefused(NEEDS_BRIEFING)
    if not shift.is_practice and not practice_completed(user):
        return StartRefused(NEEDS_PRACTICE)
    if not shift.is_practice:
        running = (Shift.objects.filter(participant=user, is_practice=False, deadline__gt=timezone.now(),
                                        status__in=RUNNING)
                   .exclude(pk=shift.pk).order_by("started_at", "pk").first())
        if running is not None:
            return StartRefused(NEEDS_ONE_AT_A_TIME.format(name=name_of(running)))
    return None


def acknowledge_briefing(user, version: str) -> BriefingAcknowledgement:
    """Record that ``user`` read briefing ``version`` (which must be the current one),
    and give them a practice shift if they have none. Acknowledging twice keeps the
    first time."""
    if version != BRIEFING_VERSION:
        raise StaleBriefing(STALE_VERSION)
    with transaction.atomic():
        ack, _created = BriefingAcknowledgement.objects.get_or_create(
            user=user, version=BRIEFING_VERSION, defaults={"acknowledged_at": timezone.now()})
        if not practice_shifts(user).exists():
            task_id, seed = PRACTICE_CELL
            Shift.objects.create(participant=user, task_id=task_id, seed=seed, is_practice=True)
    return ack

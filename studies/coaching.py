"""What a coach sees: one participant's whole record, and any attempt's shift, read only.

Both views read the shift through the ``shifts`` models (its stored calls, typed results,
pauses, timeline and grading) and write nothing, so a coordinator or reviewer can decide
on a coached retry with the participant's calls, history and end page in front of them.
The permission is the monitor's (admins, coordinators, reviewers), checked here.
"""
from __future__ import annotations

from django.utils.safestring import mark_safe

from shifts.briefing import BRIEFING_VERSION, practice_shifts
from shifts.chart import timeline_svg
from shifts.clock import time_account
from shifts.models import BriefingAcknowledgement
from shifts.results import result_of
from shifts.timeline import TimelineUnavailable, timeline_of

from .models import Attempt, AuditEvent, Participant
from .participants import current_consent
from .permissions import Action, require
from .wording import component_rows


def participant_view(actor, person: Participant) -> dict:
    require(actor, person.study, Action.MONITOR)
    attempts = list(person.attempts.select_related("shift", "cell", "study", "participant", "coach")
                    .order_by("assigned_at", "pk"))
    ack = practice = None
    if person.user_id:
        ack = BriefingAcknowledgement.objects.filter(user_id=person.user_id, version=BRIEFING_VERSION).first()
        practice = practice_shifts(person.user_id).order_by("created_at", "pk").first()
    events = list(AuditEvent.objects.filter(participant=person).select_related("actor").order_by("created_at", "id"))
    # A running shift's stored seconds are written when it ends: its clock is read live.
    active = {a.pk: time_account(a.shift).active for a in attempts if a.shift is not None}
    return {"person": person, "attempts": [(a, active.get(a.pk)) for a in attempts], "briefing": ack,
            "practice": practice,
            "current_consent": current_consent(person.study), "events": events}


def shift_view(actor, attempt: Attempt) -> dict:
    require(actor, attempt.study, Action.MONITOR)
    shift = attempt.shift
    calls = [(call, result_of(call)) for call in shift.calls.order_by("seq")]
    try:
        timeline, missing = timeline_of(shift), ""
    except TimelineUnavailable as error:
        timeline, missing = [], f"{error} The replay said: {error.reason}"
    return {"attempt": attempt, "shift": shift, "clock": time_account(shift), "calls": calls,
            "pauses": list(shift.pauses.all()),
            "timeline": timeline, "timeline_missing": missing,
            "chart": mark_safe(timeline_svg(timeline)),  # numbers and fixed labels only
            "components": component_rows(shift.score_components)}

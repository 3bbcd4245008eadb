"""Completion codes: what a participant pastes back to the recruiting platform to be paid.

A participant gets their attempt's code once the shift's score is committed
(:func:`studies.attempts.completion_code_for`), and also when the attempt ended for a
reason they did not cause: a platform fault (the attempt was reassigned or flagged),
invalidation by the study team, or an end by the study team before it started. Such
people did what was asked of them; withholding their code would bill them for the
platform's or the coordinator's decision.
"""
from __future__ import annotations

from shifts.ending import RETURNED_REASON

from .attempts import completion_code_for
from .models import Attempt, AttemptStatus

# Closed without a committed score, and not by the participant: the team or the platform ended it.
NOT_THEIR_DOING = (AttemptStatus.INVALID, AttemptStatus.ABANDONED)
# The end reason of an unstarted attempt the participant's own return closed (their doing).
RETURNED = RETURNED_REASON


def not_their_doing(attempt: Attempt) -> bool:
    if attempt.status == AttemptStatus.ABANDONED and attempt.end_reason == RETURNED:
        return attempt.platform_fault
    return attempt.platform_fault or attempt.status in NOT_THEIR_DOING


def completion_code(user, attempt: Attempt) -> str | None:
    """The code to show ``user`` (the attempt's participant) for ``attempt``, or None for now."""
    code = completion_code_for(user, attempt)  # refuses anyone but the participant
    if code is not None:
        return code
    attempt.refresh_from_db(fields=["status", "platform_fault", "end_reason"])
    return attempt.completion_code if not_their_doing(attempt) else None

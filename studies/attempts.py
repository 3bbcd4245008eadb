"""An attempt's life after assignment: retries, reassignments, deadline changes, forced
ends, invalidation and selection.

The shift domain (:mod:`shifts`) owns a shift's play and grading.  Pages read an
attempt's outcome through its shift (:attr:`studies.models.Attempt.outcome`, a join:
nothing is copied on a page view).  The outcome is recorded on the attempt by
:func:`studies.settling.settle`, a write that the coordinator's actions and the export job run: it
locks the attempt's row and records only while the attempt is still open, so a
decision made meanwhile (an invalidation, an abandonment) is never overwritten.  An
attempt graded with a calibration whose hash differs from the study's is invalid.

Every coordinator action needs a reason and writes one audit event.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from shifts.ending import end_shift, is_due
from shifts.errors import TaskUnavailable
from shifts.installed import installed
from shifts.lifecycle import move_deadline
from shifts.models import RUNNING, Shift

from . import audit
from .assignment import abandon_unstarted, create_attempt, seen_attempt, seen_pairs, seen_refusal
from .design import NO_NEW_ATTEMPT, refuse_closed
from .errors import StudyError
from .models import (
    COMPLETED_STATUSES,
    INVALIDATED,
    OPEN_STATUSES,
    Attempt,
    AttemptKind,
    AttemptStatus,
    AuditAction,
    Participant,
    SelectionRule,
    Study,
)
from .participants import barred_users, current_consent, needs_consent, scored_bar
from .permissions import Action, require
from .settling import settle, settle_study
from .wording import counted

MAX_DEADLINE_CHANGE_MINUTES = 12 * 60


def _reason(reason: str, what: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise StudyError(f"a reason is required to {what}")
    return reason


def _managed(actor, attempt: Attempt) -> Attempt:
    require(actor, attempt.study, Action.MANAGE)
    return settle(attempt)


def _end(attempt: Attempt, reason: str, done: str) -> None:
    """End the attempt's running shift (settled and graded) so that it can be ``done``; a
    shift whose task cannot be loaded cannot be, and is refused naming the task, which a
    coordinator may see."""
    try:
        end_shift(attempt.shift, reason)
    except TaskUnavailable as gone:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} cannot be {done}: its running shift's "
                         f"task {attempt.shift.task_id!r} cannot be loaded on this server, so its store cannot be "
                         f"settled or graded ({gone.reason}); install that task file again, then try again") from gone


def _not_completed(attempt: Attempt, done: str) -> StudyError:
    said = (f"attempt #{attempt.number} on cell {attempt.cell.key} is {attempt.get_status_display().lower()}; only "
            f"a completed attempt can be {done}")
    shift = attempt.shift
    if shift is not None and is_due(shift) and not installed(shift.task_id):
        said += (f" (its shift is past its deadline but cannot be ended: its task {shift.task_id!r} cannot be loaded "
                 "on this server; install that task file again)")
    return StudyError(said)


# What an attempt's row offers, by its status as its shift has it (``Attempt.outcome``): the
# actions the services below would refuse for that status are left out.
ACTION_LABELS = {"select": "select", "retry": "coached retry", "reassign": "reassign", "extend": "extend deadline",
                 "force_end": "force end", "invalidate": "invalidate"}
ACTIONS_BY_STATUS = {
    AttemptStatus.ASSIGNED: ("reassign", "force_end", "invalidate"),
    AttemptStatus.ACTIVE: ("extend", "reassign", "force_end", "invalidate"),
    AttemptStatus.PAUSED: ("extend", "reassign", "force_end", "invalidate"),
    AttemptStatus.SUBMITTED: ("select", "retry", "reassign", "invalidate"),
    AttemptStatus.TIMED_OUT: ("select", "retry", "reassign", "invalidate"),
    AttemptStatus.ABANDONED: ("reassign", "invalidate"),
    AttemptStatus.INVALID: (),
}


def _status_now(attempt: Attempt) -> AttemptStatus:
    """``attempt``'s status as its shift has it, a running shift past its deadline as timed out
    (as any action first settles it; the sweep may not have come by yet)."""
    status = AttemptStatus(attempt.outcome.status)
    shift = attempt.shift
    if status in (AttemptStatus.ACTIVE, AttemptStatus.PAUSED) and shift is not None and is_due(shift):
        return AttemptStatus.TIMED_OUT
    return status


def open_places(attempts) -> set[tuple[int, int]]:
    """The (participant, cell) pairs of ``attempts`` still open: a new attempt there is refused."""
    return {(a.participant_id, a.cell_id) for a in attempts if _status_now(a) in OPEN_STATUSES}


def row_actions(attempt: Attempt, *, can_manage: bool, can_select: bool,
                open_pairs: set[tuple[int, int]] | None = None) -> list[tuple[str, str]]:
    """The (action, label) pairs ``attempt``'s row offers someone who may manage attempts
    and/or select them: only what its status allows (a practice or bot attempt is never selected
    by hand), and no new attempt (a coached retry, a reassignment) where one would be refused
    for the study being closed or the person having left; nor a coached retry while the person
    holds an attempt on the cell open (``open_pairs``, :func:`open_places`)."""
    person, study = attempt.participant, attempt.study
    no_new = study.closed_at is not None
    gone = person.withdrawn_at is not None or person.returned_at is not None
    offered = []
    for action in ACTIONS_BY_STATUS[_status_now(attempt)]:
        if action == "select":
            allowed = can_select and not attempt.is_practice and not attempt.is_bot
        elif action == "retry":
            allowed = (can_manage and not no_new and not gone
                       and (person.pk, attempt.cell_id) not in (open_pairs or set()))
        elif action == "reassign":
            allowed = can_manage and not no_new
        else:
            allowed = can_manage
        if allowed:
            offered.append((action, ACTION_LABELS[action]))
    return offered


def grant_coached_retry(actor, attempt: Attempt, note: str) -> Attempt:
    """A new attempt on the same cell for the same person, coached by ``actor``."""
    attempt = _managed(actor, attempt)
    note = _reason(note, "grant a coached retry")
    if not attempt.is_completed:
        raise _not_completed(attempt, "retried")
    with transaction.atomic():
        retry = create_attempt(actor, attempt.participant, attempt.cell, kind=AttemptKind.COACHED_RETRY,
                               replaces=attempt, coach=actor, note=note)
        audit.record(attempt.study, actor, AuditAction.RETRY, reason=note, attempt=retry, replaces=attempt.pk)
    return retry


def reassign_refusal(attempt: Attempt, to: Participant, seen: set[tuple[int, int]] | None = None, *,
                     standing_checked: bool = False) -> str | None:
    """Why ``attempt`` cannot be reassigned to ``to``, or None when it can: the one rule
    :func:`reassign` enforces and the study's pages offer targets by.  The target is
    another participant of the study, still taking part (not withdrawn, not returned),
    with an account (invitation accepted); a person's attempt never goes to a rehearsal
    bot (a bot's, in a rehearsal, may); the target has not seen the cell yet
    (:data:`studies.assignment.SEEN`; ``seen``, from :func:`~studies.assignment.seen_pairs`,
    saves the query for each target on a page that lists many); and, as
    :func:`~studies.assignment.create_attempt` asks, has accepted the current consent text
    and holds no team role or staff powers (``standing_checked``: the
    page's candidates were read so, :func:`reassignment_candidates`).  Checked before the
    attempt's shift is ended, so a refused target leaves the shift as it was."""
    if to.study_id != attempt.study_id:
        return f"{to.label} is not in study {attempt.study.name!r}; reassign to one of its participants"
    if to.pk == attempt.participant_id:
        return "a reassignment goes to another participant; use a coached retry for the same person"
    if to.is_bot and not attempt.is_bot:
        return f"{to.label} is a rehearsal bot; reassign a person's attempt to a person"
    if to.withdrawn_at is not None or to.returned_at is not None:
        left = "withdrawn from" if to.withdrawn_at is not None else "returned"
        return f"{to.label} has {left} the study; reassign to someone still taking part"
    if to.user_id is None:
        return f"{to.label} has no account yet (invitation not accepted); reassign to someone who has one"
    if seen is None or (to.pk, attempt.cell_id) in seen:
        earlier = seen_attempt(to, attempt.cell)
        if earlier is not None:
            return seen_refusal(to, attempt.cell, earlier)
    if not standing_checked:  # a page's candidates were read as standing (reassignment_candidates)
        if needs_consent(to):
            return f"{to.label} has not accepted the current consent text; reassign to someone who has"
        bar = scored_bar(to)
        if bar:  # a reassignment is made as a scored attempt (create_attempt), whatever it replaces
            return f"{to.label}'s account {bar}: it takes no scored attempt; reassign to someone else"
    return None


def reassignment_candidates(study: Study) -> list[Participant]:
    """The study's participants who may take some reassigned attempt (five queries; the
    pages narrow it per attempt with :func:`reassign_refusal`): still taking part, with an
    account, and taking a scored attempt as :func:`~studies.assignment.create_attempt` would
    give one: the current consent text accepted (a bot is not asked), no staff powers or team
    role on the account, now or before (:func:`~studies.participants.barred_users`)."""
    found = list(study.participants.filter(withdrawn_at=None, returned_at=None).exclude(user=None)
                 .select_related("user"))
    current = current_consent(study)
    barred = barred_users([p.user_id for p in found])
    return [p for p in found
            if (p.is_bot or current is None or p.consent_version_id == current.pk) and p.user_id not in barred]


def reassignment_targets(study: Study, attempt: Attempt, candidates: list[Participant] | None = None,
                         seen: set[tuple[int, int]] | None = None) -> list[Participant]:
    """Whom the study's pages offer as ``attempt``'s reassignment target: those :func:`reassign`
    accepts, so nobody once the study is closed.  A page listing many attempts reads
    ``candidates`` (:func:`reassignment_candidates`) and ``seen``
    (:func:`~studies.assignment.seen_pairs`) once."""
    if study.closed_at is not None:
        return []
    if candidates is None:
        candidates = reassignment_candidates(study)
    if seen is None:
        seen = seen_pairs(study)
    # A pair in ``seen`` is refused: left out here without the query that would only word why.
    return [p for p in candidates if (p.pk, attempt.cell_id) not in seen
            and reassign_refusal(attempt, p, seen, standing_checked=True) is None]


def reassign(actor, attempt: Attempt, to: Participant, reason: str) -> Attempt:
    """After a platform fault: flag the attempt as infrastructure's fault and give the cell to someone else.

    The target must pass :func:`reassign_refusal` (whose message the StudyError carries)."""
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "reassign an attempt")
    refuse_closed(attempt.study, NO_NEW_ATTEMPT)  # before its shift is ended for the new attempt
    refusal = reassign_refusal(attempt, to)
    if refusal is not None:
        raise StudyError(refusal)
    if attempt.status == AttemptStatus.INVALID:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is invalid; it cannot be reassigned")
    with transaction.atomic():
        if attempt.shift.status in RUNNING:
            _end(attempt, f"platform fault: {reason}", "reassigned")
            attempt = settle(attempt)
            attempt.status = AttemptStatus.ABANDONED
            attempt.is_selected = False
        elif attempt.shift.status == Shift.Status.ASSIGNED:
            abandon_unstarted(attempt, f"platform fault: {reason}")
        attempt.platform_fault = True
        attempt.save()
        new = create_attempt(actor, to, attempt.cell, kind=AttemptKind.REASSIGNMENT, replaces=attempt)
        audit.record(attempt.study, actor, AuditAction.REASSIGNED, reason=reason, attempt=new,
                     replaces=attempt.pk, from_participant=attempt.participant.label)
    return new


def extend_deadline(actor, attempt: Attempt, minutes: int, reason: str) -> Attempt:
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "change a deadline")
    if minutes == 0 or abs(minutes) > MAX_DEADLINE_CHANGE_MINUTES:
        raise StudyError(f"a deadline change is between 1 and {MAX_DEADLINE_CHANGE_MINUTES} minutes "
                         f"either way, not {minutes}")
    shift = attempt.shift
    old = shift.deadline
    if shift.status not in RUNNING or old is None:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is not running; "
                         "only a running shift has a deadline to change")
    new = old + timedelta(minutes=minutes)
    if new <= timezone.now():
        raise StudyError(f"moving the deadline by {counted(minutes, 'minute')} would put it at {when(new)}, which has "
                         "already passed, and the shift would end as timed out; choose fewer minutes, or use "
                         "force end to end the shift")
    with transaction.atomic():
        attempt.shift = move_deadline(shift, minutes)
        audit.record(attempt.study, actor, AuditAction.DEADLINE_CHANGED, reason=reason, attempt=attempt,
                     old=old.isoformat(), new=attempt.shift.deadline.isoformat() if attempt.shift.deadline else "",
                     minutes=minutes)
    return attempt


def when(moment: datetime) -> str:
    """A moment as the pages say it: local date and time to the minute, with the zone."""
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")


def force_end(actor, attempt: Attempt, reason: str) -> Attempt:
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "end a shift")
    if not attempt.is_open:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is already "
                         f"{attempt.get_status_display().lower()}")
    if attempt.shift.status in RUNNING:
        _end(attempt, f"ended by the coordinator: {reason}", "ended")
        attempt = settle(attempt)
    else:
        abandon_unstarted(attempt, f"ended by the coordinator before it started: {reason}")
    audit.record(attempt.study, actor, AuditAction.FORCE_ENDED, reason=reason, attempt=attempt)
    return attempt


def invalidate(actor, attempt: Attempt, reason: str) -> Attempt:
    attempt = _managed(actor, attempt)
    reason = _reason(reason, "invalidate an attempt")
    if attempt.status == AttemptStatus.INVALID:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} is already invalid")
    with transaction.atomic():
        if attempt.shift.status in RUNNING:
            _end(attempt, INVALIDATED + reason, "invalidated")
            attempt = settle(attempt)
        elif attempt.shift.status == Shift.Status.ASSIGNED:
            abandon_unstarted(attempt, INVALIDATED + reason)
        attempt.status = AttemptStatus.INVALID
        attempt.end_reason = INVALIDATED + reason
        attempt.is_selected = False
        attempt.save()
        audit.record(attempt.study, actor, AuditAction.INVALIDATED, reason=reason, attempt=attempt)
    return attempt


def select(actor, attempt: Attempt, reason: str = "", rule: str = SelectionRule.MANUAL, *,
           include_bots: bool = False) -> Attempt:
    """Make ``attempt`` its cell's selected attempt (the previous selection, if any, is dropped)."""
    require(actor, attempt.study, Action.SELECT)
    attempt = settle(attempt)
    if rule == SelectionRule.MANUAL:
        reason = _reason(reason, "select an attempt by hand")
    if not attempt.is_completed:
        raise _not_completed(attempt, "selected")
    if attempt.is_practice or (attempt.is_bot and not include_bots):
        raise StudyError(f"a {'practice' if attempt.is_practice else 'bot'} attempt cannot be selected: "
                         "selected attempts are the human reference")
    with transaction.atomic():
        previous = Attempt.objects.filter(cell=attempt.cell, is_selected=True).exclude(pk=attempt.pk).first()
        if previous is not None:
            previous.is_selected = False
            previous.save(update_fields=["is_selected"])
        attempt.is_selected = True
        attempt.selection_rule = rule
        attempt.selected_by = actor
        attempt.selected_at = timezone.now()
        attempt.save(update_fields=["is_selected", "selection_rule", "selected_by", "selected_at"])
        audit.record(attempt.study, actor, AuditAction.SELECTED, reason=reason, attempt=attempt, rule=rule,
                     previous=previous.pk if previous else None)
    return attempt


def candidates(cell, include_bots: bool = False) -> list[Attempt]:
    """A cell's attempts that may be selected, earliest completion first (bots only in a rehearsal)."""
    bots = {} if include_bots else {"is_bot": False}
    return list(cell.attempts.filter(status__in=COMPLETED_STATUSES, is_practice=False, **bots)
                .order_by("completed_at", "number"))


def select_by_rule(actor, study: Study, rule: str, reason: str = "", *, include_bots: bool = False) -> list[Attempt]:
    """Select one attempt in every cell that has none yet, by ``rule`` (latest or earliest completed).

    The latest rule skips attempts flagged as a platform fault when the cell has another.
    """
    require(actor, study, Action.SELECT)
    if rule not in (SelectionRule.LATEST, SelectionRule.EARLIEST):
        raise StudyError(f"unknown selection rule {rule!r}; choose latest or earliest")
    settle_study(study)
    chosen = []
    for cell in study.cells.all():
        if cell.attempts.filter(is_selected=True).exists():
            continue
        pool = candidates(cell, include_bots)
        clean = [a for a in pool if not a.platform_fault] or pool
        if clean:
            pick = clean[-1] if rule == SelectionRule.LATEST else clean[0]
            chosen.append(select(actor, pick, reason or f"rule: {rule}", rule=rule, include_bots=include_bots))
    return chosen


def completion_code_for(user, attempt: Attempt) -> str | None:
    """The participant's completion code, once the shift's score is committed (else None)."""
    if attempt.participant.user_id != user.pk:
        raise StudyError("only the participant can see their completion code")
    committed = Shift.objects.filter(pk=attempt.shift_id, status=Shift.Status.ENDED,
                                     score_composite__isnull=False).exists()
    return attempt.completion_code if committed and attempt.outcome.is_completed else None

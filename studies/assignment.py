"""Assigning cells to participants, by hand or by the study's policy.

Each attempt gets a fresh console shift (``shifts.lifecycle.assign_shift``).  Two
guards keep one person from holding two open attempts on one cell: a service check
with a clear message, and a partial unique constraint in the database for a race
that slips past it.  A cell's quota counts its first attempts that are still open or
completed (not invalid, abandoned or practice); coached retries and reassignments
replace an attempt and do not count against it.

A scored first attempt, and a reassignment, must be the person's first sight of the
cell: one who has played it (any attempt on it whose shift started, a practice one
included) is refused it, and the policies never propose it.  Playing a cell again is
what a coached retry is for.

Concurrency: :func:`create_attempt` locks the cell's row, then the participant's,
before it checks the quota and the open attempts (``SELECT ... FOR UPDATE`` on
PostgreSQL; SQLite's immediate transactions serialise writers), so two requests at
once cannot both take a cell's last place, and the one that loses is told the truth
(the cell is full, or the person already holds an open attempt there).  The cell's row is
read with its study's (both locked on PostgreSQL), so a study closed meanwhile
(:func:`studies.design.close_study`, which locks the study's row) creates no attempt.

Policies (:func:`assign_next`) choose only among people who can start a scored shift
now: not bots, invitation accepted, current consent given (a bot is never asked: a script
gives no consent), briefing acknowledged and practice shift finished, no open attempt, and
an account without staff powers that holds no team role and has held none (:func:`scored_bar`).  Attempts whose shift has ended are settled
first (:func:`studies.settling.settle_ended`): the console ends a shift without touching
its attempt, and a finished person is not busy.
"""
from __future__ import annotations

import secrets

from django.db import transaction
from django.db.models import Avg, Count, Max, Q

from environment.tasks.loader import PRACTICE
from shifts.briefing import acknowledgement, practice_completed
from shifts.errors import TaskUnavailable
from shifts.installed import installed, task_of
from shifts.lifecycle import assign_shift, close_unstarted
from shifts.models import Shift

from . import audit
from .build import build_id
from .design import NO_NEW_ATTEMPT, ON_HOLD_CELLS, PRACTICE_REFUSAL, check_calibration, refuse_closed, stale_calibration
from .errors import StudyClosed, StudyError
from .models import (
    COMPLETED_STATUSES,
    OPEN_STATUSES,
    Attempt,
    AttemptKind,
    AttemptStatus,
    AuditAction,
    Cell,
    Participant,
    Study,
)
from .notifications import schedule_assignment_notice
from .participants import barred_users, needs_consent, scored_bar
from .permissions import Action, require
from .policies import POLICIES, CellLoad, Person, choose
from .settling import settle_ended
from .wording import counted, plural

QUOTA_STATUSES = (*OPEN_STATUSES, *COMPLETED_STATUSES)


def _open_attempt(participant: Participant, cell: Cell) -> Attempt | None:
    return Attempt.objects.filter(participant=participant, cell=cell, status__in=OPEN_STATUSES).first()


# Attempts by which a person has seen a cell or may yet: the shift started, or it is open.
SEEN = Q(shift__started_at__isnull=False) | Q(status__in=OPEN_STATUSES)


def seen_attempt(participant: Participant, cell: Cell) -> Attempt | None:
    """The earliest attempt by which ``participant`` has seen ``cell`` or holds it open, or None."""
    return (Attempt.objects.filter(SEEN, participant=participant, cell=cell).select_related("shift")
            .order_by("number").first())


def seen_pairs(study: Study) -> set[tuple[int, int]]:
    """Every (participant id, cell id) in ``study`` whose person has seen or holds the cell, in one query."""
    return set(Attempt.objects.filter(SEEN, study=study).values_list("participant_id", "cell_id"))


def _open_refusal(participant: Participant, cell: Cell, existing: Attempt) -> str:
    return (f"participant {participant.label} already has an open attempt on cell {cell.key} "
            f"(attempt #{existing.number}, {existing.get_status_display().lower()})")


def seen_refusal(participant: Participant, cell: Cell, seen: Attempt) -> str:
    if seen.shift.started_at is None:
        return _open_refusal(participant, cell, seen)
    practice = ", a practice attempt" if seen.is_practice else ""
    return (f"participant {participant.label} has already seen cell {cell.key} (attempt #{seen.number}{practice}); "
            "a scored first attempt or a reassignment must be their first sight of it: choose another cell "
            "or person, or grant a coached retry")


def _in_quota(cell: Cell):
    return cell.attempts.filter(kind=AttemptKind.FIRST, is_practice=False, status__in=QUOTA_STATUSES)


def quota_used(cell: Cell) -> int:
    return _in_quota(cell).count()


def _full(cell: Cell) -> str:
    if cell.quota == 0:
        return f"cell {cell.key} is on hold (quota 0): raise its quota on the study page to assign it again"
    bots = _in_quota(cell).filter(is_bot=True).count()
    held = f", {bots} of them by rehearsal bots" if bots else ""
    return (f"cell {cell.key} is full: {quota_used(cell)} of {cell.quota} places taken{held}; raise its quota on "
            "the study page to assign it again")


def create_attempt(actor, participant: Participant, cell: Cell, *, kind: str = AttemptKind.FIRST,
                   practice: bool = False, replaces: Attempt | None = None, coach=None, note: str = "") -> Attempt:
    """The attempt and its console shift; callers check permissions and write the audit event."""
    study = cell.study
    refuse_closed(study, NO_NEW_ATTEMPT)
    if participant.study_id != study.pk:
        raise StudyError(f"participant {participant.label} is not in study {study.name!r}")
    if participant.user_id is None:
        raise StudyError(f"participant {participant.label} has not accepted an invitation yet (no account)")
    try:
        task = task_of(cell.task_id)
    except TaskUnavailable as gone:
        raise StudyError(f"cell {cell.key} cannot be assigned: its task cannot be loaded on this server ({gone.reason}); "
                         "install that task file again") from gone
    if task.split == PRACTICE:
        raise StudyError(PRACTICE_REFUSAL.format(task=cell.task_id))
    if needs_consent(participant):
        raise StudyError(f"participant {participant.label} has not accepted the current consent text")
    if not practice:
        bar = scored_bar(participant)
        if bar:
            raise StudyError(f"participant {participant.label}'s account {bar}: it takes no scored attempt (a "
                             "practice one is allowed)")
    check_calibration(study)  # a study whose calibration file changed takes no new work
    settle_ended(Attempt.objects.filter(participant=participant, cell=cell))
    with transaction.atomic():
        # Lock order: the cell, then the participant (every caller takes them this way).
        cell = Cell.objects.select_for_update().select_related("study").get(pk=cell.pk)
        refuse_closed(cell.study, NO_NEW_ATTEMPT)  # as it stands now, not as the caller read it
        locked = Participant.objects.select_for_update().filter(pk=participant.pk).first()
        if locked is not None and (locked.withdrawn_at is not None or locked.returned_at is not None):
            left = (f"withdrew on {locked.withdrawn_at:%Y-%m-%d}" if locked.withdrawn_at is not None
                    else f"returned the study on {locked.returned_at:%Y-%m-%d}")
            raise StudyError(f"participant {participant.label} {left}; no cell is assigned to them")
        existing = _open_attempt(participant, cell)
        if existing is not None:
            raise StudyError(_open_refusal(participant, cell, existing))
        if kind != AttemptKind.COACHED_RETRY and not practice:
            seen = seen_attempt(participant, cell)
            if seen is not None:
                raise StudyError(seen_refusal(participant, cell, seen))
        if kind == AttemptKind.FIRST and not practice and quota_used(cell) >= cell.quota:
            raise StudyError(_full(cell))
        number = (cell.attempts.aggregate(m=Max("number"))["m"] or 0) + 1
        shift = assign_shift(participant.user, cell.task_id, cell.seed, practice=practice)
        attempt = Attempt.objects.create(
            study=study, cell=cell, participant=participant, shift=shift, number=number, kind=kind,
            replaces=replaces, coach=coach, coach_note=note, is_practice=practice,
            is_bot=participant.is_bot, completion_code=secrets.token_hex(5).upper(), assigned_by=actor,
            build_id=build_id(),
        )
        schedule_assignment_notice(attempt)
        return attempt


# What a participant who came through the study link reads when it is closed (the coordinator's
# refusal names the study page, which is not theirs).
CLOSED_TO_YOU = ("this study is closed and gives no new shifts; a shift you already have can still be "
                 "finished, then use Finish to return to Prolific")


def can_start(participant: Participant, *, include_bots: bool = False) -> bool:
    """Whether a policy may give this person a scored cell now (see the module docstring).

    Bots only in a rehearsal that asks for them (``include_bots``); they acknowledge the
    briefing and play their practice shift themselves when they play."""
    if participant.user_id is None or needs_consent(participant):
        return False
    if participant.is_bot:
        return include_bots
    return acknowledgement(participant.user) is not None and practice_completed(participant.user)


def assign(actor, participant: Participant, cell: Cell, *, practice: bool = False, reason: str = "") -> Attempt:
    """Assign a cell to a participant by hand."""
    require(actor, cell.study, Action.MANAGE)
    with transaction.atomic():
        attempt = create_attempt(actor, participant, cell, practice=practice)
        audit.record(cell.study, actor, AuditAction.ASSIGNED, reason=reason, attempt=attempt,
                     rule="manual", practice=practice or None)
    return attempt


def _people(study: Study, participants) -> list[Person]:
    stats = (Participant.objects.filter(pk__in=[p.pk for p in participants])
             .annotate(n=Count("attempts", filter=Q(attempts__is_practice=False)),
                       mean=Avg("attempts__composite", filter=Q(attempts__status__in=COMPLETED_STATUSES,
                                                                attempts__is_practice=False))))
    return [Person(str(p.pk), p.n, float(p.mean) if p.mean is not None else None) for p in stats]


def assign_next(actor, study: Study, participants=None, policy: str | None = None, *,
                include_bots: bool = False, reason: str = "", rehearsal: str | None = None) -> Attempt | None:
    """Assign one cell by the study's policy (or ``policy``); None when nothing can be assigned.

    Only people who can start a scored shift now are considered; bots only with
    ``include_bots`` (a rehearsal with scripted participants, whose id ``rehearsal``
    the audit event records)."""
    require(actor, study, Action.MANAGE)
    return _assign_by_policy(actor, study, participants, policy, include_bots=include_bots, reason=reason,
                             rehearsal=rehearsal)


def assign_self(participant: Participant) -> Attempt | None:
    """A participant who came through the study link asks for their next cell: the
    study's policy chooses among the cells for this one person (audited, no actor).  One who
    still has a scored shift to play (not started, running or paused) gets that one: asking
    again (a second click, the back button) makes no second attempt."""
    if not participant.entered_via_link:
        raise StudyError("cells are assigned by the coordinator in this study; wait for their notice")
    if participant.withdrawn_at is not None or participant.returned_at is not None:
        raise StudyError("you have left this study")
    unfinished = (participant.attempts.filter(is_practice=False).exclude(shift__status=Shift.Status.ENDED)
                  .select_related("cell").order_by("pk").first())
    if unfinished is not None:
        return unfinished
    if participant.study.closed_at is not None:
        raise StudyError(CLOSED_TO_YOU)
    if not can_start(participant):
        raise StudyError("read the briefing and finish your practice shift first")
    if stale_calibration(participant.study) is not None:
        raise StudyError(ON_HOLD_CELLS)
    try:
        return _assign_by_policy(None, participant.study, [participant], None, include_bots=False,
                                 via="entry link")
    except StudyClosed:  # closed since the check above: said as a participant is told it
        raise StudyError(CLOSED_TO_YOU) from None


def _assign_by_policy(actor, study: Study, participants, policy: str | None, *, include_bots: bool,
                      via: str | None = None, reason: str = "", rehearsal: str | None = None) -> Attempt | None:
    refuse_closed(study, NO_NEW_ATTEMPT)  # refused with the reason, not "nothing to assign"
    check_calibration(study)
    policy = policy or study.policy
    if policy not in POLICIES:
        raise StudyError(f"unknown assignment policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if participants is None:
        participants = study.participants.exclude(user=None).filter(withdrawn_at=None, returned_at=None)
    settle_ended(Attempt.objects.filter(study=study, participant__in=[p.pk for p in participants]))
    busy = set(Attempt.objects.filter(study=study, status__in=OPEN_STATUSES).values_list("participant_id", flat=True))
    barred = barred_users([p.user_id for p in participants])
    available = [p for p in participants
                 if p.pk not in busy and p.user_id not in barred and can_start(p, include_bots=include_bots)]
    cells = [cell for cell in study.cells.all() if installed(cell.task_id)]  # the others are named on the study page
    loads = [CellLoad(str(c.pk), quota_used(c), c.quota) for c in cells]
    tried = {(str(p), str(c)) for p, c in Attempt.objects.filter(Q(is_practice=False) | SEEN, study=study)
             .values_list("participant_id", "cell_id")}
    seed = f"{study.random_seed}:{Attempt.objects.filter(study=study).count()}"
    pair = choose(policy, _people(study, available), loads, tried, seed)
    if pair is None:
        return None
    participant = next(p for p in available if str(p.pk) == pair[0])
    cell = next(c for c in cells if str(c.pk) == pair[1])
    with transaction.atomic():
        attempt = create_attempt(actor, participant, cell)
        audit.record(study, actor, AuditAction.ASSIGNED, reason=reason, attempt=attempt, rule=policy, via=via,
                     rehearsal=rehearsal)
    return attempt


def why_nothing_assigned(study: Study) -> str:
    """Why :func:`assign_next` found nobody for any cell, in one sentence for the coordinator:
    how many of the study's people could not take a scored cell now and why (each counted once,
    under the first of these reasons that holds), then what kept the rest out: no cell with room,
    or none they have not had a scored attempt on (a policy gives nobody a cell twice)."""
    people = list(study.participants.select_related("user"))
    busy = set(Attempt.objects.filter(study=study, status__in=OPEN_STATUSES).values_list("participant_id", flat=True))
    barred = barred_users([p.user_id for p in people])
    reasons = {"left": 0, "bot": 0, "account": 0, "consent": 0, "team": 0, "ready": 0, "busy": 0}
    ready: list[Participant] = []
    for person in people:
        if person.withdrawn_at is not None or person.returned_at is not None:
            reasons["left"] += 1
        elif person.is_bot:
            reasons["bot"] += 1
        elif person.user_id is None:
            reasons["account"] += 1
        elif needs_consent(person):
            reasons["consent"] += 1
        elif person.user_id in barred:
            reasons["team"] += 1
        elif not can_start(person):
            reasons["ready"] += 1
        elif person.pk in busy:
            reasons["busy"] += 1
        else:
            ready.append(person)
    words = {
        "left": ("has left the study", "have left the study"),
        "bot": ("is a rehearsal bot (a rehearsal assigns it)", "are rehearsal bots (a rehearsal assigns them)"),
        "account": ("has no account yet (invitation not accepted)", "have no account yet (invitation not accepted)"),
        "consent": ("has not accepted the current consent text", "have not accepted the current consent text"),
        "team": ("holds staff powers, or holds or held a team role", "hold staff powers, or hold or held a team role"),
        "ready": ("has not read the briefing or finished the practice shift",
                  "have not read the briefing or finished the practice shift"),
        "busy": ("has a shift open", "have a shift open"),
    }
    if not people:
        return "Nothing to assign: the study has no participants yet; add or invite some in the Participants panel."
    said = [f"{n} {words[key][0] if n == 1 else words[key][1]}" for key, n in reasons.items() if n]
    if said:
        head = f"Nothing to assign. Of {counted(len(people), 'participant')}, {', '.join(said)}; "
        rest = counted(len(ready), "other participant")
    else:
        head, rest = "Nothing to assign: ", counted(len(ready), "participant")
    if not ready:
        return f"{head}nobody is left who can take a scored cell now."
    cells = [c for c in study.cells.all() if installed(c.task_id)]
    if not cells:
        return (f"{head}{rest} could take one, but no cell's task can be loaded on this server: install the task "
                "files the study page names.")
    room = [c for c in cells if quota_used(c) < c.quota]
    if not room:
        held = sum(1 for c in cells if c.quota == 0)
        on_hold = f" or on hold (quota 0: {counted(held, 'cell')})" if held else ""
        return f"{head}{rest} could take one, but every cell is full{on_hold}: raise a quota on the study page."
    return (f"{head}{rest} {plural(len(ready), 'has', 'have')} already had a scored attempt on every cell with room "
            f"left ({counted(len(room), 'cell')}), and a policy gives nobody a cell twice: assign one by hand, grant "
            "a coached retry, or add participants.")


def abandon_unstarted(attempt: Attempt, reason: str) -> None:
    """Close an attempt whose shift never started (its console shift is closed unplayed)."""
    close_unstarted(attempt.shift_id, reason)
    attempt.status = AttemptStatus.ABANDONED
    attempt.end_reason = reason
    attempt.save(update_fields=["status", "end_reason"])


def adopt_practice_shift(actor, participant: Participant, cell: Cell, shift, reason: str = "") -> Attempt:
    """Link a practice shift the console already gave a participant to the study, as a practice attempt.

    Nothing new is created in the console: the attempt wraps the existing shift.
    """
    require(actor, cell.study, Action.MANAGE)
    if participant.study_id != cell.study_id:
        raise StudyError(f"participant {participant.label} is not in study {cell.study.name!r}")
    if not shift.is_practice or shift.participant_id != participant.user_id:
        raise StudyError(f"shift {shift.pk} is not a practice shift of participant {participant.label}")
    if (shift.task_id, shift.seed) != (cell.task_id, cell.seed):
        raise StudyError(f"shift {shift.pk} plays {shift.task_id}/{shift.seed}, not cell {cell.key}")
    if Attempt.objects.filter(shift=shift).exists():
        raise StudyError(f"shift {shift.pk} already belongs to an attempt")
    with transaction.atomic():
        cell = Cell.objects.select_for_update().select_related("study").get(pk=cell.pk)  # as create_attempt does
        refuse_closed(cell.study, NO_NEW_ATTEMPT)
        number = (cell.attempts.aggregate(m=Max("number"))["m"] or 0) + 1
        attempt = Attempt.objects.create(
            study=cell.study, cell=cell, participant=participant, shift=shift, number=number,
            is_practice=True, is_bot=participant.is_bot, completion_code=secrets.token_hex(5).upper(),
            assigned_by=actor)
        audit.record(cell.study, actor, AuditAction.ASSIGNED, reason=reason, attempt=attempt,
                     rule="adopted practice shift", practice=True)
    return attempt

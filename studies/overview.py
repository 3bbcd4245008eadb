"""What the coordinator's study page shows, gathered in one read."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db.models import Count, Q

from shifts.models import Shift
from shifts.naming import names_of

from .assignment import QUOTA_STATUSES, seen_pairs
from .attempts import open_places, reassignment_candidates, reassignment_targets, row_actions
from .design import missing_task_cells, stale_calibration
from .models import Attempt, AttemptKind, AuditEvent, Invitation, Role, Study, StudyMembership
from .permissions import Action, can, require, roles_of
from .rehearsal import last_outcome


@dataclass(frozen=True)
class Overview:
    study: Study
    roles: set
    can_manage: bool
    can_select: bool
    can_export: bool
    cells: list
    participants: list
    attempts: list
    invitations: list
    selected: int
    rehearsal: AuditEvent | None  # how the latest rehearsal ended, if one did
    stale_calibration: str | None  # why the study takes no new work since its calibration file changed
    missing_tasks: list  # cells whose task this server no longer has
    team: list  # the team's memberships (every role but participant)
    open_shifts: int  # attempts assigned or running, which closing the study leaves to be finished


IN_QUOTA = Q(attempts__kind=AttemptKind.FIRST, attempts__is_practice=False, attempts__status__in=QUOTA_STATUSES)


def study_overview(actor, study: Study) -> Overview:
    require(actor, study, Action.VIEW)
    cells = list(study.cells.annotate(
        n_attempts=Count("attempts", filter=Q(attempts__is_practice=False)),
        # the places taken under the quota, as assignment counts them (quota_used), and how many by bots
        n_places=Count("attempts", filter=IN_QUOTA),
        n_bot_places=Count("attempts", filter=IN_QUOTA & Q(attempts__is_bot=True)),
        # a withdrawn person's selected attempt leaves the figures, as on the leaderboard
        n_selected=Count("attempts", filter=Q(attempts__is_selected=True,
                                              attempts__participant__withdrawn_at__isnull=True)),
    ))
    participants = list(study.participants.annotate(n_attempts=Count("attempts")).select_related("consent_version"))
    attempts = list(Attempt.objects.filter(study=study).select_related("cell", "participant", "shift", "study", "coach")
                    .order_by("cell__task_id", "cell__seed", "number"))
    completed = Counter(a.cell_id for a in attempts if not a.is_practice and a.outcome.is_completed)
    for cell in cells:
        cell.n_completed = completed[cell.pk]  # type: ignore[attr-defined]  # read through each attempt's shift
    invitations = list(Invitation.objects.filter(participant__study=study).select_related("participant"))
    candidates, seen = reassignment_candidates(study), seen_pairs(study)
    can_manage, can_select = can(actor, study, Action.MANAGE), can(actor, study, Action.SELECT)
    open_pairs = open_places(attempts)
    for attempt in attempts:  # what each attempt row offers, and whom a reassignment (the domain's rules)
        attempt.actions = row_actions(attempt, can_manage=can_manage, can_select=can_select,  # type: ignore[attr-defined]
                                      open_pairs=open_pairs)
        attempt.offers = {action for action, _label in attempt.actions}  # type: ignore[attr-defined]
        attempt.reassign_targets = reassignment_targets(  # type: ignore[attr-defined]
            study, attempt, candidates, seen) if "reassign" in attempt.offers else []  # type: ignore[attr-defined]
    return Overview(study=study, roles=roles_of(actor, study), can_manage=can_manage,
                    can_select=can_select, can_export=can(actor, study, Action.EXPORT),
                    cells=cells, participants=participants, attempts=attempts, invitations=invitations,
                    selected=sum(1 for a in attempts if a.is_selected and a.participant.withdrawn_at is None), rehearsal=last_outcome(study),
                    stale_calibration=stale_calibration(study), missing_tasks=missing_task_cells(study),
                    team=list(StudyMembership.objects.filter(study=study).exclude(role=Role.PARTICIPANT)
                              .select_related("user").order_by("user__username", "role")),
                    open_shifts=sum(1 for a in attempts if a.outcome.is_open))  # as design.open_shifts counts


def audit_log(actor, study: Study) -> list[AuditEvent]:
    require(actor, study, Action.VIEW)
    return list(AuditEvent.objects.filter(study=study).select_related("actor", "participant", "cell", "attempt")
                .order_by("-created_at", "-id"))


@dataclass(frozen=True)
class MyStudy:
    participant: object
    consent: object
    needs_consent: bool
    attempts: list  # (attempt, completion code or None, the shift's name as the console gives it)


def my_study(user, study_id: int | None = None) -> MyStudy | None:
    """A participant's own page (in study ``study_id``, else their first): their consent
    state and the codes of committed shifts."""
    from .completion import completion_code
    from .models import Participant
    from .participants import current_consent, needs_consent

    mine = Participant.objects.filter(user=user).select_related("study")
    participant = (mine.filter(study_id=study_id) if study_id is not None else mine).first()
    if participant is None:
        return None
    names = names_of(Shift.objects.filter(participant=user).only("pk", "created_at", "is_practice"))
    own = [(a, completion_code(user, a), names[a.shift_id])
           for a in participant.attempts.select_related("shift", "cell", "study", "participant")]
    asked = needs_consent(participant) and participant.withdrawn_at is None  # nothing is asked of someone who withdrew
    return MyStudy(participant, current_consent(participant.study), asked, own)

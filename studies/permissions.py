"""Who may do what, per study.

Roles are held per study (``StudyMembership``), so a coordinator of study A has no
power over study B.  A superuser counts as an admin of every study.  Every service
function calls :func:`require` before it changes or reveals anything; views map the
resulting :class:`~studies.errors.StudyPermissionDenied` to a 403.
"""
from __future__ import annotations

from enum import StrEnum

from .errors import StudyPermissionDenied
from .models import Role, Study, StudyMembership


class Action(StrEnum):
    VIEW = "view the study"
    MONITOR = "monitor running shifts"
    MANAGE = "manage participants and attempts"
    SELECT = "select attempts"
    EXPORT = "export data"
    ADMINISTER = "administer the study"


ALLOWED: dict[Action, frozenset[str]] = {
    Action.VIEW: frozenset({Role.ADMIN, Role.COORDINATOR, Role.REVIEWER, Role.RESEARCHER}),
    Action.MONITOR: frozenset({Role.ADMIN, Role.COORDINATOR, Role.REVIEWER}),
    Action.MANAGE: frozenset({Role.ADMIN, Role.COORDINATOR}),
    Action.SELECT: frozenset({Role.ADMIN, Role.COORDINATOR, Role.REVIEWER}),
    Action.EXPORT: frozenset({Role.ADMIN, Role.COORDINATOR, Role.RESEARCHER}),
    Action.ADMINISTER: frozenset({Role.ADMIN}),
}


def roles_of(user, study: Study) -> set[str]:
    if user is None or not user.is_authenticated:
        return set()
    roles = set(StudyMembership.objects.filter(study=study, user=user).values_list("role", flat=True))
    if user.is_superuser:
        roles.add(Role.ADMIN)
    return roles


def can(user, study: Study, action: Action) -> bool:
    return bool(roles_of(user, study) & ALLOWED[action])


def require(user, study: Study, action: Action) -> None:
    """Refuse ``action`` unless the user holds a role that allows it. The refusal names the
    study only to someone who holds a role in it: for anyone else the 403 page would tell
    any study's name to whoever types its number into the address."""
    roles = roles_of(user, study)
    if roles & ALLOWED[action]:
        return
    if not roles:
        raise StudyPermissionDenied(f"{user} may not {action.value}: they hold no role in this study")
    doing = action.value.removesuffix(" the study")  # "view the study" -> "view study 'A'", not "... in study"
    where = f" study {study.name!r}" if doing != action.value else f" in study {study.name!r}"
    raise StudyPermissionDenied(f"{user} may not {doing}{where}")


def visible_studies(user):
    """The studies a user holds a staff role in (participants see only their own shifts)."""
    if user.is_superuser:
        return Study.objects.all()
    staff = [r for r in Role if r != Role.PARTICIPANT]
    return Study.objects.filter(memberships__user=user, memberships__role__in=staff).distinct()


def can_create_studies(user) -> bool:
    return user.is_staff or user.is_superuser


def may_open_studies(user) -> bool:
    """Whether the studies pages have anything for the user: staff create studies, team
    members see theirs (a participant's study is on their own page, not here)."""
    return can_create_studies(user) or visible_studies(user).exists()

"""Who may use the explorer: researchers only.

The explorer shows what a participant must never see: the ladder's thresholds and
anchor scores, other people's and models' trials, and the task's scripted events.
A researcher is an active user who is staff or a superuser, a member of the
``researchers`` group, or holds the researcher (or admin) role in some study.
Every explorer view is wrapped in :func:`researcher_required`: anonymous visitors go
to the sign-in page, anyone else signed in gets a 403 that says why.

A study's human trials belong to that study: :func:`visible_trials` shows them to the
site's researchers (staff, superusers, the ``researchers`` group) and to those with a
researcher role in that study, not to a researcher of another study.  To such a viewer
they do not exist (a 404, and left out of lists and the ladder).  A human trial that
names no study is shown to the site's researchers only.
"""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet

from .models import Trial

RESEARCHER_GROUP = "researchers"
# Study roles (studies.models.Role values) that make someone a researcher here; by
# value, so the explorer does not import the studies app.
RESEARCHER_STUDY_ROLES = ("researcher", "admin")


def is_site_researcher(user) -> bool:
    """A researcher of the whole site, not only through a study's role."""
    return bool(user.is_authenticated and user.is_active
                and (user.is_staff or user.is_superuser or user.groups.filter(name=RESEARCHER_GROUP).exists()))


def _research_roles(user):
    return user.study_memberships.filter(role__in=RESEARCHER_STUDY_ROLES)


def is_researcher(user) -> bool:
    if not (user.is_authenticated and user.is_active):
        return False
    return is_site_researcher(user) or _research_roles(user).exists()


def visible_trials(user) -> QuerySet[Trial]:
    """The trials ``user`` may see: all for a site researcher; for a researcher through study
    roles, every trial but the human trials of studies they have no researcher role in."""
    if is_site_researcher(user):
        return Trial.objects.all()
    if not is_researcher(user):
        return Trial.objects.none()
    studies = _research_roles(user).values_list("study__name", flat=True)
    return Trial.objects.filter(~Q(player_kind=Trial.PlayerKind.HUMAN) | Q(study__in=list(studies), study__gt=""))


def researcher_required(view):
    """Sign-in for anonymous visitors; 403 for signed-in users who are not researchers."""
    @wraps(view)
    def guarded(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_researcher(request.user):
            raise PermissionDenied("The trial explorer is for researchers only.")
        return view(request, *args, **kwargs)
    return guarded

"""Who may use the explorer: researchers only.

The explorer shows what a participant must never see: the ladder's thresholds and
anchor scores, other people's and models' trials, and the task's scripted events.
A researcher is an active user who is staff or a superuser, a member of the
``researchers`` group, or holds the researcher (or admin) role in some study.
Every explorer view is wrapped in :func:`researcher_required`: anonymous visitors go
to the sign-in page, anyone else signed in gets a 403 that says why.
"""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

RESEARCHER_GROUP = "researchers"
# Study roles (studies.models.Role values) that make someone a researcher here; by
# value, so the explorer does not import the studies app.
RESEARCHER_STUDY_ROLES = ("researcher", "admin")


def is_researcher(user) -> bool:
    if not (user.is_authenticated and user.is_active):
        return False
    return (user.is_staff or user.is_superuser
            or user.groups.filter(name=RESEARCHER_GROUP).exists()
            or user.study_memberships.filter(role__in=RESEARCHER_STUDY_ROLES).exists())


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

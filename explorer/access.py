"""Who is a researcher: staff, superusers and members of the ``researchers`` group.

Researchers see what a participant must never see: the task's scripted events,
their timing and their channel.  Everyone signed in sees scores and action logs.
"""
from __future__ import annotations

RESEARCHER_GROUP = "researchers"


def is_researcher(user) -> bool:
    if not (user.is_authenticated and user.is_active):
        return False
    return user.is_staff or user.is_superuser or user.groups.filter(name=RESEARCHER_GROUP).exists()

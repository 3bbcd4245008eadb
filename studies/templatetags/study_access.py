"""``{% study_access study user as may %}``: which of a study's pages the user may open,
so its navigation links only to pages that would not answer 403."""
from __future__ import annotations

from django import template

from studies.permissions import ALLOWED, Action, roles_of

register = template.Library()

PAGES = {"monitor": Action.MONITOR, "exports": Action.EXPORT, "pay": Action.MANAGE}


@register.simple_tag
def study_access(study, user) -> dict[str, bool]:
    roles = roles_of(user, study)
    return {page: bool(roles & ALLOWED[action]) for page, action in PAGES.items()}

"""The header's links to the staff pages, as a template context processor.

Each link is shown only to users that page lets in, by the check its own views make.
It lives here, at the top of the layers, because it names the studies and explorer
apps, which the console (whose base template shows the header) may not import.
The links are worked out only when a template shows them: the context holds a callable.
"""
from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse

from explorer.access import is_researcher
from studies.permissions import may_open_studies


def staff_links(request: HttpRequest) -> dict[str, Callable[[], list[tuple[str, str]]]]:
    """``staff_links``: ``(label, url)`` of the staff pages the signed-in user may open."""

    def links() -> list[tuple[str, str]]:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return []
        found = []
        if may_open_studies(user):
            found.append(("Studies", reverse("studies:list")))
        if is_researcher(user):
            found.append(("Explorer", reverse("explorer:trials")))
        if admin.site.has_permission(request):
            found.append(("Admin", reverse("admin:index")))
        return found

    return {"staff_links": links}

"""A refused form comes back filled in as it was sent.

The study pages post plain forms and answer with a redirect: the page again, opened at
the form's panel, the refusal said as a message.  The redirect alone would lose what was
typed: a coordinator's reason or coaching note, the minutes of an extension, the
participant and cell chosen.  So a refusal keeps the posted fields in the session, as
the message is kept, for the page the redirect opens (:func:`keep_posted`); that page
takes them (:func:`take_posted`) and hands them to ``static/studies/refill.js``, which
finds the form posted to the same address (of several, the one whose hidden fields
match) and fills it in again.  They are taken once, by that page only, and only within
:data:`FRESH_SECONDS`: a page opened later is not filled with an old refusal's values.

Forms that already come back filled in by the server (``keep`` in ``studies.views``)
do not need this.  What is kept is bounded (:data:`MAX_FIELDS` fields of at most
:data:`MAX_CHARS` characters); a longer field is left out, never cut.
"""
from __future__ import annotations

import time
from typing import Any

from django.http import HttpRequest

SESSION_KEY = "studies_refill"
FRESH_SECONDS = 600
MAX_FIELDS = 60
MAX_CHARS = 5000
NOT_KEPT = frozenset({"csrfmiddlewaretoken"})

clock = time.time  # replaced by tests


def keep_posted(request: HttpRequest, page: str) -> None:
    """Keep the fields ``request`` posted for ``page`` (the path the refusal's redirect opens)."""
    data: dict[str, list[str]] = {}
    for name, values in request.POST.lists():
        if name in NOT_KEPT or len(data) >= MAX_FIELDS:
            continue
        if all(len(value) <= MAX_CHARS for value in values):
            data[name] = list(values)
    request.session[SESSION_KEY] = {"action": request.path, "page": page, "at": clock(), "data": data}


def take_posted(request: HttpRequest) -> dict[str, Any] | None:
    """The fields a refused form posted, for this page (``{"action": path, "data": {name: [values]}}``),
    or ``None``.  Taken once: whatever was kept is dropped, used or not."""
    kept = request.session.pop(SESSION_KEY, None)  # marks the session changed only when it held some
    if not isinstance(kept, dict) or kept.get("page") != request.path:
        return None
    if not isinstance(kept.get("at"), (int, float)) or clock() - kept["at"] > FRESH_SECONDS:
        return None
    return {"action": kept.get("action"), "data": kept.get("data", {})}

"""Views: validate the request, call one service function, render or send the download.

Every page is for researchers only (:func:`explorer.access.researcher_required`):
thresholds, anchor scores, other trials and the task's events are never shown to a
participant.
"""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from . import listing, services
from .access import researcher_required, visible_trials
from .forms import ActionLogForm, CompareForm, TrialListForm
from .measures import BY_SLUG
from .tables import Table

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _table(table: Table, fmt: str) -> HttpResponse:
    body = table.as_csv() if fmt == "csv" else table.as_json()
    return _download(body, CONTENT_TYPES[fmt], f"{table.name}.{fmt}")


def _svg(body: str, filename: str) -> HttpResponse:
    return _download(body, "image/svg+xml", filename)


def _page(request: HttpRequest, template: str, context: dict, status: int = 200) -> HttpResponse:
    """Render an explorer page."""
    return render(request, template, context, status=status)


def _problem(request: HttpRequest, heading: str, problem: str, back: str, back_label: str, trail: str = ""
             ) -> HttpResponse:
    """A 400 in the explorer's page: what is wrong, in one sentence, and a link back."""
    return _page(request, "explorer/problem.html", {"heading": heading, "problem": problem, "back": back,
                                                    "back_label": back_label, "trail": trail}, status=400)


def _measure(slug: str) -> str:
    if slug not in BY_SLUG:
        raise Http404(f"no chart {slug!r}")
    return slug


@researcher_required
@require_GET
def trial_list(request: HttpRequest) -> HttpResponse:
    form = TrialListForm(request.GET)
    if not form.is_valid():
        return _problem(request, "Cannot show this list", form.problem(), reverse("explorer:trials"),
                        "Back to every trial")
    page = form.cleaned_data["page"]
    return _page(request, "explorer/trial_list.html", {"listing": listing.trial_list(
        visible_trials(request.user), cell=form.cleaned_data["cell"], kind=form.cleaned_data["kind"],
        page=1 if page is None else page)})


@researcher_required
@require_GET
def trial_detail(request: HttpRequest, pk: int) -> HttpResponse:
    form = ActionLogForm(request.GET)
    if not form.is_valid():
        return _problem(request, "Cannot show this action log", form.problem(),
                        reverse("explorer:trial", args=[pk]) + "#actions", f"Back to trial {pk}'s action log",
                        trail=f"trial {pk}")
    page = services.trial_page(pk, seen=visible_trials(request.user), family=form.cleaned_data["family"],
                               page=1 if form.cleaned_data["page"] is None else form.cleaned_data["page"])
    return _page(request, "explorer/trial.html", {"page": page, "trial": page.trial})


@researcher_required
@require_GET
def trial_chart(request: HttpRequest, pk: int, measure: str) -> HttpResponse:
    svg = services.trial_chart(pk, _measure(measure), seen=visible_trials(request.user))
    return _svg(svg, f"trial-{pk}-{measure}.svg")


@researcher_required
@require_GET
def trial_components(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    return _table(services.components_table(pk, seen=visible_trials(request.user)), fmt)


@researcher_required
@require_GET
def trial_windows(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    return _table(services.windows_table(pk, seen=visible_trials(request.user)), fmt)


@researcher_required
@require_GET
def trial_actions(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    form = ActionLogForm(request.GET)
    if not form.is_valid():
        return HttpResponse(form.problem(), status=400, content_type="text/plain")
    table = services.actions_table(pk, form.cleaned_data["family"], seen=visible_trials(request.user))
    return _table(table, fmt)


@researcher_required
@require_GET
def trial_events(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    return _table(services.events_table(pk, seen=visible_trials(request.user)), fmt)


@researcher_required
@require_GET
def trial_call(request: HttpRequest, pk: int, seq: int) -> JsonResponse:
    detail = services.call_detail(pk, seq, seen=visible_trials(request.user))
    return JsonResponse(detail, json_dumps_params={"indent": 1})


def _compare_ids(request: HttpRequest) -> tuple[list[int] | None, str]:
    form = CompareForm(request.GET)
    if not form.is_valid():
        return None, " ".join(str(message) for message in form.errors["trial"])
    return form.cleaned_data["trial"], ""


@researcher_required
@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    ids, problem = _compare_ids(request)
    if ids is None:
        return _page(request, "explorer/compare.html", {"problem": problem}, status=400)
    try:
        page = services.compare_page(ids, seen=visible_trials(request.user))
    except services.CompareRefused as exc:
        return _page(request, "explorer/compare.html", {"problem": str(exc)}, status=400)
    query = "&".join(f"trial={pk}" for pk in ids)
    return _page(request, "explorer/compare.html", {"page": page, "query": query})


@researcher_required
@require_GET
def compare_chart(request: HttpRequest, measure: str) -> HttpResponse:
    ids, problem = _compare_ids(request)
    if ids is None:
        return HttpResponse(problem, status=400, content_type="text/plain")
    try:
        svg = services.compare_chart(ids, _measure(measure), seen=visible_trials(request.user))
    except services.CompareRefused as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    return _svg(svg, f"compare-{'-'.join(map(str, ids))}-{measure}.svg")


@researcher_required
@require_GET
def compare_components(request: HttpRequest, fmt: str) -> HttpResponse:
    ids, problem = _compare_ids(request)
    if ids is None:
        return HttpResponse(problem, status=400, content_type="text/plain")
    try:
        table = services.compare_table(ids, seen=visible_trials(request.user))
    except services.CompareRefused as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    return _table(table, fmt)


@researcher_required
@require_GET
def ladder(request: HttpRequest) -> HttpResponse:
    return _page(request, "explorer/ladder.html", {"page": services.ladder_page(seen=visible_trials(request.user))})


def _ladder_unavailable(problem: str) -> HttpResponse:
    """A 503 naming the problem when the ladder's calibration file cannot be read (rather than an
    empty SVG or a table of no rows, served as if that were the ladder)."""
    return HttpResponse(problem, status=503, content_type="text/plain; charset=utf-8")


@researcher_required
@require_GET
def ladder_chart(request: HttpRequest) -> HttpResponse:
    page = services.ladder_page(seen=visible_trials(request.user))
    return _ladder_unavailable(page.problem) if page.problem else _svg(page.svg, "ladder.svg")


@researcher_required
@require_GET
def ladder_download(request: HttpRequest, fmt: str) -> HttpResponse:
    page = services.ladder_page(seen=visible_trials(request.user))
    return _ladder_unavailable(page.problem) if page.problem else _table(services.ladder_table(page), fmt)

"""Views: validate input, call one service function, render.

Every shift view looks the shift up among the signed-in user's own shifts, so anyone
else's shift is a 404.
"""
import re

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from . import services
from .models import Shift
from .toolforms import arguments_from_form, form_values, tool_families, tool_forms

CALL_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,64}")

# Score components a participant may see on the end page (never task, seed or calibration).
SCORE_ROWS = (
    ("reward_composite", "Composite score"),
    ("business", "Business"),
    ("reliability", "Reliability"),
    ("on_time_rate", "Orders shipped on time"),
    ("return_handled_rate", "Returns handled"),
    ("continuity", "Continuity"),
    ("net_assets", "Net assets (USD)"),
    ("windows_played", "Windows played"),
    ("windows_attended", "Windows attended"),
)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    shifts = services.participant_shifts(request.user) if request.user.is_authenticated else []
    return render(request, "console/home.html", {"shifts": shifts})


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


def _own_shift(request: HttpRequest, pk: int) -> Shift:
    return get_object_or_404(Shift, pk=pk, participant=request.user)


def _workspace_url(shift: Shift, seq: int | None = None) -> str:
    url = reverse("console:shift", args=[shift.pk])
    return f"{url}?call={seq}" if seq is not None else url


def _context(overview: services.Overview, **extra) -> dict:
    shown = overview.shown
    components = overview.shift.score_components or {}
    return {
        "shift": overview.shift,
        "calls": overview.calls,
        "header": overview.header,
        "shown": shown,
        "shown_result": services.parse_result(shown.result_text) if shown else None,
        "inbox": overview.inbox,
        "families": tool_families(),
        "score_rows": [(label, components.get(key)) for key, label in SCORE_ROWS if key in components],
        "values": {},
        **extra,
    }


def _seq_param(request: HttpRequest) -> int | None:
    raw = request.GET.get("call", "")
    return int(raw) if raw.isdigit() else None


@login_required
@require_GET
def shift_workspace(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    overview = services.shift_overview(shift, _seq_param(request))
    return render(request, "console/shift.html", _context(overview))


@login_required
@require_GET
def shift_call_detail(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    """Re-read one stored call (free: nothing is sent to the store)."""
    shift = _own_shift(request, pk)
    if not request.htmx:
        return redirect(_workspace_url(shift, seq))
    overview = services.shift_overview(shift, seq)
    if overview.shown is None:
        return HttpResponse(status=404)
    return render(request, "console/_result.html", _context(overview))


@login_required
@require_POST
def shift_start(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    overview = services.start_assigned(shift)
    return redirect(_workspace_url(overview.shift))


@login_required
@require_POST
def shift_end(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    overview = services.end_by_participant(shift)
    return _to_workspace(request, overview.shift)


def _to_workspace(request: HttpRequest, shift: Shift, seq: int | None = None) -> HttpResponse:
    url = _workspace_url(shift, seq)
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


@login_required
@require_POST
def shift_call(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    form = tool_forms().get(request.POST.get("tool", ""))
    if form is None:
        return HttpResponseBadRequest("unknown tool")
    call_id = request.POST.get("call_id", "")
    if not CALL_ID_RE.fullmatch(call_id):
        return HttpResponseBadRequest("a call id is required")
    arguments = arguments_from_form(form, request.POST)
    try:
        done = services.perform_call(shift, form.name, arguments, call_id)
    except services.ShiftNotActive:
        return _to_workspace(request, shift)
    if done.shift.status != Shift.Status.ACTIVE or not request.htmx:
        return _to_workspace(request, done.shift, done.call.seq)
    context = {
        "shift": done.shift, "shown": done.call, "shown_result": services.parse_result(done.call.result_text),
        "header": done.header, "inbox": done.inbox, "fresh": done.fresh,
        "form": form, "values": form_values(form, done.call.arguments),
    }
    return render(request, "console/_call_response.html", context)

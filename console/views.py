"""Views: validate input, call one shift action (:mod:`shifts`) or workspace read, render.

Every shift view looks the shift up among the signed-in user's own shifts, so anyone
else's shift is a 404. Refusals (a locked shift, a paused shift, bad input) come back
as a message naming the problem: in the page for htmx requests, as a flash message
after a redirect otherwise. Pages that show a shift's state are never cached, so the
back button and a restored tab fetch the state afresh.
"""
import json
import os
import re
from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import BadRequest
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http import HttpRequest as DjangoRequest
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.template import Context
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect, HttpResponseClientRefresh
from django_htmx.middleware import HtmxDetails

from environment.tools import REGISTRY
from environment.tools.registry import ToolKind
from shifts import briefing
from shifts.affiliation import affiliation_of, person_page_of
from shifts.chart import timeline_svg
from shifts.errors import ShiftError, ShiftNotActive, ShiftPaused, StaleBriefing, StartRefused, TaskUnavailable
from shifts.grading import COMPONENT_NAMES
from shifts.lifecycle import pause_shift, resume_shift
from shifts.models import Shift
from shifts.results import result_of
from shifts.timeline import timeline_of

from . import reply, workspace
from .endpage import score_rows
from .templatetags.console_tags import present_call, tool_form
from .toolforms import arguments_from_form, form_values, tool_families, tool_forms


class HttpRequest(DjangoRequest):
    """A request as the views see it: django-htmx's middleware adds ``htmx``."""

    htmx: HtmxDetails


def signed_in(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``login_required``; an htmx request without a session (signed out in another tab, the
    session expired) sends the whole page to the sign-in page, coming back to the page it was
    on: followed as a swap, the redirect put the sign-in page inside the result panel.  A shift
    whose task is no longer installed is shown as :func:`_unavailable` (an htmx request reloads
    the page, which then shows it)."""
    guarded = login_required(view)

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.htmx and not request.user.is_authenticated:
            back = request.htmx.current_url_abs_path or reverse("console:home")
            return HttpResponseClientRedirect(redirect_to_login(back).url)
        try:
            return guarded(request, *args, **kwargs)
        except TaskUnavailable as gone:
            return HttpResponseClientRefresh() if request.htmx else _unavailable(request, kwargs["pk"], gone)

    return wrapper


INBOX_TOOLS = frozenset({"list_returns", "refund_return"})
READ_TOOLS = frozenset(name for name, spec in REGISTRY.items() if spec.kind == ToolKind.READ)
CALL_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,64}")

# Score components a participant may see on the end page (never task, seed or calibration),
# with how each reads: "score" (three decimals), "rate" (a percentage) or "plain".
SCORE_ROWS = (
    *((key, COMPONENT_NAMES[key], kind) for key, kind in (
        ("business", "score"), ("reliability", "score"), ("on_time_rate", "rate"),
        ("return_handled_rate", "rate"), ("continuity", "score"), ("reward_composite", "score"))),
    ("net_assets", COMPONENT_NAMES["net_assets"] + " (USD)", "plain"),
    ("windows_played", "Windows played", "plain"),
    ("windows_attended", "Windows attended", "plain"),
)


@require_safe  # GET, and HEAD for uptime checks
@never_cache
def home(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return render(request, "console/home.html", {})
    home_state = workspace.participant_home(request.user)
    return render(request, "console/home.html", {
        "shifts": home_state.shifts, "acknowledgement": home_state.acknowledgement,
        "practice_done": home_state.practice_done, "locks": home_state.locks, "due": home_state.due,
        "scored_open": [s for s in home_state.shifts if not s.is_practice and s.status != Shift.Status.ENDED],
        "person_page": person_page_of(request.user.pk),
    })


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


@signed_in
def briefing_page(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        try:
            briefing.acknowledge_briefing(request.user, request.POST.get("version", ""))
        except StaleBriefing as refusal:
            messages.error(request, str(refusal))
            return redirect("console:briefing")
        messages.success(request, "Briefing acknowledged. Your practice shift is unlocked.")
        return redirect("console:home")
    if request.method != "GET":
        return HttpResponse(status=405)
    return render(request, "console/briefing.html", {
        "version": briefing.BRIEFING_VERSION, "acknowledgement": briefing.acknowledgement(request.user),
    })


def _own_shift(request: HttpRequest, pk: int) -> Shift:
    return get_object_or_404(Shift, pk=pk, participant=request.user)


def _workspace_url(shift: Shift, seq: int | None = None) -> str:
    url = reverse("console:shift", args=[shift.pk])
    return f"{url}?call={seq}" if seq is not None else url


def _score_rows(shift: Shift) -> list[tuple[str, str, object]]:
    components = shift.score_components or {}
    return [(label, kind, components.get(key)) for key, label, kind in SCORE_ROWS if key in components]


def _context(overview: workspace.Overview, **extra) -> dict:
    shown = overview.shown
    shift = overview.shift
    context = {
        "shift": shift,
        "calls": overview.calls,
        "header": overview.header,
        "shown": shown,
        "shown_result": result_of(shown) if shown else None,
        "inbox": overview.inbox,
        "cached": overview.cached,
        "clock": overview.clock,
        "pause": overview.pause,
        "due": overview.due,
        "families": tool_families(),
        "values": {},
        # A result shown again (a re-read, a reload) that was read in an earlier window than the
        # store's now offers no row action: what its rows name may have changed.
        "earlier_window": _moved_on_since(shown, overview.header),
        **extra,
    }
    if shift.status == Shift.Status.ENDED:
        context.update(_end_context(shift))
        context["chart"] = mark_safe(timeline_svg(timeline_of(shift)))  # numbers and fixed labels only
    return context


def _moved_on_since(shown, header) -> bool:
    """Whether ``shown`` was read in an earlier window than the store's ``header`` now (as the
    cached views mark it)."""
    return bool(shown and shown.window and header and header.window > shown.window)


def _end_context(shift: Shift) -> dict:
    """The end page's score card, from what the shift stored when it was graded."""
    components = shift.score_components or {}
    study = affiliation_of(shift)
    return {
        "score_rows": _score_rows(shift),
        "explained_rows": score_rows(components),
        # A practice attempt has no pass or fail, so no threshold to read one from either.
        "threshold": (components.get("threshold") if study is not None and study.show_threshold
                      and not shift.is_practice else None),
        "study_page": study.page_url if study is not None else None,
        "practice_store": shift.task_id == briefing.PRACTICE_CELL[0],  # the console's three-day practice store
    }


def _unavailable(request: HttpRequest, pk: int, gone: TaskUnavailable) -> HttpResponse:
    """A shift whose store cannot be opened: what is stored (status, score, the timeline
    if it was kept) without the workspace, which needs the task."""
    shift = _own_shift(request, pk)
    context: dict = {"shift": shift, "said": str(gone)}
    if shift.status == Shift.Status.ENDED:
        context.update(_end_context(shift))
        context["chart"] = mark_safe(timeline_svg(shift.timeline)) if shift.timeline else None
    return render(request, "console/shift_unavailable.html", context,
                  status=200 if shift.status == Shift.Status.ENDED else 503)


def _seq_param(request: HttpRequest) -> int | None:
    raw = request.GET.get("call", "")
    return int(raw) if raw.isdigit() else None


@signed_in
@require_GET
@never_cache
def shift_workspace(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    seq = _seq_param(request)
    overview = workspace.shift_overview(shift, seq)
    if seq is not None and overview.shown is None and overview.calls:
        messages.warning(request, f"This shift has no call #{seq}: here is its latest call.")
        return redirect(_workspace_url(shift))
    return render(request, "console/shift.html", _context(
        overview, brief=workspace.shift_brief(overview.shift),
        brief_open=workspace.brief_open(overview.shift, overview.calls), coach_note=workspace.coach_note(overview.shift)))


@signed_in
@require_GET
@never_cache
def shift_bar(request: HttpRequest, pk: int) -> HttpResponse:
    """The shift bar (countdown, pause state), polled by htmx when no websocket is up; once
    the shift has ended or is past its deadline, the whole page is loaded again instead."""
    shift = _own_shift(request, pk)
    overview = workspace.shift_overview(shift)
    if (overview.shift.status == Shift.Status.ENDED or overview.due) and request.htmx:
        return _to_workspace(request, overview.shift)
    return render(request, "console/_shift_bar.html", _context(overview))


@signed_in
@require_GET
@never_cache
def shift_call_detail(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    """Re-read one stored call (free: nothing is sent to the store)."""
    shift = _own_shift(request, pk)
    if not request.htmx:
        return redirect(_workspace_url(shift, seq))
    overview = workspace.shift_overview(shift, seq)
    if overview.shown is None:
        return HttpResponse(f"This shift has no call #{seq}.", status=404)
    return render(request, "console/_result.html", _context(overview, rereading=True))


@signed_in
@require_GET
@never_cache
def shift_panels(request: HttpRequest, pk: int) -> HttpResponse:
    """The side panels after a call made elsewhere (another tab, another window): the
    inbox and the cached views whole, the history rows after call ``after``, and what
    those calls did to rows ("shipped (#12)", by row key: the page marks those rows of its
    result, whose actions are then gone), as out-of-band swaps.  The shift websocket says
    when (its ``last_seq`` grew); free."""
    shift = _own_shift(request, pk)
    raw = request.GET.get("after", "0")
    if not raw.isdigit():
        return HttpResponseBadRequest("after must be a call number (0 for all).")
    overview = workspace.shift_overview(shift)
    after = int(raw)
    new_calls = [c for c in overview.calls if c.seq > after]
    return render(request, "console/_panels.html",
                  _context(overview, new_calls=new_calls[::-1], done_elsewhere=json.dumps(workspace.done_elsewhere(new_calls))))


@signed_in
@require_GET
@never_cache
def shift_history(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    text, tool = request.GET.get("q", ""), request.GET.get("tool", "")
    try:
        history = workspace.search_history(shift, text, tool)
    except workspace.HistorySearchRefused as problem:
        return render(request, "console/history.html",
                      {"shift": shift, "error": str(problem), "q": text, "tool": tool,
                       "tools": sorted(tool_forms())}, status=400)
    return render(request, "console/history.html",
                  {"shift": shift, "history": history, "q": history.text, "tool": history.tool,
                   "tools": sorted(tool_forms())})


@signed_in
@require_POST
def shift_start(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    try:
        overview = workspace.start_assigned(shift)
    except StartRefused as refusal:
        messages.error(request, str(refusal))
        return redirect(refusal.next_url or "console:home")
    return redirect(_workspace_url(overview.shift))


@signed_in
@require_POST
def shift_end(request: HttpRequest, pk: int) -> HttpResponse:
    """End the shift; with ``due=1`` (what the page of a shift past its deadline sends by
    itself) only if it is past its deadline, so a stale page never ends a shift whose
    deadline was moved meanwhile."""
    shift = _own_shift(request, pk)
    if request.POST.get("due") == "1":
        overview = workspace.end_when_due(shift)
    else:
        overview = workspace.end_by_participant(shift)
    return _to_workspace(request, overview.shift)


@signed_in
@require_POST
def shift_pause(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    try:
        pause_shift(shift, request.POST.get("reason", ""))
    except ShiftError as refusal:  # PauseRefused, ShiftNotActive
        messages.error(request, str(refusal))
    return _to_workspace(request, shift)


@signed_in
@require_POST
def shift_resume(request: HttpRequest, pk: int) -> HttpResponse:
    shift = _own_shift(request, pk)
    try:
        resume_shift(shift)
    except ShiftNotActive as refusal:
        messages.error(request, str(refusal))
    return _to_workspace(request, shift)


_CSRF_PLACE = {char: place for place, char in enumerate(CSRF_ALLOWED_CHARS)}
_CSRF_FAIR = 256 - 256 % len(CSRF_ALLOWED_CHARS)  # random bytes below this map evenly onto the characters


def _csrf_token(request: HttpRequest) -> str:
    """``get_token(request)``: the CSRF secret under a fresh mask.  The mask is drawn from
    one ``os.urandom`` read instead of Django's 32 ``SystemRandom`` choices (a system call
    each, on every tool call's reply); it is as uniform (bytes that would favour some
    characters are drawn again) and masks the secret exactly as
    ``django.middleware.csrf._mask_cipher_secret`` does, so Django unmasks it to the same
    secret.  Without a secret yet, Django's own ``get_token``.

    Unlike ``get_token``, a secret that came with the request's cookie does not have the
    cookie sent again: a tool call's reply only extended its year-long life (a header
    written on every call), and the page that made the call had it set already.  A secret
    the middleware has just made (the request's cookie was missing or malformed) is still
    sent: the middleware marked it so."""
    secret = request.META.get("CSRF_COOKIE")
    if not secret:
        return get_token(request)
    chars, count = CSRF_ALLOWED_CHARS, len(CSRF_ALLOWED_CHARS)
    mask: list[int] = []
    while len(mask) < CSRF_SECRET_LENGTH:
        mask.extend(byte % count for byte in os.urandom(2 * CSRF_SECRET_LENGTH) if byte < _CSRF_FAIR)
    del mask[CSRF_SECRET_LENGTH:]
    cipher = "".join(chars[(_CSRF_PLACE[char] + shift) % count] for char, shift in zip(secret, mask, strict=True))
    return "".join(chars[shift] for shift in mask) + cipher


def _to_workspace(request: HttpRequest, shift: Shift, seq: int | None = None) -> HttpResponse:
    url = _workspace_url(shift, seq)
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


@signed_in
@require_POST
def shift_call(request: HttpRequest, pk: int) -> HttpResponse:
    # The ownership check is made by the call's own locked read (one query fewer per call).
    # The id given by position, Shift's first field: by keyword, the model first looks for
    # every other field among the keywords (an exception caught for each, on every call).
    shift = Shift(pk)
    form = tool_forms().get(request.POST.get("tool", ""))
    if form is None:
        return HttpResponseBadRequest(f"Unknown tool {request.POST.get('tool', '')!r}.")
    call_id = request.POST.get("call_id", "")
    if not CALL_ID_RE.fullmatch(call_id):
        return HttpResponseBadRequest("A call id of 8 to 64 letters, digits, '-' or '_' is required.")
    try:
        arguments = arguments_from_form(form, request.POST)
    except BadRequest as refused:  # said as the other refusals above are: nothing was sent
        return HttpResponseBadRequest(str(refused))
    try:
        done = workspace.perform_call(shift, form.name, arguments, call_id, owner=request.user.pk)
    except Shift.DoesNotExist as missing:
        raise Http404("No shift of yours has this number.") from missing
    except ShiftPaused as refusal:
        if request.htmx:
            return render(request, "console/_refusal.html", {"message": str(refusal)})
        messages.error(request, str(refusal))
        return _to_workspace(request, shift)
    except ShiftNotActive:
        return _to_workspace(request, shift)
    if done.shift.status != Shift.Status.ACTIVE or not request.htmx:
        return _to_workspace(request, done.shift, done.call.seq)
    # Panels a call cannot have changed are neither worked out nor rendered again (the page keeps them).
    inbox_changed = not done.fresh or (done.call.tool in INBOX_TOOLS and not done.call.is_error)
    cached_changed = not done.fresh or (done.call.tool in READ_TOOLS and done.call.reached_core
                                        and not done.call.is_error)
    # The reply is written out in Python (console.reply: the markup _call_response.html gives).
    page = reply.Page(done.shift, _csrf_token(request))
    form_context = Context({"shift": done.shift, "csrf_token": page.context["csrf_token"],
                            "values": form_values(form, done.call.arguments)}, autoescape=True)
    html = reply.call_reply(
        shown=done.call, result=result_of(done.call), view=present_call(done.call, done.calls), header=done.header,
        fresh=done.fresh, inbox=done.inbox if inbox_changed else None, inbox_changed=inbox_changed,
        cached=done.cached if cached_changed else [], cached_changed=cached_changed,
        form_html=tool_form(form_context, form, True, call_id), page=page)  # the same id: a second press is this call
    return HttpResponse(html)


@signed_in
@require_GET
@never_cache
def shift_call_status(request: HttpRequest, pk: int, call_id: str) -> JsonResponse:
    """Whether the call with this client call id is stored, read from the call record:
    what a page asks after a submit got no answer (the server down, the network cut)."""
    shift = _own_shift(request, pk)
    if not CALL_ID_RE.fullmatch(call_id):
        return JsonResponse({"error": "A call id is 8 to 64 letters, digits, '-' or '_'."}, status=400)
    call = shift.calls.filter(call_id=call_id).only("seq", "tool", "is_error", "reached_core").first()
    if call is None:
        return JsonResponse({"stored": False, "status": shift.status})
    return JsonResponse({"stored": True, "seq": call.seq, "tool": call.tool, "is_error": call.is_error,
                         "reached_store": call.reached_core, "spent_operation": call.spent_operation,
                         "url": _workspace_url(shift, call.seq), "status": shift.status})

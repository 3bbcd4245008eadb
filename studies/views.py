"""Study views: validate input, call one service function, render or redirect.

Service errors become messages (bad input, wrong state: 400 for htmx requests) and
permission errors become 403s; every study is looked up by id, and the service
checks the user's role in that study.
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import assignment, attempts, design, export_jobs, forms, participants
from .errors import InvitationUsed, StudyError, StudyPermissionDenied
from .exports import zip_bytes
from .figures import Filters
from .leaderboard import leaderboard
from .models import Attempt, ExportJob, Invitation, Participant, Study
from .monitor import monitor_rows
from .overview import audit_log, my_study, study_overview
from .permissions import Action, require, visible_studies


def _study(pk: int) -> Study:
    return get_object_or_404(Study, pk=pk)


def _staff_study(request: HttpRequest, pk: int) -> Study:
    """The study, for a user who holds a staff role in it; anyone else gets a 403 before
    their form is even read (each service then checks the specific permission)."""
    study = _study(pk)
    require(request.user, study, Action.VIEW)
    return study


def _back(study: Study, anchor: str = "") -> HttpResponse:
    return redirect(reverse("studies:detail", args=[study.pk]) + (f"#{anchor}" if anchor else ""))


def _fail(request: HttpRequest, study: Study, message: str, anchor: str = "") -> HttpResponse:
    if request.htmx:
        return HttpResponseBadRequest(message)
    messages.error(request, message)
    return _back(study, anchor)


@login_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    return render(request, "studies/list.html", {"studies": visible_studies(request.user)})


@login_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    if not (request.user.is_staff or request.user.is_superuser):
        raise StudyPermissionDenied(f"{request.user} may not create studies (staff only)")
    form = forms.StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            study = design.create_study(request.user, d["name"], d["tasks"], d["seeds"], quota=d["quota"],
                                        policy=d["policy"], random_seed=d["random_seed"])
        except StudyError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Study {study.name!r} created with {study.cells.count()} cells.")
            return redirect("studies:detail", pk=study.pk)
    return render(request, "studies/new.html", {"form": form})


@login_required
@require_POST
def member_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.MemberForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "members")
    try:
        design.add_member_by_username(request.user, study, form.cleaned_data["username"], form.cleaned_data["role"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "members")
    messages.success(request, f"{form.cleaned_data['username']} is now {form.cleaned_data['role']}.")
    return _back(study, "members")


@login_required
@require_POST
def quota_set(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.QuotaForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "assign")
    cell = get_object_or_404(study.cells, pk=form.cleaned_data["cell"])
    try:
        design.set_quota(request.user, study, cell, form.cleaned_data["quota"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "assign")
    messages.success(request, f"Quota of {cell.key} set to {cell.quota}.")
    return _back(study, "assign")


@login_required
@require_GET
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    overview = study_overview(request.user, _study(pk))
    return render(request, "studies/detail.html", {"o": overview, "study": overview.study})


@login_required
@require_POST
def participant_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.ParticipantForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "participants")
    data = form.cleaned_data
    try:
        participant = participants.add_participant(request.user, study, data["label"], {
            k: data[k] for k in ("years_ecommerce", "role", "platforms") if data[k] not in (None, "")})
    except StudyError as exc:
        return _fail(request, study, str(exc), "participants")
    messages.success(request, f"Participant {participant.label} added.")
    return _back(study, "participants")


@login_required
@require_POST
def invite(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.InviteForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "participants")
    participant = get_object_or_404(Participant, pk=form.cleaned_data["participant"], study=study)
    try:
        issued = participants.invite(request.user, participant, form.cleaned_data["days"] * 24 * 3600)
    except StudyError as exc:
        return _fail(request, study, str(exc), "participants")
    link = request.build_absolute_uri(reverse("studies:join", args=[issued.token]))
    messages.success(request, f"Invitation link for {participant.label}: {link}")
    return _back(study, "participants")


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, pk: int, invitation_pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    invitation = get_object_or_404(Invitation, pk=invitation_pk, participant__study=study)
    form = forms.RevokeForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "participants")
    try:
        participants.revoke(request.user, invitation, form.cleaned_data["reason"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "participants")
    messages.success(request, "Invitation revoked.")
    return _back(study, "participants")


@login_required
@require_POST
def assign(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.AssignForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "assign")
    participant = get_object_or_404(Participant, pk=form.cleaned_data["participant"], study=study)
    cell = get_object_or_404(study.cells, pk=form.cleaned_data["cell"])
    try:
        attempt = assignment.assign(request.user, participant, cell, practice=form.cleaned_data["practice"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "assign")
    messages.success(request, f"Assigned {cell.key} to {participant.label} (attempt #{attempt.number}).")
    return _back(study, "attempts")


@login_required
@require_POST
def assign_next(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.AssignNextForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "assign")
    try:
        attempt = assignment.assign_next(request.user, study, policy=form.cleaned_data["policy"] or None)
    except StudyError as exc:
        return _fail(request, study, str(exc), "assign")
    if attempt is None:
        messages.info(request, "Nothing to assign: no available participant can take a cell with room left.")
    else:
        messages.success(request, f"Assigned {attempt.cell.key} to {attempt.participant.label} "
                                  f"(attempt #{attempt.number}).")
    return _back(study, "attempts")


def _attempt_action(request: HttpRequest, study: Study, attempt: Attempt, data: dict) -> Attempt:
    action, reason = data["action"], data["reason"] or ""
    if action == "retry":
        return attempts.grant_coached_retry(request.user, attempt, reason)
    if action == "reassign":
        to = get_object_or_404(Participant, pk=data["to"], study=study)
        return attempts.reassign(request.user, attempt, to, reason)
    if action == "extend":
        return attempts.extend_deadline(request.user, attempt, data["minutes"], reason)
    if action == "force_end":
        return attempts.force_end(request.user, attempt, reason)
    if action == "invalidate":
        return attempts.invalidate(request.user, attempt, reason)
    return attempts.select(request.user, attempt, reason)


@login_required
@require_POST
def attempt_act(request: HttpRequest, pk: int, attempt_pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    attempt = get_object_or_404(Attempt, pk=attempt_pk, study=study)
    form = forms.AttemptActionForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "attempts")
    try:
        result = _attempt_action(request, study, attempt, form.cleaned_data)
    except StudyError as exc:
        return _fail(request, study, str(exc), "attempts")
    messages.success(request, f"{form.cleaned_data['action'].replace('_', ' ').capitalize()}: "
                              f"{result.cell.key} attempt #{result.number} ({result.participant.label}).")
    return _back(study, "attempts")


@login_required
@require_POST
def monitor_act(request: HttpRequest, pk: int) -> HttpResponse:
    """A coordinator action from the monitor (the form sits outside the live-updated rows)."""
    study = _staff_study(request, pk)
    form = forms.MonitorActionForm(request.POST)
    if not form.is_valid():
        messages.error(request, forms.errors_text(form))
        return redirect("studies:monitor", pk=study.pk)
    attempt = get_object_or_404(Attempt, pk=form.cleaned_data["attempt"], study=study)
    try:
        result = _attempt_action(request, study, attempt, form.cleaned_data)
    except StudyError as exc:
        messages.error(request, str(exc))
        return redirect("studies:monitor", pk=study.pk)
    messages.success(request, f"{form.cleaned_data['action'].replace('_', ' ').capitalize()}: "
                              f"{result.cell.key} attempt #{result.number} ({result.participant.label}).")
    return redirect("studies:monitor", pk=study.pk)


@login_required
@require_POST
def select_by_rule(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.SelectRuleForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "attempts")
    try:
        chosen = attempts.select_by_rule(request.user, study, form.cleaned_data["rule"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "attempts")
    messages.success(request, f"Selected {len(chosen)} attempt(s) by rule {form.cleaned_data['rule']}.")
    return _back(study, "attempts")


@login_required
@require_GET
def monitor(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    rows = monitor_rows(request.user, study)
    return render(request, "studies/monitor.html", {"study": study, "rows": rows,
                                                    "participants": study.participants.exclude(user=None)})


@login_required
@require_GET
def monitor_partial(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    return render(request, "studies/_monitor_rows.html", {"study": study, "rows": monitor_rows(request.user, study)})


@login_required
@require_GET
def leaderboard_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    try:
        filters = Filters.from_mapping({k: v for k, v in request.GET.items() if k.startswith("include_")})
    except StudyError as exc:
        return HttpResponseBadRequest(str(exc))
    entries, figures = leaderboard(request.user, study, filters=filters)
    return render(request, "studies/leaderboard.html", {"study": study, "entries": entries, "f": figures,
                                                        "filters": filters})


@login_required
@require_GET
def audit_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    return render(request, "studies/audit.html", {"study": study, "events": audit_log(request.user, study)})


@login_required
@require_http_methods(["GET", "POST"])
def exports_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    if request.method == "POST":
        form = forms.ExportForm(request.POST)
        if not form.is_valid():
            return _fail(request, study, forms.errors_text(form))
        job = export_jobs.request_export(request.user, study, Filters(**form.cleaned_data))
        messages.success(request, f"Export {job.pk} requested.")
        return redirect("studies:exports", pk=study.pk)
    require(request.user, study, Action.EXPORT)
    return render(request, "studies/exports.html", {"study": study, "jobs": study.exports.all()[:20],
                                                    "form": forms.ExportForm()})


@login_required
@require_GET
def export_download(request: HttpRequest, pk: int, job_pk: int, name: str) -> HttpResponse:
    study = _study(pk)
    job = get_object_or_404(ExportJob, pk=job_pk, study=study)
    try:
        if name == "export.zip":
            data = zip_bytes(export_jobs.export_directory(request.user, job))
            response = HttpResponse(data, content_type="application/zip")
            response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-export-{job.pk}.zip"'
            return response
        path = export_jobs.export_file(request.user, job, name)
    except StudyError as exc:
        raise Http404(str(exc)) from exc
    return FileResponse(path.open("rb"), as_attachment=True, filename=name)


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: the first acceptance signs the participant in and records the
    recruitment ids; after that the link is bound to that account and signs nobody in."""
    try:
        invitation = participants.resolve(token)
        if request.method == "GET":
            participants.refuse_if_used(invitation)
            return render(request, "studies/join.html", {"invitation": invitation, "token": token,
                                                         "query": request.GET.urlencode()})
        participant = participants.accept(token, request.GET)
    except InvitationUsed as used:
        if request.user.is_authenticated and request.user.pk == used.user_id:
            return redirect("studies:me")
        return render(request, "studies/join.html", {"error": str(used), "used": True}, status=403)
    except StudyError as exc:
        return render(request, "studies/join.html", {"error": str(exc)}, status=400)
    login(request, participant.user, backend="django.contrib.auth.backends.ModelBackend")
    participants.bind_session(invitation, request.session.session_key)
    return redirect("studies:me")


@login_required
@require_http_methods(["GET", "POST"])
def me(request: HttpRequest) -> HttpResponse:
    """A participant's own page: consent, and completion codes of finished attempts."""
    participant = Participant.objects.filter(user=request.user).select_related("study").first()
    if participant is None:
        raise Http404("you are not a participant in any study")
    if request.method == "POST":
        form = forms.ConsentForm(request.POST)
        if not form.is_valid():
            messages.error(request, forms.errors_text(form))
            return redirect("studies:me")
        try:
            participants.give_consent(request.user, participant, form.cleaned_data["version"])
        except StudyError as exc:
            messages.error(request, str(exc))
        return redirect("studies:me")
    mine = my_study(request.user)
    return render(request, "studies/me.html", {"participant": mine.participant, "consent": mine.consent,
                                               "needs_consent": mine.needs_consent, "attempts": mine.attempts})


def permission_denied_as_403(view):
    """Wrap a view so a StudyPermissionDenied becomes a 403 page naming the refusal."""
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except StudyPermissionDenied as exc:
            return HttpResponse(str(exc), status=403, content_type="text/plain")
    wrapped.__name__ = view.__name__
    return wrapped

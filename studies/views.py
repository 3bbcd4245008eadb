"""Study views: validate input, call one service function, render or redirect.

Service errors become messages (bad input, wrong state: 400 for htmx requests) and
permission errors (:class:`~studies.errors.StudyPermissionDenied`) become the site's
403 page, which names the refusal; every study is looked up by id, and the service
checks the user's role in that study.
"""
from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.forms import Form
from django.http import FileResponse, Http404, HttpResponse, HttpResponseBadRequest
from django.http import HttpRequest as DjangoRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from . import (
    assignment,
    attempts,
    bulk,
    coaching,
    design,
    entry,
    export_jobs,
    forms,
    participants,
    pay,
    refill,
    rehearsal,
)
from .errors import InvitationUsed, LinkRefused, StudyError, StudyPermissionDenied
from .exports import zip_bytes
from .figures import Filters
from .forest import forest_svg
from .leaderboard import leaderboard
from .models import Attempt, ExportJob, Invitation, Participant, Study
from .monitor import monitor_rows, reassignment_choices
from .overview import audit_log, my_study, study_overview
from .permissions import Action, can, can_create_studies, require, visible_studies
from .wording import counted


def _study(pk: int) -> Study:
    return get_object_or_404(Study, pk=pk)


def _staff_study(request: HttpRequest, pk: int) -> Study:
    """The study, for a user who holds a staff role in it; anyone else gets a 403 before
    their form is even read (each service then checks the specific permission)."""
    study = _study(pk)
    require(request.user, study, Action.VIEW)
    return study


class HttpRequest(DjangoRequest):
    """A request as the views see it: django-htmx's middleware adds ``htmx``."""

    htmx: HtmxDetails


def _back(study: Study, anchor: str = "") -> HttpResponse:
    return redirect(reverse("studies:detail", args=[study.pk]) + (f"#{anchor}" if anchor else ""))


def _fail(request: HttpRequest, study: Study, message: str, anchor: str = "") -> HttpResponse:
    if request.htmx:
        return HttpResponseBadRequest(message)
    return _refused(request, message, reverse("studies:detail", args=[study.pk]), anchor)


def _refused(request: HttpRequest, message: str, page: str, anchor: str = "") -> HttpResponse:
    """The refusal said as a message on ``page`` (opened at ``anchor``), where the form comes
    back filled in as it was sent (:mod:`studies.refill`)."""
    messages.error(request, message)
    refill.keep_posted(request, page)
    return redirect(page + (f"#{anchor}" if anchor else ""))


def _detail(request: HttpRequest, study: Study, status: int = 200, **page_forms: Form) -> HttpResponse:
    """The study page; ``page_forms`` replace its empty forms (a refused form, as it was filled in)."""
    overview = study_overview(request.user, study)
    return render(request, "studies/detail.html", {
        "o": overview, "study": overview.study, "participant_form": forms.ParticipantForm(),
        "entry_form": forms.EntryForm.for_study(study), "refill": refill.take_posted(request), **page_forms},
        status=status)


def _submitted(request: HttpRequest, study: Study, form: Form, anchor: str, act: Callable[[dict], str],
               back: str = "", keep: str = "") -> HttpResponse:
    """A staff form posted from the study page: an invalid form, or an action the study
    refuses (``act`` raises :class:`StudyError`), comes back as its message at ``anchor``
    (or, with ``keep``, the page again with the form as filled in, as the ``keep`` form);
    otherwise ``act(cleaned_data)`` says what was done and the page opens at ``back``
    (``anchor`` unless given)."""
    if form.is_valid():
        try:
            done = act(form.cleaned_data)
        except StudyError as exc:
            error = str(exc)
        else:
            messages.success(request, done)
            return _back(study, back or anchor)
    else:
        error = forms.errors_text(form)
    if keep and not request.htmx:
        messages.error(request, error)
        return _detail(request, study, status=400, **{keep: form})
    return _fail(request, study, error, anchor)


@login_required
@require_GET
def study_list(request: HttpRequest) -> HttpResponse:
    """The studies the user holds a staff role in; a participant is pointed to their own page."""
    pk = request.user.pk  # login_required: never None here
    mine = Participant.objects.filter(user_id=pk) if pk is not None else Participant.objects.none()
    taking_part = [(p.study, participants.my_page_url(p)) for p in mine.select_related("study").order_by("study_id")]
    return render(request, "studies/list.html", {"studies": visible_studies(request.user),
                                                 "taking_part": taking_part})


@login_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    if not can_create_studies(request.user):
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
            messages.success(request, f"Study {study.name!r} created with {counted(study.cells.count(), 'cell')}.")
            return redirect("studies:detail", pk=study.pk)
    return render(request, "studies/new.html", {"form": form})


@login_required
@require_POST
def member_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def add(d: dict) -> str:
        design.add_member_by_username(request.user, study, d["username"], d["role"])
        return f"{d['username']}: role {d['role']} added (any roles they had are kept)."

    return _submitted(request, study, forms.MemberForm(request.POST), "members", add, keep="member_form")


@login_required
@require_POST
def member_remove(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def remove(d: dict) -> str:
        design.remove_member_by_username(request.user, study, d["username"], d["role"])
        return f"{d['username']}: role {d['role']} removed (any other roles they hold are kept)."

    response = _submitted(request, study, forms.MemberForm(request.POST), "members", remove)
    if not can(request.user, study, Action.VIEW):  # they removed their own last team role here
        return redirect("studies:list")
    return response


@login_required
@require_POST
def study_close(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def close(d: dict) -> str:
        design.close_study(request.user, study, d["reason"])
        return ("Study closed: it admits nobody new and creates no new attempt; its open shifts may still be "
                "finished.")

    return _submitted(request, study, forms.ReasonForm(request.POST), "closing", close)


@login_required
@require_POST
def study_reopen(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def reopen(d: dict) -> str:
        design.reopen_study(request.user, study, d["reason"])
        return "Study reopened: it admits participants and creates attempts again."

    return _submitted(request, study, forms.ReasonForm(request.POST), "closing", reopen)


@login_required
@require_POST
def quota_set(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def set_quota(d: dict) -> str:
        cell = get_object_or_404(study.cells, pk=d["cell"])
        design.set_quota(request.user, study, cell, d["quota"])
        return f"Quota of {cell.key} set to {cell.quota}."

    return _submitted(request, study, forms.QuotaForm(request.POST), "assign", set_quota)


@login_required
@require_GET
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _detail(request, _study(pk))


@login_required
@require_POST
def participant_add(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def add(d: dict) -> str:
        participant = participants.add_participant(request.user, study, d["label"], {
            k: d[k] for k in ("years_ecommerce", "role", "platforms") if d[k] not in (None, "")}, email=d["email"])
        return f"Participant {participant.label} added."

    return _submitted(request, study, forms.ParticipantForm(request.POST), "participants", add,
                      keep="participant_form")


@login_required
@require_POST
def invite(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def issue(d: dict) -> str:
        participant = get_object_or_404(Participant, pk=d["participant"], study=study)
        issued = participants.invite(request.user, participant, d["days"] * 24 * 3600)
        link = request.build_absolute_uri(reverse("studies:join", args=[issued.token]))
        if participant.user_id is not None:
            return (f"Invitation link for {participant.label}: {link} ({participant.label} already has an account: "
                    "whoever opens this link is signed in as them, so send it to them alone)")
        unasked = "" if participants.current_consent(study) is not None else (
            f" (the study has no consent text yet: {participant.label} is not asked for consent until you publish one)")
        return f"Invitation link for {participant.label}: {link}{unasked}"

    return _submitted(request, study, forms.InviteForm(request.POST), "participants", issue, keep="invite_form")


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, pk: int, invitation_pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    invitation = get_object_or_404(Invitation, pk=invitation_pk, participant__study=study)

    def revoke(d: dict) -> str:
        participants.revoke(request.user, invitation, d["reason"])
        return "Invitation revoked."

    return _submitted(request, study, forms.RevokeForm(request.POST, invitation_pk=invitation.pk), "participants",
                      revoke, keep="revoke_form")


@login_required
@require_POST
def assign(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def assign_one(d: dict) -> str:
        participant = get_object_or_404(Participant, pk=d["participant"], study=study)
        cell = get_object_or_404(study.cells, pk=d["cell"])
        attempt = assignment.assign(request.user, participant, cell, practice=d["practice"])
        return f"Assigned {cell.key} to {participant.label} (attempt #{attempt.number})."

    return _submitted(request, study, forms.AssignForm(request.POST), "assign", assign_one, back="attempts")


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
        messages.info(request, assignment.why_nothing_assigned(study))
    else:
        messages.success(request, f"Assigned {attempt.cell.key} to {attempt.participant.label} "
                                  f"(attempt #{attempt.number}).")
    return _back(study, "attempts")


def _attempt_action(request: HttpRequest, study: Study, attempt: Attempt, data: dict) -> Attempt:
    action, reason = data["action"], data["reason"] or ""
    if action == "retry":
        return attempts.grant_coached_retry(request.user, attempt, reason)
    if action == "reassign":
        return attempts.reassign(request.user, attempt, data["to"], reason)
    if action == "extend":
        return attempts.extend_deadline(request.user, attempt, data["minutes"], reason)
    if action == "force_end":
        return attempts.force_end(request.user, attempt, reason)
    if action == "invalidate":
        return attempts.invalidate(request.user, attempt, reason)
    return attempts.select(request.user, attempt, reason)


def _acted(action: str, result: Attempt) -> str:
    """What a coordinator's action on an attempt did, as the page says it."""
    done = (f"{action.replace('_', ' ').capitalize()}: {result.cell.key} attempt #{result.number}"
            f" ({result.participant.label}).")
    if action == "extend" and result.shift.deadline is not None:
        done += f" The new deadline is {attempts.when(result.shift.deadline)}."
    return done


@login_required
@require_POST
def attempt_act(request: HttpRequest, pk: int, attempt_pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    attempt = get_object_or_404(Attempt, pk=attempt_pk, study=study)
    return _submitted(request, study, forms.AttemptActionForm(request.POST, study=study), "attempts",
                      lambda d: _acted(d["action"], _attempt_action(request, study, attempt, d)))


@login_required
@require_POST
def monitor_act(request: HttpRequest, pk: int) -> HttpResponse:
    """A coordinator action from the monitor (the form sits outside the live-updated rows)."""
    study = _staff_study(request, pk)
    form = forms.MonitorActionForm(request.POST, study=study)
    if not form.is_valid():
        return _refused(request, forms.errors_text(form), reverse("studies:monitor", args=[study.pk]))
    attempt = get_object_or_404(Attempt, pk=form.cleaned_data["attempt"], study=study)
    try:
        result = _attempt_action(request, study, attempt, form.cleaned_data)
    except StudyError as exc:
        return _refused(request, str(exc), reverse("studies:monitor", args=[study.pk]))
    messages.success(request, _acted(form.cleaned_data["action"], result))
    return redirect("studies:monitor", pk=study.pk)


@login_required
@require_POST
def select_by_rule(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def select(d: dict) -> str:
        chosen = attempts.select_by_rule(request.user, study, d["rule"])
        return f"Selected {counted(len(chosen), 'attempt')} by rule {d['rule']}."

    return _submitted(request, study, forms.SelectRuleForm(request.POST), "attempts", select)


@login_required
@require_GET
def monitor(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    rows = monitor_rows(request.user, study)
    return render(request, "studies/monitor.html", {"study": study, "rows": rows,
                                                    "participants": reassignment_choices(rows),
                                                    "refill": refill.take_posted(request)})


@login_required
@require_GET
def monitor_partial(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    return render(request, "studies/_monitor_rows.html", {"study": study, "rows": monitor_rows(request.user, study)})


@login_required
@require_GET
def leaderboard_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)  # refused before the query is read, so a bad filter tells an outsider nothing
    try:
        filters = Filters.from_mapping({k: v for k, v in request.GET.items() if k.startswith("include_")},
                                       rows_only=True)
    except StudyError as exc:
        return HttpResponseBadRequest(str(exc))
    entries, figures = leaderboard(request.user, study, filters=filters)
    return render(request, "studies/leaderboard.html", {
        "study": study, "entries": entries, "f": figures, "filters": filters,
        "has_models": any(e.kind == "model" for e in entries), "forest": mark_safe(forest_svg(entries))})


@login_required
@require_GET
def leaderboard_svg(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)  # refused before the query is read, so a bad filter tells an outsider nothing
    try:
        filters = Filters.from_mapping({k: v for k, v in request.GET.items() if k.startswith("include_")},
                                       rows_only=True)
    except StudyError as exc:
        return HttpResponseBadRequest(str(exc))
    entries, _figures = leaderboard(request.user, study, filters=filters)
    return HttpResponse(forest_svg(entries), content_type="image/svg+xml")


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
        requested = export_jobs.start_or_join_export(request.user, study, Filters(**form.cleaned_data))
        job = requested.job
        if requested.under_way:  # a double submit, or another coordinator's export with the same filters
            messages.info(request, f"Export {job.pk} with these filters, requested by {job.requested_by}, is already "
                                   f"{job.get_status_display().lower()}: it is the one shown below, so no second "
                                   "export was started; its files appear in its row when it is done.")
        elif job.status == ExportJob.Status.FAILED:  # its task could not be sent
            messages.error(request, f"Export {job.pk} failed: {job.error}.")
        else:
            messages.success(request, f"Export {job.pk} requested.")
        return redirect(reverse("studies:exports", args=[study.pk]) + f"#export-{job.pk}")
    require(request.user, study, Action.EXPORT)
    return render(request, "studies/exports.html", {"study": study, "jobs": study.exports.all()[:20],
                                                    "form": forms.ExportForm()})


@login_required
@require_GET
def export_download(request: HttpRequest, pk: int, job_pk: int, name: str) -> HttpResponse | FileResponse:
    study = _study(pk)
    require(request.user, study, Action.EXPORT)  # before the lookup: a job's number says nothing to outsiders
    job = get_object_or_404(ExportJob, pk=job_pk, study=study)
    try:
        if name == "export.zip":
            data = zip_bytes(export_jobs.export_directory(request.user, job))
            response = HttpResponse(data, content_type="application/zip")
            response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-export-{job.pk}.zip"'
            return response
        opened = export_jobs.export_file(request.user, job, name).open("rb")
    except StudyError as exc:
        raise Http404(str(exc)) from exc
    except FileNotFoundError as exc:  # removed since the job was read (a withdrawal, a newer delivery's swap)
        raise Http404(f"export {job.pk}'s files are no longer there; reload the exports page") from exc
    return FileResponse(opened, as_attachment=True, filename=name)


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: the first acceptance signs the participant in and records the
    recruitment ids; after that the link is bound to that account and signs nobody in."""
    try:
        invitation = participants.resolve(token)
        if request.method == "GET":
            participants.check_link(invitation)  # as accepting does: said before the button
            return render(request, "studies/join.html", {"invitation": invitation, "token": token,
                                                         "query": request.GET.urlencode()})
        participant = participants.accept(token, request.GET)
    except InvitationUsed as used:
        if request.user.is_authenticated and request.user.pk == used.user_id:
            return redirect("studies:me")
        return render(request, "studies/join.html", {"error": str(used), "used": True}, status=403)
    except LinkRefused:  # its message names the person and why: not for whoever holds the link
        return render(request, "studies/join.html", {"error": LinkRefused.shown_to_holder}, status=400)
    except StudyError as exc:
        return render(request, "studies/join.html", {"error": str(exc)}, status=400)
    login(request, participant.user, backend="django.contrib.auth.backends.ModelBackend")
    participants.bind_session(invitation, request.session.session_key)
    return redirect("studies:me")


@login_required
@require_http_methods(["GET", "POST"])
def me(request: HttpRequest) -> HttpResponse:
    """A participant's own page: consent, and completion codes of finished attempts."""
    if not request.user.is_authenticated:  # login_required answered already; this narrows the type
        raise Http404("sign in to see your study page")
    participant = _me(request)
    here = participants.my_page_url(participant)
    if request.method == "POST":
        form = forms.ConsentForm(request.POST)
        if not form.is_valid():
            messages.error(request, forms.errors_text(form))
            return redirect(here)
        try:
            participants.give_consent(request.user, participant, form.cleaned_data["version"])
        except StudyError as exc:
            messages.error(request, str(exc))
        return redirect(here)
    mine = my_study(request.user, participant.study_id)
    if mine is None:
        raise Http404("you are not a participant in any study")
    return render(request, "studies/me.html", {"participant": mine.participant, "consent": mine.consent,
                                               "needs_consent": mine.needs_consent, "attempts": mine.attempts})


# --- the study-level entry link, the participant's finish and return -----------------


@login_required
@require_POST
def entry_settings(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def configure(d: dict) -> str:
        changed = entry.configure(
            request.user, study, entry_open=d["entry_open"], completion_url=d["completion_url"],
            completion_code=d["completion_code"], return_code=d["return_code"], base_pay_cents=d["base_pay_cents"],
            bonus_bands=d["bonus_bands"], fault_compensation_cents=d["fault_compensation_cents"],
            reason=d["reason"], show_threshold=d["show_threshold_to_participants"])
        return ("Study link and pay rule saved." if changed else
                "Nothing changed: the study link and pay rule were already as submitted, so nothing was recorded.")

    return _submitted(request, study, forms.EntryForm(request.POST), "entry", configure, keep="entry_form")


@require_http_methods(["GET", "POST"])
def enter(request: HttpRequest, slug: str) -> HttpResponse:
    """The study URL a recruiting platform hands out (GET shows consent, POST enters)."""
    try:
        study = entry.open_study(slug)
        ids = entry.platform_ids(request.GET)
        known = entry.returning(study, ids)  # a PID the team imported signs in by its invitation
        if known is None:
            entry.refuse_newcomer(study)
    except StudyError as exc:
        return render(request, "studies/enter.html", {"error": str(exc)}, status=400)
    consent = participants.current_consent(study)
    context = {"study": study, "consent": consent, "known": known, "query": request.GET.urlencode()}
    if request.method == "POST":
        form = forms.EnterForm(request.POST)
        if not form.is_valid():
            context["error"] = forms.errors_text(form)
            return render(request, "studies/enter.html", context, status=400)
        try:
            person = entry.enter(study, request.GET, form.cleaned_data["version"])
        except StudyError as exc:
            context["error"] = str(exc)
            return render(request, "studies/enter.html", context, status=400)
        login(request, person.user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("console:briefing")
    return render(request, "studies/enter.html", context)


def _me(request: HttpRequest) -> Participant:
    """The signed-in person's participant: in the study ``?study=<id>`` names (as the
    consent gate's link does, for someone in more than one study), else their first."""
    if request.user.pk is None:
        raise Http404("sign in to see your study page")
    mine = Participant.objects.filter(user_id=request.user.pk).select_related("study")
    named = request.GET.get("study")
    if named is not None:
        if not (named.isascii() and named.isdecimal()):
            raise Http404(f"?study= takes a study number, not {named[:40]!r}; open your study page from its link")
        mine = mine.filter(study_id=int(named))
    participant = mine.first()
    if participant is None:
        raise Http404("you are not a participant in that study" if named is not None
                      else "you are not a participant in any study")
    return participant


@login_required
@require_POST
def me_next(request: HttpRequest) -> HttpResponse:
    participant = _me(request)
    try:
        attempt = assignment.assign_self(participant)
    except StudyError as exc:
        messages.error(request, str(exc))
        return redirect(participants.my_page_url(participant))
    if attempt is None:
        messages.info(request, "No cell is free for you now; thank you. Finish below to return to Prolific.")
        return redirect(participants.my_page_url(participant))
    return redirect("console:shift", pk=attempt.shift_id)


@login_required
@require_GET
def me_complete(request: HttpRequest) -> HttpResponse:
    participant = _me(request)
    done = entry.finish(participant)
    if done.url is None:
        return render(request, "studies/complete.html", {"participant": participant, "missing": done.missing})
    return redirect(done.url)


@login_required
@require_POST
def me_return(request: HttpRequest) -> HttpResponse:
    participant = _me(request)
    if not participant.entered_via_link:
        messages.error(request, "You were invited personally: tell the coordinator if you want to stop.")
        return redirect(participants.my_page_url(participant))
    return redirect(entry.leave(participant))


# --- pay ---------------------------------------------------------------------------


@login_required
@require_GET
def pay_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    rows = pay.proposals(request.user, study)
    return render(request, "studies/pay.html", {"study": study, "rows": rows,
                                               "bands": pay.bands_text(study.bonus_bands),
                                               "without_pid": pay.left_out_of_bonus_file(study),
                                               "refill": refill.take_posted(request)})


@login_required
@require_POST
def pay_approve(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.ReasonForm(request.POST)
    try:
        ids = forms.ids_of(request.POST.getlist("attempt"))
    except forms.forms.ValidationError as exc:
        return _refused(request, " ".join(exc.messages), reverse("studies:pay", args=[study.pk]))
    if not form.is_valid() or not ids:
        return _refused(request, forms.errors_text(form) or "choose at least one attempt to approve",
                        reverse("studies:pay", args=[study.pk]))
    done, refused = 0, []
    found = list(Attempt.objects.filter(study=study, pk__in=ids))
    unknown = sorted(set(ids) - {a.pk for a in found})
    if unknown:
        refused.append(f"no attempt {', '.join(map(str, unknown))} in this study: reload the page and choose again")
    for attempt in found:
        try:
            pay.approve(request.user, attempt, form.cleaned_data["reason"])
            done += 1
        except StudyError as exc:
            refused.append(str(exc))
    if done:
        messages.success(request, f"Approved the pay of {counted(done, 'attempt')}.")
    for text in refused:
        messages.error(request, text)
    return redirect("studies:pay", pk=study.pk)


def _attachment(text: str, name: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_POST
def bonus_file(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    text, _missing = pay.bonus_file(request.user, study)
    return _attachment(text, f"study-{study.pk}-bonus.csv")


@login_required
@require_POST
def payments_file(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    return _attachment(pay.payments_csv(request.user, study), f"study-{study.pk}-payments.csv")


# --- bulk work ---------------------------------------------------------------------


@login_required
@require_POST
def import_participants(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "bulk")
    try:
        reports = bulk.import_participants(request.user, study, form.cleaned_data["file"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "bulk")
    return render(request, "studies/import_report.html", {
        "study": study, "reports": reports, "added": sum(r.ok for r in reports),
        "refused": sum(not r.ok for r in reports), "report_csv": bulk.report_csv(reports)})


@login_required
@require_POST
def invite_many(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.BulkInviteForm(request.POST)
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "bulk")
    try:
        ids = forms.ids_of([form.cleaned_data["participants"], *request.POST.getlist("participant")])
    except forms.forms.ValidationError as exc:
        return _fail(request, study, " ".join(exc.messages), "bulk")
    candidates = study.participants.filter(withdrawn_at=None, is_bot=False)
    people = list(candidates.filter(pk__in=ids) if ids else candidates.filter(user=None))
    try:
        text = bulk.invite_many(request.user, study, people, form.cleaned_data["days"],
                                lambda token: request.build_absolute_uri(reverse("studies:join", args=[token])))
    except StudyError as exc:
        return _fail(request, study, str(exc), "bulk")
    return _attachment(text, f"study-{study.pk}-invitations.csv")


@login_required
@require_POST
def bulk_attempts(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.BulkAttemptForm(request.POST)
    try:
        ids = forms.ids_of(request.POST.getlist("attempt"))
    except forms.forms.ValidationError as exc:
        return _fail(request, study, " ".join(exc.messages), "attempts")
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "attempts")
    chosen = list(Attempt.objects.filter(study=study, pk__in=ids).select_related("cell", "participant", "study"))
    try:
        reports = bulk.act_on_attempts(request.user, study, chosen, form.cleaned_data["action"],
                                       form.cleaned_data["reason"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "attempts")
    for r in reports:
        (messages.success if r.ok else messages.error)(request, f"{r.what}: {r.message}")
    return _back(study, "attempts")


@login_required
@require_POST
def bulk_assign(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    form = forms.BulkAssignForm(request.POST)
    try:
        ids = forms.ids_of(request.POST.getlist("participant"))
    except forms.forms.ValidationError as exc:
        return _fail(request, study, " ".join(exc.messages), "participants")
    if not form.is_valid():
        return _fail(request, study, forms.errors_text(form), "participants")
    people = list(study.participants.filter(pk__in=ids))
    try:
        reports = bulk.assign_many(request.user, study, people, form.cleaned_data["reason"])
    except StudyError as exc:
        return _fail(request, study, str(exc), "participants")
    for r in reports:
        (messages.success if r.ok else messages.error)(request, f"{r.what}: {r.message}")
    return _back(study, "attempts")


@login_required
@require_POST
def withdraw(request: HttpRequest, pk: int, participant_pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    person = get_object_or_404(Participant, pk=participant_pk, study=study)

    def withdraw_one(d: dict) -> str:
        bulk.withdraw(request.user, person, d["reason"])
        return f"{person.label} withdrawn: their data leaves the figures and exports."

    return _submitted(request, study, forms.ReasonForm(request.POST), "participants", withdraw_one)


@login_required
@require_POST
def consent_publish(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def publish(d: dict) -> str:
        consent = design.add_consent_version(request.user, study, d["text"])
        return f"Consent version {consent.version} published; participants will be asked again."

    return _submitted(request, study, forms.ConsentPublishForm(request.POST), "consent", publish,
                      keep="consent_form")


# --- coaching ----------------------------------------------------------------------


@login_required
@require_GET
def participant_page(request: HttpRequest, pk: int, participant_pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    person = get_object_or_404(Participant, pk=participant_pk, study=study)
    return render(request, "studies/participant.html", {"study": study, **coaching.participant_view(
        request.user, person)})


@login_required
@require_GET
def attempt_shift(request: HttpRequest, pk: int, attempt_pk: int) -> HttpResponse:
    study = _staff_study(request, pk)
    attempt = get_object_or_404(Attempt.objects.select_related("shift", "cell", "participant", "study"),
                                pk=attempt_pk, study=study)
    return render(request, "studies/coach_shift.html", {"study": study, **coaching.shift_view(request.user, attempt)})


@login_required
@require_POST
def rehearse(request: HttpRequest, pk: int) -> HttpResponse:
    study = _staff_study(request, pk)

    def schedule(d: dict) -> str:
        playing = rehearsal.schedule(request.user, study, d["bots"], d["skill"])
        fewer = (f" (only {counted(playing, 'place')} {'is' if playing == 1 else 'are'} left under the cells' "
                 "quotas)" if playing < d["bots"] else "")
        return (f"Rehearsal started: {counted(playing, 'rehearsal attempt')}, played by scripted bots{fewer}; the "
                "attempts appear below as they finish (bots are left out of figures by default).")

    return _submitted(request, study, forms.RehearsalForm(request.POST), "rehearsal", schedule, back="attempts")

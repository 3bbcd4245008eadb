"""Study pages: scoping by role, input errors, the coordinator's actions, the join flow, the monitor."""
import re

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from test_studies_support import admin, bot, bot2, cell, coordinator, make_user, other_study, study  # noqa: F401

from studies import assignment, bots, participants
from studies.design import add_consent_version, add_member
from studies.models import Attempt, AuditAction, AuditEvent, Role


@pytest.fixture
def coord_client(client, coordinator):
    client.force_login(coordinator)
    return client


def test_study_list_shows_only_my_studies(coord_client, study, other_study):
    html = coord_client.get("/studies/").content.decode()
    assert "Study A" in html and "Study B" not in html


def test_other_studys_page_is_forbidden_on_the_sites_403_page(coord_client, other_study):
    response = coord_client.get(f"/studies/{other_study.pk}/")
    html = response.content.decode()
    assert response.status_code == 403 and response["Content-Type"].startswith("text/html")
    assert "<h1>Not allowed</h1>" in html and '<a href="/">StoreBench home</a>' in html
    assert '<p class="reason">coord-a may not view the study: they hold no role in this study</p>' in html


def test_anonymous_is_sent_to_sign_in(client, study):
    response = client.get(f"/studies/{study.pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_add_participant_with_bad_years_names_the_field(coord_client, study):
    response = coord_client.post(f"/studies/{study.pk}/participants/", {"label": "P1", "years_ecommerce": "many"},
                                 follow=True)
    assert "Years in e-commerce: Enter a whole number." in response.content.decode()


def test_a_participant_added_by_hand_keeps_the_e_mail_given_and_their_page_shows_it(coord_client, study):
    coord_client.post(f"/studies/{study.pk}/participants/", {"label": "P1", "email": " p1@example.org "})
    person = study.participants.get()
    assert person.email == "p1@example.org"
    html = coord_client.get(f"/studies/{study.pk}/participants/{person.pk}/").content.decode()
    assert '<td id="email">p1@example.org</td>' in html


def test_a_participant_with_a_bad_e_mail_is_refused_and_comes_back_as_typed(coord_client, study):
    response = coord_client.post(f"/studies/{study.pk}/participants/", {"label": "P1", "email": "p1-at-example"})
    html = response.content.decode()
    assert response.status_code == 400 and not study.participants.exists()
    assert "E-mail: Enter a valid email address." in html
    form = html[html.index('id="add-participant"'):].split("</form>")[0]
    assert 'name="email" maxlength="254" value="p1-at-example"' in form


def test_a_refused_participant_comes_back_as_typed(coord_client, study):
    response = coord_client.post(f"/studies/{study.pk}/participants/", {
        "label": "P1", "email": "p1@example.org", "years_ecommerce": "99", "role": "buyer", "platforms": "Etsy"})
    html = response.content.decode()
    assert response.status_code == 400 and not study.participants.exists()
    assert "Years in e-commerce: Ensure this value is less than or equal to 60." in html
    form = html[html.index('id="add-participant"'):].split("</form>")[0]
    assert re.findall(r'name="(\w+)"[^>]* value="([^"]*)"', form)[1:] == [
        ("label", "P1"), ("email", "p1@example.org"), ("years_ecommerce", "99"), ("role", "buyer"),
        ("platforms", "Etsy")]


def test_refused_bonus_bands_come_back_as_typed_and_in_pence(coord_client, study):
    response = coord_client.post(f"/studies/{study.pk}/entry/", {
        "completion_url": "https://example.org/done", "base_pay_cents": 150, "bonus_bands": "0.6-50",
        "fault_compensation_cents": 0, "reason": "pilot pay"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Bonus bands: a bonus band is &#x27;min_score:pence&#x27; (e.g. 0.6:50), not &#x27;0.6-50&#x27;" in html
    form = html[html.index('id="entry-form"'):].split("</form>")[0]
    assert all(f'name="{k}" value="{v}"' in form for k, v in [
        ("completion_url", "https://example.org/done"), ("base_pay_cents", "150"), ("bonus_bands", "0.6-50")])
    study.refresh_from_db()
    assert study.base_pay_cents == 0 and study.bonus_bands == []


def test_a_refused_consent_text_comes_back_as_typed(coord_client, study):
    text = "You agree to take part. " * 900  # 21,600 characters: over the 20,000 allowed
    response = coord_client.post(f"/studies/{study.pk}/consent/", {"text": text})
    html = response.content.decode()
    assert response.status_code == 400 and not study.consent_versions.exists()
    assert "New consent version: Ensure this value has at most 20000 characters (it has 21599)." in html
    form = html[html.index('id="consent-form"'):].split("</form>")[0]
    assert f">{text}</textarea>" in form


def test_a_refused_invitation_comes_back_as_typed_in_its_row(coord_client, study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    other = participants.add_participant(coordinator, study, "P2")
    response = coord_client.post(f"/studies/{study.pk}/invite/", {"participant": person.pk, "days": 120})
    html = response.content.decode()
    assert response.status_code == 400 and not person.invitations.exists()
    assert "Days: Ensure this value is less than or equal to 90." in html
    row, other_row = (html[html.index(f'<tr data-participant="{p.label}"'):].split("</tr>")[0] for p in (person, other))
    assert 'name="days" value="120"' in row and 'name="days" value="7"' in other_row


def test_a_refused_revocation_comes_back_as_typed(coord_client, study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    issued = participants.invite(coordinator, person, 3600)
    reason = "sent to the wrong address " * 20  # 520 characters: over the 500 allowed
    response = coord_client.post(f"/studies/{study.pk}/invitations/{issued.invitation.pk}/revoke/",
                                 {"reason": reason})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Reason: Ensure this value has at most 500 characters (it has 519)." in html
    form = html[html.index(f'/invitations/{issued.invitation.pk}/revoke/'):].split("</form>")[0]
    assert f'name="reason" placeholder="reason" required aria-label="Reason to revoke the invitation of P1" value="{reason}"' in form
    issued.invitation.refresh_from_db()
    assert issued.invitation.revoked_at is None


def test_invite_shows_a_signed_link_that_signs_the_participant_in(coord_client, client, study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    html = coord_client.post(f"/studies/{study.pk}/invite/", {"participant": person.pk, "days": 3},
                             follow=True).content.decode()
    link = re.search(r"http://testserver(/studies/join/[^/]+/)", html).group(1)
    coord_client.logout()
    assert client.get(link).status_code == 200
    response = client.post(link + "?PROLIFIC_PID=pp1&STUDY_ID=st1&SESSION_ID=se1")
    assert response.status_code == 302 and response["Location"] == "/studies/me/"
    person.refresh_from_db()
    assert person.external_ids == {"PROLIFIC_PID": "pp1", "STUDY_ID": "st1", "SESSION_ID": "se1"}
    assert client.get("/studies/me/").status_code == 200


def test_a_participant_from_the_entry_link_gets_the_next_steps_once_and_a_plain_title(coord_client, client,
                                                                                       study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    issued = participants.invite(coordinator, person, 3600)
    coord_client.logout()
    client.post(f"/studies/join/{issued.token}/")
    person.entered_via_link = True  # as a participant who came through the study's entry link
    person.save(update_fields=["entered_via_link"])
    html = client.get("/studies/me/").content.decode()
    title = html[html.index("<title>"):html.index("</title>")]
    assert "<" not in title[len("<title>"):] and "My study" in title
    assert html.count('id="next-steps"') == 1


def test_revoking_a_link_from_the_page_needs_a_reason_and_says_it_is_done(coord_client, client, study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    issued = participants.invite(coordinator, person, 3600)
    url = f"/studies/{study.pk}/invitations/{issued.invitation.pk}/revoke/"
    refused = coord_client.post(url, {"reason": ""}, HTTP_HX_REQUEST="true")
    assert (refused.status_code, refused.content.decode()) == (400, "Reason: This field is required.")
    assert client.get(f"/studies/join/{issued.token}/").status_code == 200, "a refused revocation changes nothing"
    done = coord_client.post(url, {"reason": "sent to the wrong address"})
    assert done.status_code == 302 and done["Location"] == f"/studies/{study.pk}/#participants"
    assert "Invitation revoked." in coord_client.get(done["Location"]).content.decode()
    assert client.get(f"/studies/join/{issued.token}/").status_code != 200


def test_bad_invitation_link_is_explained(client, db):
    response = client.get("/studies/join/not-a-token/")
    assert response.status_code == 400 and "This invitation link is not valid." in response.content.decode()


def test_participant_gives_consent_on_their_page(client, study, admin):
    add_consent_version(admin, study, "Please read this.")
    person = participants.add_participant(admin, study, "P1", user=make_user("p1"))
    client.force_login(person.user)
    assert "Please read this." in client.get("/studies/me/").content.decode()
    client.post("/studies/me/", {"version": 1, "agree": "on"})
    person.refresh_from_db()
    assert person.consent_version.version == 1


def test_assign_form_reports_a_double_assignment(coord_client, study, bot, cell):
    cell.quota = 2
    cell.save()
    coord_client.post(f"/studies/{study.pk}/assign/", {"participant": bot.pk, "cell": cell.pk})
    html = coord_client.post(f"/studies/{study.pk}/assign/", {"participant": bot.pk, "cell": cell.pk},
                             follow=True).content.decode()
    assert "participant bot-1 already has an open attempt on cell steady/7 (attempt #1, assigned)" in html


def test_action_without_reason_is_refused_and_not_logged(coord_client, study, bot, cell):
    attempt = assignment.assign(bot.study.created_by, bot, cell)
    html = coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/", {"action": "invalidate", "reason": ""},
                             follow=True).content.decode()
    assert "a reason is required to invalidate an attempt" in html
    assert not AuditEvent.objects.filter(action=AuditAction.INVALIDATED).exists()


def test_extend_without_minutes_names_the_field(coord_client, study, bot, cell):
    attempt = assignment.assign(bot.study.created_by, bot, cell)
    html = coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/", {"action": "extend", "reason": "x"},
                             follow=True).content.decode()
    assert "Minutes: Give the minutes to move the deadline by. A deadline moves by 1 to 720 minutes at a time " \
           "(a negative number shortens it)." in html


def test_extend_by_too_many_minutes_says_the_range_once(coord_client, study, bot, cell):
    attempt = assignment.assign(bot.study.created_by, bot, cell)
    html = coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/",
                             {"action": "extend", "minutes": 99999, "reason": "x"}, follow=True).content.decode()
    assert "Minutes: A deadline moves by 1 to 720 minutes at a time (a negative number shortens it). 99999 is " \
           "too many.</" in html


def test_extend_by_zero_minutes_says_it_changes_nothing(coord_client, study, bot, cell):
    attempt = assignment.assign(bot.study.created_by, bot, cell)
    html = coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/",
                             {"action": "extend", "minutes": 0, "reason": "x"}, follow=True).content.decode()
    assert "Minutes: 0 minutes does not change the deadline. A deadline moves by 1 to 720 minutes" in html


def test_extending_a_deadline_says_the_new_deadline(coord_client, study, bot, cell, coordinator):
    from shifts.lifecycle import begin_shift
    from shifts.models import Shift
    from studies.attempts import when

    attempt = assignment.assign(coordinator, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    html = coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/",
                             {"action": "extend", "minutes": 30, "reason": "fire alarm"}, follow=True).content.decode()
    assert f"The new deadline is {when(Shift.objects.get(pk=attempt.shift_id).deadline)}." in html


def test_coordinator_grants_a_coached_retry_from_the_page(coord_client, study, bot, cell, coordinator):
    done = bots.play(assignment.assign(coordinator, bot, cell), "novice")
    coord_client.post(f"/studies/{study.pk}/attempts/{done.pk}/", {"action": "retry", "reason": "slow down"})
    retry = Attempt.objects.get(replaces=done)
    assert (retry.coach, retry.coach_note) == (coordinator, "slow down")


def test_researcher_sees_leaderboard_with_anchors(client, study, admin):
    researcher = make_user("res")
    add_member(admin, study, researcher, Role.RESEARCHER)
    client.force_login(researcher)
    html = client.get(f"/studies/{study.pk}/leaderboard/").content.decode()
    assert "smart-triage" in html and "Humans (equal-cell mean)" in html


def test_leaderboard_counts_one_person_in_the_singular(client, study, admin, bot, cell):
    from studies import attempts

    attempts.select(admin, bots.play(assignment.assign(admin, bot, cell), "clerk"), "the only attempt",
                    include_bots=True)
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert "Participants (bots included): 1 completed attempt under these filters; 1 person with a selected " \
           "attempt; practice excluded." in html


def test_researcher_may_not_use_the_monitor(client, study, admin):
    researcher = make_user("res")
    add_member(admin, study, researcher, Role.RESEARCHER)
    client.force_login(researcher)
    assert client.get(f"/studies/{study.pk}/monitor/").status_code == 403


def test_monitor_shows_a_running_shift(coord_client, study, bot, cell, coordinator):
    from shifts.lifecycle import begin_shift

    attempt = assignment.assign(coordinator, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    html = coord_client.get(f"/studies/{study.pk}/monitor/rows/").content.decode()
    assert f'data-attempt="{attempt.pk}"' in html and "1 of 60" in html and "low" in html


def test_monitor_action_starts_on_no_shift_and_is_refused_if_left(coord_client, study, bot, cell, coordinator):
    attempt = assignment.assign(coordinator, bot, cell)
    html = coord_client.get(f"/studies/{study.pk}/monitor/").content.decode()
    assert '<select name="attempt" id="monitor-attempt" required><option value="" selected>Choose a shift…</option><option value' in html
    response = coord_client.post(f"/studies/{study.pk}/monitor/act/",
                                 {"attempt": "", "action": "force_end", "reason": "wrong row"}, follow=True)
    assert "Shift: choose the shift to act on" in response.content.decode()
    attempt.refresh_from_db()
    assert attempt.status == "assigned" and not AuditEvent.objects.filter(action=AuditAction.FORCE_ENDED).exists()


def test_the_study_page_names_the_cells_whose_task_was_removed(coord_client, study):
    from studies.models import Cell

    detail = coord_client.get(f"/studies/{study.pk}/").content.decode()
    assert 'id="tasks-missing"' not in detail
    Cell.objects.filter(study=study, task_id="steady", seed=7).update(task_id="retired-task")
    detail = coord_client.get(f"/studies/{study.pk}/").content.decode()
    assert ('<p class="error" id="tasks-missing" role="alert"><strong>Tasks missing:</strong> retired-task/7: this '
            "cell's task cannot be loaded on this server (removed, renamed or broken since the study was set up). "
            "Automatic assignment leaves it out, and its "
            "running shifts cannot be opened or ended until the task files are installed again.</p>") in detail


def test_force_end_and_invalidate_ask_to_confirm_naming_participant_and_cell(coord_client, study, bot, cell,
                                                                            coordinator):
    attempt = assignment.assign(coordinator, bot, cell)
    monitor = coord_client.get(f"/studies/{study.pk}/monitor/").content.decode()
    assert "confirm((act === 'force_end' ? 'Force end' : 'Invalidate')" in monitor
    assert f'<option value="{attempt.pk}" data-confirm="attempt #1 of bot-1 on cell steady/7">' in monitor
    detail = coord_client.get(f"/studies/{study.pk}/").content.decode()
    row = detail[detail.index(f'<tr data-attempt="{attempt.pk}"'):].split("</tr>")[0]
    assert ("['force_end', 'invalidate'].indexOf(act) < 0 || confirm((act === 'force_end' ? 'Force end' : "
            "'Invalidate') + ' attempt #1 of bot\\u002D1 on cell steady/7? This cannot be undone.')") in row
    bulk = detail[detail.index('id="bulk-attempts"'):].split(">")[0]
    assert "!== 'invalidate' || confirm('Invalidate ' + n + ' chosen attempt'" in bulk


def test_withdraw_asks_to_confirm_naming_the_participant(coord_client, study, coordinator):
    participants.add_participant(coordinator, study, "Ann-Marie")
    detail = coord_client.get(f"/studies/{study.pk}/").content.decode()
    form = detail[detail.index('<tr data-participant="Ann-Marie"'):].split("</tr>")[0]
    assert ("onsubmit=\"return confirm('Withdraw participant Ann\\u002DMarie? Their data leaves the figures and "
            "exports and their unstarted attempts close. This cannot be undone.')\"") in form


def test_revoke_asks_to_confirm_naming_the_invitation(coord_client, study, coordinator):
    person = participants.add_participant(coordinator, study, "Ann-Marie")
    invitation = participants.invite(coordinator, person).invitation
    detail = coord_client.get(f"/studies/{study.pk}/").content.decode()
    form = detail[detail.index(f"/invitations/{invitation.pk}/"):].split(">")[0]
    assert "onsubmit=\"return confirm('Revoke the invitation of Ann\\u002DMarie issued " in form
    assert "Its link stops working. This cannot be undone.')\"" in form


def test_the_invitations_table_shows_when_a_link_expires(coord_client, study, coordinator):
    from django.utils import timezone

    person = participants.add_participant(coordinator, study, "Ann")
    invitation = participants.invite(coordinator, person, 7 * 24 * 3600).invitation
    detail = coord_client.get(f"/studies/{study.pk}/").content.decode()
    expires = timezone.localtime(invitation.created_at + timezone.timedelta(days=7)).strftime("%Y-%m-%d %H:%M")
    assert f"<td>{expires} (valid 7 days)</td>" in detail and "604800" not in detail


def test_header_links_to_the_staff_pages_only_for_who_may_open_them(client, coord_client, study, admin, bot):
    def links(c):
        header = c.get("/").content.decode().split("</header>")[0]
        return [label for label in ("Studies", "Explorer", "Admin") if f">{label}</a>" in header]

    assert links(coord_client) == ["Studies"]
    assert coord_client.get("/studies/").status_code == 200
    client.force_login(admin)
    assert links(client) == ["Studies", "Explorer", "Admin"]
    client.force_login(bot.user)
    assert links(client) == []


def test_export_download_is_forbidden_for_a_reviewer(client, study, admin):
    reviewer = make_user("rev")
    add_member(admin, study, reviewer, Role.REVIEWER)
    client.force_login(reviewer)
    assert client.get(f"/studies/{study.pk}/exports/").status_code == 403


def test_an_export_download_says_nothing_of_which_jobs_exist_to_a_reviewer(client, study, admin, settings, tmp_path,
                                                                           django_capture_on_commit_callbacks):
    from studies.export_jobs import request_export

    settings.STOREBENCH_EXPORT_ROOT = tmp_path / "exports"
    with django_capture_on_commit_callbacks(execute=True):
        job = request_export(admin, study)
    reviewer = make_user("rev2")
    add_member(admin, study, reviewer, Role.REVIEWER)
    client.force_login(reviewer)
    assert [client.get(f"/studies/{study.pk}/exports/{pk}/attempts.csv").status_code
            for pk in (job.pk, job.pk + 1000)] == [403, 403]


def test_an_export_whose_files_went_away_is_a_404_that_says_to_reload(client, study, admin, settings, tmp_path,
                                                                      django_capture_on_commit_callbacks):
    import shutil

    from studies.export_jobs import request_export
    from studies.exports import job_dir

    settings.STOREBENCH_EXPORT_ROOT = tmp_path / "exports"
    with django_capture_on_commit_callbacks(execute=True):
        job = request_export(admin, study)
    client.force_login(admin)
    assert client.get(f"/studies/{study.pk}/exports/{job.pk}/attempts.csv").status_code == 200
    shutil.rmtree(job_dir(job.pk))
    for name in ("attempts.csv", "export.zip"):
        assert client.get(f"/studies/{study.pk}/exports/{job.pk}/{name}").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_monitor_websocket_sends_rows_to_a_coordinator():
    from django.contrib.auth import get_user_model

    from config.asgi import application
    from studies.design import create_study

    admin_user = get_user_model().objects.create_superuser("ws-admin", password="pw-ws-admin-1")
    study = create_study(admin_user, "WS", ["steady"], [7])

    async def run():
        from django.test import AsyncClient
        c = AsyncClient()
        await c.aforce_login(admin_user)
        cookie = f"sessionid={c.cookies['sessionid'].value}"
        comm = WebsocketCommunicator(application, f"/ws/studies/{study.pk}/monitor/",
                                     headers=[(b"cookie", cookie.encode()), (b"origin", b"http://127.0.0.1"),
                                              (b"host", b"127.0.0.1")])
        connected, _ = await comm.connect()
        message = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return connected, message

    connected, message = async_to_sync(run)()
    assert connected and "No running shifts." in message["html"]


def test_monitor_deadline_risk_rules():
    from studies.monitor import deadline_risk

    assert [deadline_risk(None, 10, None), deadline_risk(-1, 10, None), deadline_risk(1800, 10, None),
            deadline_risk(8 * 3600, 50, 1200.0), deadline_risk(8 * 3600, 10, 2400.0),
            deadline_risk(8 * 3600, 10, 600.0)] == ["not started", "overdue", "high", "high", "medium", "low"]


def test_staff_creates_a_study_from_the_form(client, admin):
    client.force_login(admin)
    response = client.post("/studies/new/", {"name": "Form study", "tasks": ["steady", "liquidity"],
                                             "seeds": "7 11 13", "quota": 2, "policy": "adaptive", "random_seed": 1})
    from studies.models import Study
    study = Study.objects.get(name="Form study")
    assert response["Location"] == f"/studies/{study.pk}/"
    assert (study.cells.count(), study.policy, set(study.cells.values_list("quota", flat=True))) == (6, "adaptive", {2})


def test_study_form_names_bad_seeds(client, admin):
    client.force_login(admin)
    html = client.post("/studies/new/", {"name": "X", "tasks": ["steady"], "seeds": "seven", "quota": 1,
                                         "policy": "balanced", "random_seed": 0}).content.decode()
    assert "Seeds: seeds must be whole numbers separated by spaces" in html
    html = client.post("/studies/new/", {"name": "X", "tasks": ["steady"], "seeds": "7 -1", "quota": 1,
                                         "policy": "balanced", "random_seed": 0}).content.decode()
    assert "Seeds: -1 is not a task seed: give a whole number from 0 to 2,147,483,647" in html


def test_study_form_refuses_a_random_seed_out_of_range_by_name(client, admin):
    client.force_login(admin)
    html = client.post("/studies/new/", {"name": "X", "tasks": ["steady"], "seeds": "7", "quota": 1,
                                         "policy": "balanced", "random_seed": "-99999999999999999999999"}
                       ).content.decode()
    assert "Random seed: give a whole number from 0 to 2,147,483,647" in html
    assert 'value="-99999999999999999999999"' in html


def test_non_staff_cannot_create_a_study(client, db):
    client.force_login(make_user("plain"))
    html = client.post("/studies/new/", {"name": "X", "tasks": ["steady"], "seeds": "7", "quota": 1,
                                         "policy": "balanced", "random_seed": 0}).content.decode()
    assert "plain may not create studies (staff only)" in html


def test_admin_adds_a_reviewer_by_username(client, admin, study):
    make_user("rita")
    client.force_login(admin)
    client.post(f"/studies/{study.pk}/members/", {"username": "rita", "role": "reviewer"})
    assert study.memberships.filter(user__username="rita", role="reviewer").exists()


def test_coordinator_cannot_add_team_members(coord_client, study):
    make_user("rita")
    response = coord_client.post(f"/studies/{study.pk}/members/", {"username": "rita", "role": "admin"})
    assert response.status_code == 403


def test_unknown_username_is_named(client, admin, study):
    client.force_login(admin)
    html = client.post(f"/studies/{study.pk}/members/", {"username": "ghost", "role": "reviewer"},
                       follow=True).content.decode()
    assert "no user named &#x27;ghost&#x27;" in html


def test_quota_is_set_from_the_cells_panel(coord_client, study, cell):
    coord_client.post(f"/studies/{study.pk}/quota/", {"cell": cell.pk, "quota": 3})
    cell.refresh_from_db()
    assert cell.quota == 3


@pytest.mark.django_db(transaction=True)
def test_monitor_websocket_refuses_a_coordinator_of_another_study():
    from django.contrib.auth import get_user_model
    from django.test import AsyncClient

    from config.asgi import application
    from studies.design import create_study

    root = get_user_model().objects.create_superuser("ws-root", password=None)
    study_b = create_study(root, "WS-B", ["steady"], [7])
    outsider = make_user("ws-outsider")
    add_member(root, create_study(root, "WS-A", ["steady"], [7]), outsider, Role.COORDINATOR)

    async def run():
        c = AsyncClient()
        await c.aforce_login(outsider)
        comm = WebsocketCommunicator(application, f"/ws/studies/{study_b.pk}/monitor/",
                                     headers=[(b"cookie", f"sessionid={c.cookies['sessionid'].value}".encode()),
                                              (b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")])
        connected, code = await comm.connect()
        return connected, code

    assert async_to_sync(run)() == (False, 4403)


def test_the_screen_reader_only_text_the_pages_use_is_hidden_by_the_study_stylesheet(coord_client, study):
    from pathlib import Path

    from django.conf import settings

    assert 'class="sr"' in coord_client.get(f"/studies/{study.pk}/").content.decode()
    css = (Path(settings.BASE_DIR) / "static" / "studies" / "studies.css").read_text()
    rule = re.search(r"(?m)^\.sr \{([^}]*)\}", css)
    assert rule is not None
    assert all(part in rule.group(1) for part in ("position: absolute", "width: 1px", "height: 1px",
                                                  "overflow: hidden", "clip: rect(0, 0, 0, 0)"))


def test_a_second_role_is_added_and_said_so_and_a_role_held_already_is_refused(client, admin, study, coordinator):
    client.force_login(admin)
    url = f"/studies/{study.pk}/members/"
    added = client.post(url, {"username": coordinator.username, "role": Role.REVIEWER}, follow=True)
    assert f"{coordinator.username}: role reviewer added (any roles they had are kept)." in added.content.decode()
    again = client.post(url, {"username": coordinator.username, "role": Role.REVIEWER}, follow=True)
    assert (f"{coordinator.username} already has the role reviewer in this study; nothing was changed"
            in again.content.decode())
    assert AuditEvent.objects.filter(study=study, action=AuditAction.MEMBER_ADDED,
                                     detail__role=Role.REVIEWER).count() == 1


def test_a_second_invitation_for_someone_with_an_account_says_it_signs_in_as_them(client, study, coordinator):
    person = participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "P1"), 3600).token, {})
    second = participants.invite(coordinator, person, 3600)
    html = client.get(f"/studies/join/{second.token}/").content.decode()
    assert "who already has an account" in html and "accepting signs you in as them" in html
    assert "creates your participant account" not in html


def test_a_link_issued_for_someone_with_an_account_warns_the_coordinator(coord_client, study, coordinator):
    person = participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "P1"), 3600).token, {})
    html = coord_client.post(f"/studies/{study.pk}/invite/", {"participant": person.pk, "days": 3},
                             follow=True).content.decode()
    assert re.search(r"Invitation link for P1: http://testserver/studies/join/[^/]+/ \(P1 already has an account: "
                     r"whoever opens this link is signed in as them, so send it to them alone\)", html)


def test_a_first_link_carries_no_account_warning(coord_client, study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    html = coord_client.post(f"/studies/{study.pk}/invite/", {"participant": person.pk, "days": 3},
                             follow=True).content.decode()
    assert "Invitation link for P1: http://testserver/studies/join/" in html and "already has an account" not in html


def test_a_participant_sees_a_team_ended_shift_as_such_without_the_coordinators_note(client, study, admin, bot, cell):
    from shifts.lifecycle import begin_shift
    from studies import attempts

    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    attempts.force_end(admin, attempt, "rerun on steady seed 7")
    client.force_login(bot.user)
    home = client.get("/").content.decode()
    page = client.get(f"/shifts/{attempt.shift_id}/").content.decode()
    assert "(ended by the study team)" in home
    assert "<tr><th>Ended</th><td>ended by the study team</td></tr>" in page
    assert "steady seed 7" not in home + page and "ended by the coordinator" not in home + page


def test_the_assign_form_offers_no_withdrawn_participant(coord_client, study, admin, bot, bot2):
    from studies import bulk

    bulk.withdraw(admin, bot2, "asked to leave")
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    options = re.findall(r'<option value="\d+">([^<]*)</option>', html.split('<select name="participant">')[1]
                         .split("</select>")[0])
    assert options == ["bot-1 (bot)"]


def test_a_withdrawn_persons_selected_attempt_is_not_counted_on_the_study_page(coord_client, study, admin, bot,
                                                                                  cell):
    from studies import bulk

    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    Attempt.objects.filter(pk=attempt.pk).update(is_selected=True, selection_rule="manual")
    before = coord_client.get(f"/studies/{study.pk}/").content.decode()
    assert " · 1 selected · " in before and "<td>steady/7</td>" in before
    bulk.withdraw(admin, bot, "asked to leave")
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    assert " · 0 selected · " in html
    row = re.search(r"<tr><td>steady/7</td>(.*?)</tr>", html).group(1)
    assert row.endswith("<td>0</td>")  # the cells table's Selected column
    assert "✔ manual <small>(withdrawn: not counted)</small>" in html


def test_the_pay_page_names_who_the_bonus_file_leaves_out_and_an_unknown_attempt(coord_client, study, admin, bot,
                                                                                  cell):
    from studies import pay

    study.bonus_bands = [["0.0", 50]]
    study.base_pay_cents = 100
    study.save()
    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    pay.approve(admin, attempt, "played it")
    html = coord_client.get(f"/studies/{study.pk}/pay/").content.decode()
    assert ('<p class="warning" id="without-pid">Left out of the bonus file: bot-1, owed an approved bonus or '
            "compensation but with no PROLIFIC_PID. Pay them another way.</p>") in html
    response = coord_client.post(f"/studies/{study.pk}/pay/approve/", {"attempt": [str(attempt.pk + 999)],
                                                                       "reason": "typo"}, follow=True)
    assert f"no attempt {attempt.pk + 999} in this study: reload the page and choose again" in \
        response.content.decode()


def test_a_completion_code_equal_to_the_return_code_is_refused_and_the_form_kept(coord_client, study):
    response = coord_client.post(f"/studies/{study.pk}/entry/", {
        "completion_url": "https://example.org/done", "completion_code": "SAME", "return_code": "SAME",
        "base_pay_cents": 0, "bonus_bands": "", "fault_compensation_cents": 0, "reason": "set up"}, follow=True)
    html = response.content.decode()
    assert "the completion code and the return code are both &#x27;SAME&#x27;: change one of them" in html
    assert 'name="completion_code"' in html and 'value="SAME"' in html
    study.refresh_from_db()
    assert study.completion_code != "SAME"


def test_a_code_over_40_characters_is_refused_saying_the_limit(coord_client, study):
    response = coord_client.post(f"/studies/{study.pk}/entry/", {
        "completion_url": "https://example.org/done", "completion_code": "A" * 41, "base_pay_cents": 0,
        "bonus_bands": "", "fault_compensation_cents": 0, "reason": "set up"}, follow=True)
    assert "at most 40 letters, digits, &#x27;_&#x27; or &#x27;-&#x27;" in response.content.decode()


def test_an_export_with_no_attempt_row_names_every_reason_attempts_are_left_out(client, study, admin):
    from studies.models import ExportJob

    ExportJob.objects.create(study=study, requested_by=admin, status=ExportJob.Status.DONE, progress=100,
                             row_counts={"attempts.csv": 0})
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/exports/").content.decode()
    assert ("no attempt passed this export's filters: bot, practice and invalid attempts (and coached retries "
            "when unticked) are left out unless you tick them above and export again, and withdrawn participants' "
            "attempts always are") in html


def test_a_participant_who_left_sees_their_closed_shift_as_their_own_doing(client, study, admin, bot, cell):
    from studies import bulk

    attempt = assignment.assign(admin, bot, cell)
    bulk.withdraw(admin, bot, "moved away")
    client.force_login(bot.user)
    home = client.get("/").content.decode()
    assert attempt.shift_id and "(the participant withdrew)" in home and "ended by the study team" not in home


def test_a_study_without_a_consent_text_says_nobody_is_asked(coord_client, study, coordinator, admin):
    person = participants.add_participant(coordinator, study, "P1")
    page = coord_client.get(f"/studies/{study.pk}/").content.decode()
    assert '<p class="warning" id="no-consent"><strong>No consent text yet:</strong>' in page
    response = coord_client.post(f"/studies/{study.pk}/invite/", {"participant": person.pk, "days": 7}, follow=True)
    assert ("(the study has no consent text yet: P1 is not asked for consent until you publish one)"
            in response.content.decode())
    add_consent_version(admin, study, "You run a simulated store.")
    assert 'id="no-consent"' not in coord_client.get(f"/studies/{study.pk}/").content.decode()


def _offered(client, study, attempt):
    html = client.get(f"/studies/{study.pk}/").content.decode()
    row = html[html.index(f'<tr data-attempt="{attempt.pk}"'):].split("</tr>")[0]
    return re.findall(r'<option value="(\w+)">', row.split('name="action"')[1].split("</select>")[0]) \
        if 'name="action"' in row else row


def test_each_attempt_row_offers_only_what_its_status_allows(coord_client, study, admin, bot, cell):
    from studies import attempts

    attempt = assignment.assign(admin, bot, cell)
    assert _offered(coord_client, study, attempt) == ["reassign", "force_end", "invalidate"]
    bots.play(attempt, "clerk")
    assert _offered(coord_client, study, attempt) == ["retry", "reassign", "invalidate"]  # a bot's is not selected
    attempt.refresh_from_db()
    attempt.is_bot = False  # as a person's completed attempt
    assert [a for a, _ in attempts.row_actions(attempt, can_manage=False, can_select=True)] == ["select"]
    attempts.invalidate(admin, attempt, "rehearsal only")
    assert '<span class="muted" title="no action of yours applies to this attempt as it stands">' in _offered(
        coord_client, study, attempt)


def test_no_row_offers_a_coached_retry_the_service_would_refuse(coord_client, study, admin, bot, cell):
    from studies import attempts
    from studies.design import close_study

    first = assignment.assign(admin, bot, cell)
    bots.play(first, "clerk")
    assert "retry" in _offered(coord_client, study, first)
    retry = attempts.grant_coached_retry(admin, Attempt.objects.get(pk=first.pk), "ship the oldest first")
    assert _offered(coord_client, study, first) == ["reassign", "invalidate"]  # the retry is open on that cell
    bots.play(retry, "clerk")
    assert "retry" in _offered(coord_client, study, first)
    close_study(admin, study, "done")
    assert _offered(coord_client, study, first) == ["invalidate"]  # a closed study takes no new attempt


def test_no_row_offers_a_coached_retry_to_someone_who_left(coord_client, study, admin, bot, cell):
    from studies import bulk

    attempt = assignment.assign(admin, bot, cell)
    bots.play(attempt, "clerk")
    bulk.withdraw(admin, bot, "moved away")
    assert "retry" not in _offered(coord_client, study, attempt)


def test_a_long_consent_text_can_be_read_whole_on_the_study_page(coord_client, study, admin):
    text = "I agree to take part. " * 10 + "The last sentence says what happens to my data."
    add_consent_version(admin, study, text)
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    versions = html[html.index('<ul id="consent-versions">'):].split("</ul>")[0]
    assert "<details><summary>Version 1 (" in versions
    assert "The last sentence says what happens to my data.</p></div></details>" in versions


def test_the_cells_table_says_the_places_taken_and_how_many_by_rehearsal_bots(coord_client, study, admin, bot, cell):
    assignment.assign(admin, bot, cell)
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    row = html[html.index("<tr><td>steady/7</td>"):].split("</tr>")[0]
    assert "<td>1 of 1 taken <small>(1 by rehearsal bot)</small></td>" in row


def test_an_e_mail_longer_than_its_column_is_refused_not_a_server_error(coord_client, study):
    address = "p" * 64 + "@" + ".".join(["d" * 60] * 4) + ".org"  # valid, and 312 characters
    response = coord_client.post(f"/studies/{study.pk}/participants/", {"label": "P1", "email": address})
    assert response.status_code == 400 and not study.participants.exists()
    assert "E-mail: Ensure this value has at most 254 characters (it has 312)." in response.content.decode()


def test_a_cell_on_hold_says_so_in_the_cells_table(coord_client, study, admin, cell):
    from studies.design import set_quota

    set_quota(admin, study, cell, 0)
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    row = html[html.index("<tr><td>steady/7</td>"):].split("</tr>")[0]
    assert "<td>on hold (quota 0)</td>" in row


def test_a_running_attempt_past_its_deadline_offers_what_a_timed_out_one_does(coord_client, study, admin, bot, cell):
    from datetime import timedelta

    from django.utils import timezone

    from shifts.models import Shift

    attempt = assignment.assign(admin, bot, cell)
    now = timezone.now()  # the sweep has not come by yet: extending or ending it would be refused
    Shift.objects.filter(pk=attempt.shift_id).update(status=Shift.Status.ACTIVE, started_at=now - timedelta(hours=12),
                                                     deadline=now - timedelta(minutes=1))
    assert _offered(coord_client, study, attempt) == ["retry", "reassign", "invalidate"]

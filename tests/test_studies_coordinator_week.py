"""The coordinator's real week: the study link, pay, bulk work, withdrawal, coaching, research data."""
import csv
import io
from urllib.parse import parse_qs, urlparse

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from test_studies_support import admin, bot, bot2, cell, coordinator, study  # noqa: F401

from shifts import briefing, ending, lifecycle
from shifts.briefing import BRIEFING_VERSION
from shifts.models import Shift
from studies import assignment, bots, bulk, entry, exports, figures, participants, pay
from studies import attempts as attempt_actions
from studies.design import add_consent_version
from studies.errors import StudyError
from studies.models import Attempt, AttemptStatus, AuditAction, AuditEvent, Participant, PayRecord, Study
from studies.wording import duration_text

IDS = "PROLIFIC_PID=pid0001&STUDY_ID=study42&SESSION_ID=sess1"


@pytest.fixture
def linked(study, coordinator, admin):
    add_consent_version(admin, study, "You run a simulated store for one shift.")
    entry.configure(coordinator, study, entry_open=True, completion_url="https://app.prolific.com/submissions/complete",
                    completion_code="C0MPLETE", return_code="RETURN12", base_pay_cents=500,
                    bonus_bands=pay.parse_bands("0:25, 0.99:900"), fault_compensation_cents=300,
                    reason="open recruitment on Prolific")
    study.refresh_from_db()
    return study


def _enter(client, study, ids=IDS):
    return client.post(f"/studies/s/{study.entry_slug}/?{ids}", {"version": 1, "agree": "on"})


def _play(client, shift_id):
    assert client.post(f"/shifts/{shift_id}/start/").status_code in (200, 302)
    assert client.post(f"/shifts/{shift_id}/end/").status_code in (200, 302)


def test_entry_get_writes_nothing_and_post_creates_the_participant(client, linked):
    response = client.get(f"/studies/s/{linked.entry_slug}/?{IDS}")
    assert response.status_code == 200 and "You run a simulated store" in response.content.decode()
    assert not linked.participants.exists()
    response = _enter(client, linked)
    assert response.status_code == 302 and response["Location"] == "/briefing/"
    person = linked.participants.get()
    assert person.external_ids == {"PROLIFIC_PID": "pid0001", "STUDY_ID": "study42", "SESSION_ID": "sess1"}
    assert person.entered_via_link and person.consent_version.version == 1
    actions = list(AuditEvent.objects.filter(participant=person).values_list("action", flat=True))
    assert actions == [AuditAction.ENTERED, AuditAction.CONSENTED]
    # The same PID again in the same session finds the same person; another session is refused.
    assert _enter(Client(), linked).status_code == 302 and linked.participants.count() == 1
    refused = _enter(Client(), linked, "PROLIFIC_PID=pid0001&STUDY_ID=study42&SESSION_ID=other")
    assert refused.status_code == 400 and "another session" in refused.content.decode()


def test_entry_refuses_a_closed_link_and_a_missing_pid(client, linked, coordinator):
    assert "needs your PROLIFIC_PID" in client.get(f"/studies/s/{linked.entry_slug}/").content.decode()
    assert client.get("/studies/s/not-a-slug/?PROLIFIC_PID=x").status_code == 400
    entry.configure(coordinator, linked, entry_open=False, completion_url=linked.completion_url,
                    completion_code="", return_code="", base_pay_cents=0, bonus_bands=[],
                    fault_compensation_cents=0, reason="study full")
    response = _enter(client, linked)
    assert response.status_code == 400 and "not taking participants" in response.content.decode()
    assert not linked.participants.exists()


def test_configure_needs_a_reason_and_is_audited(linked, coordinator):
    with pytest.raises(StudyError, match="a reason is required"):
        entry.configure(coordinator, linked, entry_open=True, completion_url=linked.completion_url,
                        completion_code="", return_code="", base_pay_cents=1, bonus_bands=[],
                        fault_compensation_cents=0, reason=" ")
    event = AuditEvent.objects.filter(action=AuditAction.ENTRY_CHANGED).get()
    assert event.reason == "open recruitment on Prolific" and event.detail["changed"]["entry_open"] == [False, True]


def test_a_settings_save_that_changes_nothing_is_not_recorded_and_says_so(client, linked, coordinator):
    form = {"entry_open": "on", "completion_url": linked.completion_url, "completion_code": linked.completion_code,
            "return_code": linked.return_code, "base_pay_cents": "500", "bonus_bands": "0:25, 0.99:900",
            "fault_compensation_cents": "300", "reason": "saved again"}
    client.force_login(coordinator)
    page = client.post(f"/studies/{linked.pk}/entry/", form, follow=True).content.decode()
    assert "Nothing changed: the study link and pay rule were already as submitted" in page
    assert AuditEvent.objects.filter(action=AuditAction.ENTRY_CHANGED).count() == 1  # the fixture's only

    # a new completion URL alone is a change, and the audit says what it was
    moved = "https://app.prolific.com/submissions/complete-v2"
    page = client.post(f"/studies/{linked.pk}/entry/", {**form, "completion_url": moved}, follow=True).content.decode()
    assert "Study link and pay rule saved." in page
    event = AuditEvent.objects.filter(action=AuditAction.ENTRY_CHANGED).latest("pk")
    assert event.detail["changed"] == {"completion_url": [linked.completion_url, moved]}


def test_a_participant_asking_for_a_shift_in_a_stale_study_reads_it_is_on_hold(client, linked):
    _enter(client, linked)
    person = linked.participants.get()
    client.post("/briefing/", {"version": BRIEFING_VERSION})
    _play(client, Shift.objects.get(participant=person.user, is_practice=True).pk)
    Study.objects.filter(pk=linked.pk).update(calibration_hash="sha256:old")  # the site's file changed since
    html = client.post("/studies/me/next/", follow=True).content.decode()
    assert ("New shifts in this study are on hold: its scoring changed after the study was set up. "
            "Your coordinator&#x27;s study page says so; ask them what to do next.") in html
    assert "sha256:" not in html and not Attempt.objects.filter(participant=person).exists()


def test_participant_plays_and_is_sent_to_the_completion_url_then_paid(client, linked, coordinator):
    _enter(client, linked)
    person = linked.participants.get()
    assert client.get("/studies/me/complete/").status_code == 200  # nothing finished: no redirect
    assert "Get my next shift" in client.get("/studies/me/").content.decode()
    response = client.post("/studies/me/next/", follow=False)
    assert response.status_code == 302 and response["Location"] == f"/studies/me/?study={linked.pk}"  # briefing 1st
    client.post("/briefing/", {"version": BRIEFING_VERSION})
    _play(client, Shift.objects.get(participant=person.user, is_practice=True).pk)
    response = client.post("/studies/me/next/")
    attempt = Attempt.objects.get(participant=person)
    assert response["Location"] == f"/shifts/{attempt.shift_id}/"
    assert AuditEvent.objects.get(action=AuditAction.ASSIGNED, attempt=attempt).detail["via"] == "entry link"
    assert attempt.build_id and "+" in attempt.build_id
    _play(client, attempt.shift_id)
    response = client.get("/studies/me/complete/")
    assert response.status_code == 302
    target = urlparse(response["Location"])
    assert (target.netloc, target.path, parse_qs(target.query)) == (
        "app.prolific.com", "/submissions/complete", {"cc": ["C0MPLETE"]})
    # Pay: proposed from the shift's times and the rule, approved with a reason, exported.
    (proposal,) = pay.proposals(coordinator, linked)
    assert (proposal.base_cents, proposal.bonus_cents, proposal.compensation_cents) == (500, 25, 0)
    shift = Shift.objects.get(pk=attempt.shift_id)
    assert proposal.wall_seconds == shift.wall_seconds and proposal.active_seconds == shift.active_seconds
    with pytest.raises(StudyError, match="a reason is required"):
        pay.approve(coordinator, attempt, "")
    assert not PayRecord.objects.exists()
    record = pay.approve(coordinator, attempt, "played the whole shift")
    assert record.total_cents == 525 and record.approved_by == coordinator
    assert AuditEvent.objects.get(action=AuditAction.PAY_APPROVED).reason == "played the whole shift"
    with pytest.raises(StudyError, match="already approved"):
        pay.approve(coordinator, attempt, "again")
    text, missing = pay.bonus_file(coordinator, linked)
    assert text == "pid0001,0.25\n" and missing == []
    rows = list(csv.DictReader(io.StringIO(pay.payments_csv(coordinator, linked))))
    assert [(r["prolific_pid"], r["base"], r["bonus"], r["total"]) for r in rows] == [
        ("pid0001", "5.00", "0.25", "5.25")]


def test_return_path_closes_unstarted_attempts_and_sends_the_return_code(client, linked, cell):
    _enter(client, linked)
    person = linked.participants.get()
    attempt = assignment.create_attempt(None, person, cell)
    response = client.post("/studies/me/return/")
    assert parse_qs(urlparse(response["Location"]).query) == {"cc": ["RETURN12"]}
    attempt.refresh_from_db()
    person.refresh_from_db()
    assert attempt.status == AttemptStatus.ABANDONED and person.returned_at is not None
    assert AuditEvent.objects.filter(action=AuditAction.RETURNED, participant=person).count() == 1


def test_import_100_rows_reports_each_row(study, coordinator):
    lines = ["label,years_ecommerce,role,PROLIFIC_PID"]
    for i in range(100):
        lines.append(f"person-{i:03d},{i % 20},buyer,pid{i:04d}")
    lines[10] = "person-001,3,buyer,pidX"  # duplicate label
    lines[20] = "person-019,many,buyer,pid0019"  # bad years
    lines[30] = "person-029,2,buyer,bad pid!"  # bad recruitment id
    reports = bulk.import_participants(coordinator, study, "\n".join(lines) + "\n")
    assert len(reports) == 100 and [r.line for r in reports] == list(range(2, 102))
    refused = {r.line: r.message for r in reports if not r.ok}
    assert set(refused) == {11, 21, 31}
    assert "already has a participant labelled 'person-001'" in refused[11]
    assert "years_ecommerce must be a whole number" in refused[21]
    assert "PROLIFIC_PID must be 1-64 letters" in refused[31]
    assert study.participants.count() == 97
    assert study.participants.get(label="person-042").external_ids == {"PROLIFIC_PID": "pid0042"}
    with pytest.raises(StudyError, match="unknown column"):
        bulk.import_participants(coordinator, study, "label,phone\nx,y\n")
    (bad_mail, good_mail) = bulk.import_participants(coordinator, study, "label,email\nm1,nope\nm2,m2@example.org\n")
    assert not bad_mail.ok and "is not an e-mail address" in bad_mail.message
    assert good_mail.ok and study.participants.get(label="m2").email == "m2@example.org"


def test_import_view_shows_the_report(client, study, coordinator):
    client.force_login(coordinator)
    upload = SimpleUploadedFile("p.csv", b"label,role\nA,buyer\nA,buyer\n", content_type="text/csv")
    html = client.post(f"/studies/{study.pk}/import/", {"file": upload}).content.decode()
    assert "1 added, 1 refused, 2 rows." in html and "already has a participant labelled" in html


def test_bulk_invite_downloads_100_working_links(client, study, coordinator):
    for i in range(100):
        participants.add_participant(coordinator, study, f"expert-{i:03d}")
    client.force_login(coordinator)
    response = client.post(f"/studies/{study.pk}/invite-many/", {"days": 3})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 100 and len({r["link"] for r in rows}) == 100
    for row in rows[:5] + rows[-5:]:
        token = urlparse(row["link"]).path.split("/")[-2]
        assert participants.resolve(token).participant.label == row["label"]
    assert AuditEvent.objects.filter(action=AuditAction.INVITED).count() == 100


def test_bulk_invalidate_with_one_reason(client, study, coordinator, bot, bot2, cell):
    cell.quota = 2
    cell.save()
    a1 = assignment.assign(coordinator, bot, cell)
    a2 = assignment.assign(coordinator, bot2, cell)
    client.force_login(coordinator)
    client.post(f"/studies/{study.pk}/attempts/bulk/", {"attempt": [a1.pk, a2.pk], "action": "invalidate",
                                                        "reason": ""})
    assert not AuditEvent.objects.filter(action=AuditAction.INVALIDATED).exists()
    client.post(f"/studies/{study.pk}/attempts/bulk/", {"attempt": [a1.pk, a2.pk], "action": "invalidate",
                                                        "reason": "server outage on day 2"})
    assert set(Attempt.objects.values_list("status", flat=True)) == {AttemptStatus.INVALID}
    assert list(AuditEvent.objects.filter(action=AuditAction.INVALIDATED).values_list("reason", flat=True)) == [
        "server outage on day 2"] * 2


def test_withdrawal_excludes_the_persons_data_and_is_audited(study, admin, coordinator, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    bots.play(attempt, "clerk")
    include = figures.Filters(include_bots=True)
    assert [a.pk for a in figures.attempts(study, include)] == [attempt.pk]
    with pytest.raises(StudyError, match="a reason is required"):
        bulk.withdraw(coordinator, bot, "")
    bulk.withdraw(coordinator, bot, "asked to leave by e-mail")
    assert list(figures.attempts(study, include)) == []
    assert list(exports.attempt_rows(study, include)) == []
    assert list(exports.participant_rows(study, include)) == []
    event = AuditEvent.objects.get(action=AuditAction.WITHDRAWN)
    assert event.reason == "asked to leave by e-mail" and event.actor == coordinator
    with pytest.raises(StudyError, match="already withdrawn"):
        bulk.withdraw(coordinator, Participant.objects.get(pk=bot.pk), "again")


def test_exports_carry_time_on_task_build_and_participants(study, admin, bot, cell):
    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    include = figures.Filters(include_bots=True)
    (row,) = exports.attempt_rows(study, include)
    shift = Shift.objects.get(pk=attempt.shift_id)
    assert (row["wall_seconds"], row["active_seconds"], row["paused_seconds"]) == (
        shift.wall_seconds, shift.active_seconds, shift.paused_seconds)
    assert row["started_at"] == shift.started_at.isoformat() and row["build_id"] == attempt.build_id
    (person,) = exports.participant_rows(study, include)
    assert person["participant_label"] == "bot-1" and person["attempts"] == 1
    assert person["briefing_acknowledged_at"] and person["practice_ended_at"]
    columns = {(r["table"], r["column"]) for r in exports.codebook(study)}
    assert ("participants", "prolific_pid") in columns and ("attempts", "active_seconds") in columns


def test_the_participants_table_says_both_its_own_count_and_the_study_pages(study, admin, bot, cell):
    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    attempt_actions.invalidate(admin, attempt, "the bot's network failed")
    (person,) = exports.participant_rows(study, figures.Filters(include_bots=True))
    assert (person["attempts"], person["attempts_in_study"]) == (0, 1)
    assert list(exports.PARTICIPANT_COLUMNS[-1][:2]) == ["attempts_in_study", "integer"]


def test_include_invalid_brings_a_graded_invalidated_attempt_into_the_figures(study, admin, bot, cell):
    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    attempt_actions.invalidate(admin, attempt, "the bot's network failed")
    assert figures.reference_rows(study, figures.Filters(include_bots=True)) == []
    (row,) = figures.reference_rows(study, figures.Filters(include_bots=True, include_invalid=True))
    graded = Shift.objects.get(pk=attempt.shift_id)
    assert (row.cell, row.composite, row.selected) == (cell.key, graded.score_composite, False)


def test_include_invalid_leaves_out_an_attempt_invalidated_before_it_was_played(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    attempt_actions.invalidate(admin, attempt, "assigned to the wrong person")
    assert [a.pk for a in figures.attempts(study, figures.Filters(include_bots=True, include_invalid=True))] == [
        attempt.pk]
    assert figures.reference_rows(study, figures.Filters(include_bots=True, include_invalid=True)) == []


def test_include_invalid_leaves_out_a_shift_the_invalidation_itself_ended(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    lifecycle.begin_shift(Shift.objects.get(pk=attempt.shift_id))
    attempt_actions.invalidate(admin, Attempt.objects.get(pk=attempt.pk), "assigned to the wrong person")
    shift = Shift.objects.get(pk=attempt.shift_id)
    assert shift.score_composite is not None and shift.end_reason == "invalidated: assigned to the wrong person"
    assert figures.reference_rows(study, figures.Filters(include_bots=True, include_invalid=True)) == []


def test_coach_views_are_read_only_and_for_staff(client, study, admin, coordinator, bot, cell):
    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    client.force_login(coordinator)
    calls = Shift.objects.get(pk=attempt.shift_id).calls.count()
    html = client.get(f"/studies/{study.pk}/attempts/{attempt.pk}/shift/").content.decode()
    assert f"History ({calls} calls)" in html and "fulfill_order" in html and "Read only" in html
    composite = Shift.objects.get(pk=attempt.shift_id).score_composite
    assert f'<td class="mono">{composite:.3f} (' in html  # three places, as the console shows it
    html = client.get(f"/studies/{study.pk}/participants/{bot.pk}/").content.decode()
    assert "view the shift" in html and 'id="briefing">read' in html
    participant = Client()
    participant.force_login(bot.user)
    assert participant.get(f"/studies/{study.pk}/attempts/{attempt.pk}/shift/").status_code == 403
    assert client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/shift/").status_code == 405


def test_rehearsal_from_the_study_page_plays_bots(client, study, coordinator, django_capture_on_commit_callbacks):
    client.force_login(coordinator)
    html = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 0, "skill": "clerk"}, follow=True).content.decode()
    assert "Attempts: Ensure this value is greater than or equal to 1." in html
    html = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 1, "skill": "wizard"}, follow=True).content.decode()
    assert "Skill: Select a valid choice." in html and not Attempt.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 2, "skill": "clerk"})
    assert response.status_code == 302
    played = list(Attempt.objects.filter(study=study))
    assert len(played) == 2 and all(a.is_bot and a.status == AttemptStatus.SUBMITTED for a in played)
    assert len({a.cell_id for a in played}) == 2
    assert list(AuditEvent.objects.filter(action=AuditAction.ASSIGNED).values_list("reason", flat=True)) == [
        "rehearsal", "rehearsal"]
    assert list(figures.attempts(study)) == [] and len(list(figures.attempts(study, figures.Filters(include_bots=True)))) == 2


def test_consent_versions_are_published_from_the_study_page(client, study, coordinator):
    client.force_login(coordinator)
    html = client.post(f"/studies/{study.pk}/consent/", {"text": ""}, follow=True).content.decode()
    assert "New consent version: This field is required." in html
    client.post(f"/studies/{study.pk}/consent/", {"text": "Version one."})
    client.post(f"/studies/{study.pk}/consent/", {"text": "Version two: recordings kept 5 years."})
    assert list(study.consent_versions.values_list("version", flat=True)) == [2, 1]
    assert "Version two: recordings kept 5 years." in client.get(f"/studies/{study.pk}/").content.decode()
    assert AuditEvent.objects.filter(action=AuditAction.CONSENT_PUBLISHED).count() == 2


def test_bulk_assign_gives_each_chosen_person_a_cell_with_one_reason(client, study, admin, coordinator):
    people = []
    for i in range(3):
        person = bots.add_bot(admin, study, f"b{i}")
        people.append(person)
    ready = people[:2]
    for person in ready:  # ready for a scored cell: briefing read and practice played
        briefing.acknowledge_briefing(person.user, BRIEFING_VERSION)
        practice = Shift.objects.get(participant=person.user, is_practice=True)
        lifecycle.begin_shift(practice)
        ending.end_shift(practice, "done")
        Participant.objects.filter(pk=person.pk).update(is_bot=False)
    client.force_login(coordinator)
    client.post(f"/studies/{study.pk}/assign-many/", {"participant": [p.pk for p in people], "reason": "week 1"})
    assigned = Attempt.objects.filter(study=study)
    assert sorted(a.participant_id for a in assigned) == sorted(p.pk for p in ready)
    assert set(AuditEvent.objects.filter(action=AuditAction.ASSIGNED).values_list("reason", flat=True)) == {"week 1"}


def test_an_unstarted_attempt_lost_to_a_fault_gets_compensation_but_no_base_pay(linked, coordinator, admin, cell,
                                                                                  bot, bot2):
    attempt = assignment.assign(admin, bot, cell)  # bots need no consent
    attempt_actions.reassign(coordinator, attempt, bot2, "the server lost the shift")
    attempt.refresh_from_db()
    proposal = pay.propose(attempt)
    assert (proposal.base_cents, proposal.bonus_cents, proposal.compensation_cents) == (0, 0, 300)


def test_an_invalidated_attempt_that_never_started_earns_no_base_pay(linked, coordinator, admin, cell, bot):
    attempt = attempt_actions.invalidate(coordinator, assignment.assign(admin, bot, cell), "assigned by mistake")
    assert pay.propose(attempt).total_cents == 0


def test_a_started_attempt_the_team_ended_gets_base_pay(linked, coordinator, admin, cell, bot):
    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    lifecycle.begin_shift(attempt.shift)
    attempt = attempt_actions.invalidate(coordinator, attempt, "the scenario was misconfigured")
    assert pay.propose(attempt).base_cents == 500


def test_a_running_shift_shows_its_time_so_far_to_the_coach(client, study, coordinator, bot, cell):
    from datetime import timedelta

    from django.utils import timezone

    attempt = assignment.assign(coordinator, bot, cell)
    began = timezone.now() - timedelta(seconds=90)
    Shift.objects.filter(pk=attempt.shift_id).update(status=Shift.Status.ACTIVE, started_at=began,
                                                     deadline=began + timedelta(hours=12))
    client.force_login(coordinator)
    coach = client.get(f"/studies/{study.pk}/attempts/{attempt.pk}/shift/").content.decode()
    hours, minutes, seconds = map(int, coach.split("active ", 1)[1].split(",", 1)[0].split(":"))
    active = hours * 3600 + minutes * 60 + seconds
    assert 90 <= active < 200
    person = client.get(f"/studies/{study.pk}/participants/{bot.pk}/").content.decode()
    row = person[person.index('id="person-attempts"'):].split("</tr>")[1]
    assert f"<td>{duration_text(active)}</td>" in row or f"<td>{duration_text(active + 1)}</td>" in row


def test_a_participant_who_finished_a_shift_gets_the_next_cell_without_a_coordinator(client, linked):
    _enter(client, linked)
    person = linked.participants.get()
    client.post("/briefing/", {"version": BRIEFING_VERSION})
    _play(client, Shift.objects.get(participant=person.user, is_practice=True).pk)
    client.post("/studies/me/next/")
    first = Attempt.objects.get(participant=person)
    _play(client, first.shift_id)
    response = client.post("/studies/me/next/")
    second = Attempt.objects.filter(participant=person).exclude(pk=first.pk).get()
    assert response["Location"] == f"/shifts/{second.shift_id}/"
    first.refresh_from_db()
    assert first.status == AttemptStatus.SUBMITTED and first.composite is not None


def test_asking_again_before_playing_the_shift_given_leads_back_to_it(client, linked):
    _enter(client, linked)
    person = linked.participants.get()
    client.post("/briefing/", {"version": BRIEFING_VERSION})
    _play(client, Shift.objects.get(participant=person.user, is_practice=True).pk)
    first = client.post("/studies/me/next/")
    again = client.post("/studies/me/next/")  # a second click, or the back button
    attempt = Attempt.objects.get(participant=person)  # one attempt, not two
    assert first["Location"] == again["Location"] == f"/shifts/{attempt.shift_id}/"

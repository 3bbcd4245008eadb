"""Closing a study (``studies.design.close_study``) and reopening it: a closed study admits
nobody new and creates no attempt, by any path; what it holds stays readable, and its open
shifts are left to be finished.  Both are audited with a reason."""
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from test_studies_support import admin, bot, bot2, cell, coordinator, make_user, study  # noqa: F401

from shifts.briefing import BRIEFING_VERSION
from shifts.models import Shift
from studies import assignment, attempts, bots, bulk, entry, participants, rehearsal
from studies.design import add_consent_version, add_member, close_study, reopen_study
from studies.errors import StudyError, StudyPermissionDenied
from studies.models import Attempt, AttemptStatus, AuditAction, AuditEvent, ExportJob, Participant, Role, Study

NO_ATTEMPT = "it assigns no cell and creates no attempt until it is reopened (Reopen on the study page)"
NO_PARTICIPANT = "it admits no new participant until it is reopened (Reopen on the study page)"


def refusal(study, what: str) -> str:
    """The refusal of a closed study, as a regex matching the whole message."""
    study.refresh_from_db()
    return re.escape(f"study 'Study A' was closed on {study.closed_at:%Y-%m-%d} by coord-a: {what}") + "$"


@pytest.fixture
def closed(study, coordinator):
    return close_study(coordinator, study, "data collection finished")


# --- closing and reopening -----------------------------------------------------------------


def test_closing_records_who_and_when_and_is_audited_with_the_open_shifts(study, coordinator, bot, cell):
    assignment.assign(coordinator, bot, cell)
    close_study(coordinator, study, "data collection finished")
    study.refresh_from_db()
    assert study.closed_at is not None and study.closed_by == coordinator
    event = AuditEvent.objects.get(action=AuditAction.STUDY_CLOSED)
    assert (event.actor, event.reason, event.detail) == (coordinator, "data collection finished", {"open_shifts": 1})


def test_closing_needs_a_reason(study, coordinator):
    with pytest.raises(StudyError, match="^a reason is required to close a study$"):
        close_study(coordinator, study, "  ")
    study.refresh_from_db()
    assert study.closed_at is None


def test_a_closed_study_is_not_closed_again(closed, coordinator):
    with pytest.raises(StudyError, match=rf"^study 'Study A' was already closed on {closed.closed_at:%Y-%m-%d} by "
                                         r"coord-a; nothing was changed$"):
        close_study(coordinator, closed, "again")


def test_a_reviewer_may_not_close_a_study(study, admin):
    reviewer = make_user("rev")
    add_member(admin, study, reviewer, Role.REVIEWER)
    with pytest.raises(StudyPermissionDenied, match="^rev may not manage participants and attempts in study"):
        close_study(reviewer, study, "done")


def test_reopening_clears_the_close_is_audited_and_assigns_again(bot, closed, coordinator, cell):
    reopen_study(coordinator, closed, "one more pilot session")
    closed.refresh_from_db()
    assert closed.closed_at is None and closed.closed_by is None
    event = AuditEvent.objects.get(action=AuditAction.STUDY_REOPENED)
    assert event.reason == "one more pilot session" and "closed_at" in event.detail
    assert assignment.assign(coordinator, bot, cell).number == 1


def test_an_open_study_is_not_reopened(study, coordinator):
    with pytest.raises(StudyError, match="^study 'Study A' is not closed; nothing was changed$"):
        reopen_study(coordinator, study, "why not")


# --- no new attempt, by any path ---------------------------------------------------------


def test_a_closed_study_assigns_no_cell_by_hand(bot, closed, coordinator, cell):
    with pytest.raises(StudyError, match=refusal(closed, NO_ATTEMPT)):
        assignment.assign(coordinator, bot, cell)
    assert not Attempt.objects.exists()


def test_a_study_closed_after_the_caller_read_it_assigns_no_cell(study, coordinator, bot, cell):
    stale = cell.study  # read before the close, as a request that was under way would have it
    close_study(coordinator, study, "done")
    assert stale.closed_at is None
    with pytest.raises(StudyError, match=refusal(study, NO_ATTEMPT)):
        assignment.create_attempt(coordinator, bot, cell)


def test_a_closed_study_assigns_nothing_by_policy(bot, closed, coordinator):
    with pytest.raises(StudyError, match=refusal(closed, NO_ATTEMPT)):
        assignment.assign_next(coordinator, closed, include_bots=True)


def test_a_closed_study_assigns_nothing_in_bulk(bot, closed, coordinator):
    with pytest.raises(StudyError, match=refusal(closed, NO_ATTEMPT)):
        bulk.assign_many(coordinator, closed, [bot], "second wave")


def test_a_closed_study_grants_no_coached_retry(study, coordinator, bot, cell):
    played = bots.play(assignment.assign(coordinator, bot, cell), "clerk")
    close_study(coordinator, study, "done")
    with pytest.raises(StudyError, match=refusal(study, NO_ATTEMPT)):
        attempts.grant_coached_retry(coordinator, played, "ship before refunding")
    assert Attempt.objects.count() == 1


def test_a_closed_study_reassigns_nothing_and_leaves_the_shift_alone(study, coordinator, bot, bot2, cell):
    attempt = assignment.assign(coordinator, bot, cell)
    close_study(coordinator, study, "done")
    with pytest.raises(StudyError, match=refusal(study, NO_ATTEMPT)):
        attempts.reassign(coordinator, attempt, bot2, "server lost the shift")
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.ASSIGNED and not attempt.platform_fault
    assert attempt.shift.status == Shift.Status.ASSIGNED


def test_a_closed_study_adopts_no_practice_shift(bot, closed, coordinator, cell):
    shift = Shift.objects.create(participant=bot.user, task_id="steady", seed=7, is_practice=True)
    with pytest.raises(StudyError, match=refusal(closed, NO_ATTEMPT)):
        assignment.adopt_practice_shift(coordinator, bot, cell, shift)


def test_a_closed_study_schedules_no_rehearsal(closed, coordinator):
    with pytest.raises(StudyError, match=refusal(closed, NO_ATTEMPT)):
        rehearsal.schedule(coordinator, closed, 2, "clerk")


def test_a_rehearsal_queued_before_the_close_fails_with_the_reason(closed, coordinator):
    assert rehearsal.run_rehearsal.delay(closed.pk, coordinator.pk, 2, "clerk", "r1").get() == 0
    event = AuditEvent.objects.get(action=AuditAction.REHEARSAL_FAILED)
    assert re.fullmatch(refusal(closed, NO_ATTEMPT), event.reason)
    assert not closed.participants.exists()


def test_the_pages_offer_no_reassignment_once_closed(study, coordinator, client, cell):
    person = participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "expert-1"), 3600).token, {})
    participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "expert-2"), 3600).token, {})
    attempt = assignment.assign(coordinator, person, cell)
    close_study(coordinator, study, "done")
    study.refresh_from_db()
    assert attempts.reassignment_targets(study, attempt) == []
    client.force_login(coordinator)
    monitor = client.get(f"/studies/{study.pk}/monitor/").content.decode()
    assert '<select name="to" id="monitor-to"><option value="">—</option></select>' in monitor


# --- open shifts are left to be finished ---------------------------------------------------


def test_closing_ends_no_shift_and_an_open_one_is_played_to_its_end(study, coordinator, bot, cell):
    attempt = assignment.assign(coordinator, bot, cell)
    close_study(coordinator, study, "done")
    attempt.refresh_from_db()
    assert attempt.is_open and attempt.shift.status == Shift.Status.ASSIGNED
    assert bots.play(attempt, "clerk").status == AttemptStatus.SUBMITTED


# --- nobody new is admitted ----------------------------------------------------------------


def test_a_closed_study_adds_no_participant(closed, coordinator):
    with pytest.raises(StudyError, match=refusal(closed, NO_PARTICIPANT)):
        participants.add_participant(coordinator, closed, "late expert")


def test_a_participant_added_through_a_copy_read_before_the_close_is_refused(study, coordinator):
    stale = Study.objects.get(pk=study.pk)  # as a rehearsal task queued before the close holds it
    close_study(coordinator, study, "done")
    with pytest.raises(StudyError, match=refusal(study, NO_PARTICIPANT)):
        participants.add_participant(coordinator, stale, "Late")
    assert not study.participants.filter(label="Late").exists()


def test_a_closed_study_imports_no_participant(closed, coordinator):
    with pytest.raises(StudyError, match=refusal(closed, NO_PARTICIPANT)):
        bulk.import_participants(coordinator, closed, "label\nlate expert\n")
    assert not closed.participants.exists()


def test_a_closed_study_issues_no_link_to_someone_who_has_not_joined(study, coordinator):
    person = participants.add_participant(coordinator, study, "expert-new")
    close_study(coordinator, study, "done")
    what = ("it admits no new participant, so expert-new, who has not joined yet, gets no invitation link until it "
            "is reopened (Reopen on the study page)")
    with pytest.raises(StudyError, match=refusal(study, what)):
        participants.invite(coordinator, person, 3600)


def test_a_closed_study_still_sends_a_joined_participant_a_link_back(study, coordinator):
    person = participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "expert-1"), 3600).token, {})
    close_study(coordinator, study, "done")
    again = participants.invite(coordinator, person, 3600)
    assert participants.accept(again.token, {}).pk == person.pk


@pytest.fixture
def pending(study, coordinator):
    """An invitation issued before the study closed, to someone who has not joined."""
    return participants.invite(coordinator, participants.add_participant(coordinator, study, "expert-new"), 3600)


JOIN_CLOSED = "Study &#x27;Study A&#x27; is closed: it takes no new participants, so this invitation link signs nobody in"


def test_an_invitation_link_says_the_study_is_closed(pending, study, coordinator, client):
    close_study(coordinator, study, "done")
    response = client.get(f"/studies/join/{pending.token}/")
    assert response.status_code == 400 and JOIN_CLOSED in response.content.decode()


def test_an_invitation_link_admits_nobody_once_closed(pending, study, coordinator, client):
    close_study(coordinator, study, "done")
    response = client.post(f"/studies/join/{pending.token}/")
    assert response.status_code == 400 and JOIN_CLOSED in response.content.decode()
    pending.invitation.participant.refresh_from_db()
    assert pending.invitation.participant.user_id is None and pending.invitation.accepted_at is None


IDS = "PROLIFIC_PID=pid0001&STUDY_ID=study42&SESSION_ID=sess1"
NEW_IDS = "PROLIFIC_PID=pid0002&STUDY_ID=study42&SESSION_ID=sess2"
ENTRY_CLOSED = "Study &#x27;Study A&#x27; is closed: it takes no new participants."


@pytest.fixture
def linked(study, coordinator, admin):
    add_consent_version(admin, study, "You run a simulated store for one shift.")
    entry.configure(coordinator, study, entry_open=True, completion_url="https://app.prolific.com/submissions/complete",
                    completion_code="C0MPLETE", return_code="RETURN12", base_pay_cents=500, bonus_bands=[],
                    fault_compensation_cents=0, reason="open recruitment on Prolific")
    study.refresh_from_db()
    return study


def _enter(client, study, ids):
    return client.post(f"/studies/s/{study.entry_slug}/?{ids}", {"version": 1, "agree": "on"})


def test_the_study_link_says_it_is_closed_to_a_new_visitor(linked, coordinator, client):
    close_study(coordinator, linked, "done")
    response = client.get(f"/studies/s/{linked.entry_slug}/?{NEW_IDS}")
    assert response.status_code == 400 and ENTRY_CLOSED in response.content.decode()


def test_the_study_link_admits_nobody_new_once_closed(linked, coordinator, client):
    close_study(coordinator, linked, "done")
    response = _enter(client, linked, NEW_IDS)
    assert response.status_code == 400 and ENTRY_CLOSED in response.content.decode()
    assert not linked.participants.exists()


def test_the_study_link_still_signs_a_returning_participant_back_in(linked, coordinator):
    assert _enter(Client(), linked, IDS).status_code == 302
    close_study(coordinator, linked, "done")
    back = Client()
    assert "Welcome back" in back.get(f"/studies/s/{linked.entry_slug}/?{IDS}").content.decode()
    assert _enter(back, linked, IDS).status_code == 302 and linked.participants.count() == 1


def test_a_participant_of_a_closed_study_gets_no_next_shift(linked, coordinator):
    person = entry.enter(linked, {"PROLIFIC_PID": "pid0001", "SESSION_ID": "sess1"}, 1)
    close_study(coordinator, linked, "done")
    person.refresh_from_db()
    with pytest.raises(StudyError, match="^this study is closed and gives no new shifts; a shift you already have "
                                         "can still be finished, then use Finish to return to Prolific$"):
        assignment.assign_self(person)


def test_a_study_closed_while_a_participant_asks_tells_them_as_a_participant(linked, coordinator):
    client = Client()
    _enter(client, linked, IDS)
    person = linked.participants.get()
    client.post("/briefing/", {"version": BRIEFING_VERSION})
    practice = Shift.objects.get(participant=person.user, is_practice=True)
    client.post(f"/shifts/{practice.pk}/start/")
    client.post(f"/shifts/{practice.pk}/end/")
    person = Participant.objects.select_related("study").get(pk=person.pk)  # its study read before the close
    assert assignment.can_start(person) and person.study.closed_at is None
    close_study(coordinator, Study.objects.get(pk=linked.pk), "done")
    with pytest.raises(StudyError, match="^this study is closed and gives no new shifts"):  # not the team's words
        assignment.assign_self(person)
    assert not person.attempts.exists()


# --- the pages ---------------------------------------------------------------------------------


@pytest.fixture
def coord_client(client, coordinator):
    client.force_login(coordinator)
    return client


def test_the_close_confirm_says_how_many_shifts_are_open(coord_client, study, coordinator, bot, cell):
    assignment.assign(coordinator, bot, cell)
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    form = html[html.index('id="close-form"'):].split("</form>")[0]
    assert ("confirm('Close study Study A? It will admit nobody new and create no new attempt (no assignment, retry, "
            "reassignment or rehearsal). 1 open shift (assigned or running) is not ended and may still be finished. "
            "You can reopen it later.')") in form


def test_closing_and_reopening_from_the_study_page(coord_client, study):
    closed = coord_client.post(f"/studies/{study.pk}/close/", {"reason": "done"}, follow=True).content.decode()
    study.refresh_from_db()
    assert ("Study closed: it admits nobody new and creates no new attempt; its open shifts may still be finished."
            in closed)
    assert f'<strong>Closed on {study.closed_at:%Y-%m-%d %H:%M} UTC by coord-a.</strong>' in closed
    assert 'id="reopen"' in closed and 'id="close-form"' not in closed
    # what it would refuse is not offered: each panel says why instead
    for form in ('id="assign-form"', 'id="add-participant"', 'id="import-form"', 'id="rehearsal-form"',
                 'id="bulk-assign"'):
        assert form not in closed
    for note in ('id="closed-no-assign"', 'id="closed-no-import"', 'id="closed-no-rehearsal"'):
        assert note in closed
    assert 'id="quota-form"' in closed and 'id="bulk-invite"' in closed  # still allowed
    reopened = coord_client.post(f"/studies/{study.pk}/reopen/", {"reason": "one more"}, follow=True).content.decode()
    assert "Study reopened: it admits participants and creates attempts again." in reopened
    assert 'id="study-closed"' not in reopened and 'id="close-form"' in reopened
    assert 'id="assign-form"' in reopened and 'id="closed-no-assign"' not in reopened


def test_closing_from_the_page_needs_a_reason(coord_client, study):
    html = coord_client.post(f"/studies/{study.pk}/close/", {"reason": ""}, follow=True).content.decode()
    assert "Reason: This field is required." in html
    study.refresh_from_db()
    assert study.closed_at is None


def test_the_study_list_marks_a_closed_study(coord_client, closed):
    html = coord_client.get("/studies/").content.decode()
    assert (f'>Study A</a> <span class="tag" title="closed on {closed.closed_at:%Y-%m-%d}">closed</span></td>'
            in html)


def test_a_closed_studys_pages_keep_working(coord_client, study, coordinator, bot, cell):
    bots.play(assignment.assign(coordinator, bot, cell), "clerk")
    close_study(coordinator, study, "done")
    for page in ("", "monitor/", "monitor/rows/", "pay/", "leaderboard/", "audit/", "exports/"):
        assert coord_client.get(f"/studies/{study.pk}/{page}").status_code == 200, page
    coord_client.post(f"/studies/{study.pk}/exports/", {"include_bots": "on"})
    assert ExportJob.objects.filter(study=study).exists()


def test_assigning_from_the_page_of_a_closed_study_says_why(bot, coord_client, closed, cell):
    html = coord_client.post(f"/studies/{closed.pk}/assign/", {"participant": bot.pk, "cell": cell.pk},
                             follow=True).content.decode()
    assert (f"study &#x27;Study A&#x27; was closed on {closed.closed_at:%Y-%m-%d} by coord-a: it assigns no cell and "
            "creates no attempt until it is reopened (Reopen on the study page)") in html


def test_the_import_form_of_a_closed_study_says_why(coord_client, closed):
    upload = SimpleUploadedFile("people.csv", b"label\nlate expert\n", content_type="text/csv")
    html = coord_client.post(f"/studies/{closed.pk}/import/", {"file": upload}, follow=True).content.decode()
    assert "it admits no new participant until it is reopened" in html


def test_a_participants_page_says_the_study_is_closed_and_offers_no_next_shift(linked, coordinator):
    client = Client()
    _enter(client, linked, IDS)
    assert 'id="get-cell"' in client.get("/studies/me/").content.decode()
    close_study(coordinator, linked, "done")
    page = client.get("/studies/me/").content.decode()
    assert "This study is closed: it gives no new shifts." in page and 'id="get-cell"' not in page
    assert 'id="finish"' in page  # a shift already had can still be finished and the code collected
    assert "can still be finished; then use Finish below to return to Prolific." in page


def test_a_withdrawn_participant_is_asked_for_no_consent_and_none_is_recorded(linked, coordinator, admin):
    client = Client()
    _enter(client, linked, IDS)
    person = linked.participants.get()
    bulk.withdraw(coordinator, person, "asked to leave")
    add_consent_version(admin, linked, "A second consent text.")
    page = client.get("/studies/me/").content.decode()
    assert 'id="withdrawn"' in page and 'id="give-consent"' not in page and 'id="get-cell"' not in page
    person.refresh_from_db()
    with pytest.raises(StudyError, match=r"^you withdrew from this study on \d{4}-\d\d-\d\d: no consent is asked"):
        participants.give_consent(person.user, person, 2)
    person.refresh_from_db()
    assert person.consent_version.version == 1


def test_the_study_link_signs_in_nobody_who_joined_by_invitation(linked, coordinator):
    from studies import participants

    person = participants.add_participant(coordinator, linked, "Ben")
    participants.accept(participants.invite(coordinator, person).token,
                        {"PROLIFIC_PID": "pid0001", "STUDY_ID": "study42", "SESSION_ID": "sess1"})
    stranger = Client()  # the ids are on the study page and in the exports: anyone on the team has them
    page = stranger.get(f"/studies/s/{linked.entry_slug}/?{IDS}").content.decode()
    assert "Welcome back" not in page
    response = _enter(stranger, linked, IDS)
    assert response.status_code == 400
    assert ("This PROLIFIC_PID joined the study through a personal invitation, which is how it signs in; if you "
            "were signed out, ask the coordinator for a new invitation link.") in response.content.decode()
    assert stranger.get("/studies/me/").status_code == 302  # signed in as nobody


def test_an_invited_participant_of_a_closed_study_is_not_pointed_to_a_finish_they_lack(linked, coordinator):
    from studies import participants

    person = participants.add_participant(coordinator, linked, "Ann")
    token = participants.invite(coordinator, person).token
    client = Client()
    client.post(f"/studies/join/{token}/")
    close_study(coordinator, linked, "done")
    page = client.get("/studies/me/").content.decode()
    assert "A shift you already have can still be finished.</p>" in page and 'id="finish"' not in page

"""Invitations bind to one account, revocation ends their sessions, and completion codes
reach everyone whose attempt ended for a reason they did not cause."""
import pytest
from django.test import Client
from test_studies_support import SEEDS, TASKS, admin, bot, bot2, cell, study  # noqa: F401

from studies import assignment, attempts, participants
from studies.completion import completion_code
from studies.errors import InvitationUsed, StudyError
from studies.models import AttemptStatus, AuditAction, AuditEvent


@pytest.fixture
def issued(study, admin):
    return participants.invite(admin, participants.add_participant(admin, study, "A"))


def test_a_link_is_accepted_once_and_keeps_the_first_recruitment_ids(issued):
    first = participants.accept(issued.token, {"PROLIFIC_PID": "first-pid"})
    with pytest.raises(InvitationUsed, match="already accepted") as used:
        participants.accept(issued.token, {"PROLIFIC_PID": "second-pid"})
    assert used.value.user_id == first.user_id
    first.refresh_from_db()
    assert first.external_ids == {"PROLIFIC_PID": "first-pid"}


def test_a_second_browser_is_not_signed_in_by_a_used_link(issued):
    url = f"/studies/join/{issued.token}/?PROLIFIC_PID=p1"
    first, second = Client(), Client()
    assert first.post(url).status_code == 302
    assert first.get("/studies/me/").status_code == 200
    for response in (second.get(url), second.post(url)):
        assert response.status_code == 403 and "already accepted" in response.content.decode()
    assert second.get("/studies/me/").status_code == 302  # still signed out: sent to sign in
    assert first.get(url).status_code == 302  # the bound account itself goes on to its page


def test_revoking_a_link_ends_the_sessions_it_signed_in(issued, admin):
    browser = Client()
    browser.post(f"/studies/join/{issued.token}/")
    assert browser.get("/studies/me/").status_code == 200
    participants.revoke(admin, issued.invitation, "sent to the wrong address")
    response = browser.get("/studies/me/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    event = AuditEvent.objects.get(action=AuditAction.INVITATION_REVOKED)
    assert event.detail["sessions_ended"] == 1


def test_a_reassigned_attempt_gets_its_code(study, admin, bot, bot2, cell):
    faulted = assignment.assign(admin, bot, cell)
    assert completion_code(bot.user, faulted) is None  # not played, not ended: nothing yet
    attempts.reassign(admin, faulted, bot2, "store crashed")
    faulted.refresh_from_db()
    assert completion_code(bot.user, faulted) == faulted.completion_code


def test_an_invalidated_attempt_gets_its_code(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    attempts.invalidate(admin, attempt, "wrong build deployed")
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.INVALID
    assert completion_code(bot.user, attempt) == attempt.completion_code


def test_an_attempt_ended_by_the_team_before_it_started_gets_its_code(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    attempts.force_end(admin, attempt, "cell withdrawn")
    attempt.refresh_from_db()
    assert completion_code(bot.user, attempt) == attempt.completion_code


def test_the_code_is_shown_on_the_participants_page(client, study, admin, bot, bot2, cell):
    faulted = assignment.assign(admin, bot, cell)
    attempts.reassign(admin, faulted, bot2, "store crashed")
    client.force_login(bot.user)
    html = client.get("/studies/me/").content.decode()
    assert faulted.completion_code in html and "not by you" in html


def test_no_link_is_issued_for_a_scripted_bot(study, admin, bot):
    with pytest.raises(StudyError, match="bot-1 is a scripted bot: its shifts are played by a script"):
        participants.invite(admin, bot)
    assert not bot.invitations.exists()


def test_a_link_issued_before_a_withdrawal_signs_nobody_in(issued, admin):
    from studies import bulk

    bulk.withdraw(admin, issued.invitation.participant, "asked to leave")
    with pytest.raises(StudyError, match=r"A withdrew from the study on \d{4}-\d\d-\d\d; no invitation link"):
        participants.accept(issued.token, {})
    issued.invitation.participant.refresh_from_db()
    with pytest.raises(StudyError, match="A withdrew from the study"):
        participants.invite(admin, issued.invitation.participant)
    browser = Client()
    response = browser.post(f"/studies/join/{issued.token}/")
    page = response.content.decode()
    # whoever holds the link (it may have been forwarded) learns nothing of who withdrew, or when
    assert response.status_code == 400 and "This invitation link signs nobody in." in page
    gone = issued.invitation.participant
    assert "withdrew" not in page and f"{gone.withdrawn_at:%Y-%m-%d}" not in page
    opened = browser.get(f"/studies/join/{issued.token}/")  # refused on opening, before any button
    assert opened.status_code == 400 and "This invitation link signs nobody in." in opened.content.decode()
    assert 'id="accept"' not in opened.content.decode()
    assert browser.get("/studies/me/").status_code == 302


def test_an_accepted_link_of_a_withdrawn_person_says_only_that_it_signs_nobody_in(issued, admin):
    from studies import bulk

    participants.accept(issued.token, {})
    bulk.withdraw(admin, issued.invitation.participant, "asked to leave")
    page = Client().get(f"/studies/join/{issued.token}/")
    text = page.content.decode()
    assert page.status_code == 400 and "This invitation link signs nobody in." in text
    assert "already accepted" not in text and "ask the coordinator for a new link" not in text


def test_the_study_page_offers_no_invitation_for_a_bot_or_a_withdrawn_person(client, study, admin, bot):
    from studies import bulk

    person = participants.add_participant(admin, study, "Gone")
    bulk.withdraw(admin, person, "asked to leave")
    participants.add_participant(admin, study, "Here")
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/").content.decode()
    assert 'name="invite-Here"' in html
    assert 'name="invite-bot-1"' not in html and 'name="invite-Gone"' not in html


def test_the_first_link_accepted_revokes_the_others_issued_before_the_account(study, admin):
    person = participants.add_participant(admin, study, "Ben")
    first, second = participants.invite(admin, person), participants.invite(admin, person)
    participants.accept(first.token, {})
    with pytest.raises(StudyError, match="this invitation link has been revoked; ask the coordinator for a new one"):
        participants.accept(second.token, {})
    stranger = Client()
    response = stranger.post(f"/studies/join/{second.token}/")
    assert response.status_code != 302 and stranger.get("/studies/me/").status_code == 302  # signed in as nobody
    revoked = AuditEvent.objects.get(action=AuditAction.INVITATION_REVOKED)
    assert revoked.reason == participants.SUPERSEDED and revoked.detail["invitation"] == second.invitation.pk


def test_a_link_issued_once_the_person_has_an_account_is_not_revoked_by_their_sign_ins(study, admin):
    person = participants.add_participant(admin, study, "Ben")
    participants.accept(participants.invite(admin, person).token, {})
    later = participants.invite(admin, person)  # the team was told: it signs in as Ben
    extra = participants.invite(admin, person)
    participants.accept(later.token, {})
    assert participants.accept(extra.token, {}).pk == person.pk
    assert not AuditEvent.objects.filter(action=AuditAction.INVITATION_REVOKED).exists()

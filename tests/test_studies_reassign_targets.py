"""A reassignment after a platform fault follows one rule, the domain's
(``studies.attempts.reassign``): a person's attempt goes to another person still taking part
who has an account and has not seen the cell (a bot's may go to another bot).  The pages
offer only such targets (the monitor: those of some shown shift, each row naming its own),
and a posted target the rule refuses comes back as the domain's message."""
import pytest
from test_studies_support import admin, bot, bot2, cell, coordinator, study  # noqa: F401

from studies import assignment, attempts, participants
from studies.errors import StudyError
from studies.models import Attempt, AuditAction, AuditEvent


@pytest.fixture
def coord_client(client, coordinator):
    client.force_login(coordinator)
    return client


@pytest.fixture
def person(study, coordinator):
    """A person with an account (their invitation accepted)."""
    someone = participants.add_participant(coordinator, study, "expert-1")
    return participants.accept(participants.invite(coordinator, someone, 3600).token, {})


@pytest.fixture
def faulted(person, coordinator, cell):
    return assignment.assign(coordinator, person, cell)


def _to_options(html: str, start: str) -> str:
    form = html[html.index(start):]
    return form[form.index('<select name="to"'):].split("</select>")[0]


def test_the_attempt_rows_offer_people_but_no_bot(coord_client, study, bot, faulted, coordinator):
    other = participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "expert-2"), 3600).token, {})
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    options = _to_options(html, f'<tr data-attempt="{faulted.pk}"')
    assert f'<option value="{other.pk}">expert-2</option>' in options and "bot-1" not in options


@pytest.fixture
def other(study, coordinator):
    """A second person with an account, who has not seen any cell."""
    return participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "expert-2"), 3600).token, {})


def test_the_monitor_offers_no_bot(coord_client, study, bot, faulted, other):
    html = coord_client.get(f"/studies/{study.pk}/monitor/").content.decode()
    options = _to_options(html, 'id="monitor-action"')
    assert f'<option value="{other.pk}">expert-2</option>' in options and "bot-1" not in options


def test_the_monitor_does_not_offer_an_attempts_own_participant(coord_client, study, faulted):
    html = coord_client.get(f"/studies/{study.pk}/monitor/").content.decode()
    assert _to_options(html, 'id="monitor-action"') == '<select name="to" id="monitor-to"><option value="">—</option>'


def test_a_monitor_row_names_whom_its_attempt_may_go_to(coord_client, study, faulted, other):
    rows = coord_client.get(f"/studies/{study.pk}/monitor/rows/").content.decode()
    assert f'<tr data-attempt="{faulted.pk}" data-targets="{other.pk}" ' in rows
    # with their labels, from which the page rebuilds its "To" list as rows come and go
    assert f'data-named="[[{other.pk}, &quot;expert-2&quot;]]"' in rows


def test_the_monitor_offers_nobody_who_holds_the_same_cell(coord_client, study, faulted, other, coordinator, cell):
    from studies.design import set_quota

    set_quota(coordinator, study, cell, 2)
    assignment.assign(coordinator, other, cell)  # each now holds the cell: neither may take the other's attempt
    html = coord_client.get(f"/studies/{study.pk}/monitor/").content.decode()
    options = _to_options(html, 'id="monitor-action"')
    assert "expert-1" not in options and "expert-2" not in options
    assert html.count('data-targets="" ') == 2


def test_a_posted_own_participant_is_refused_from_the_monitor(coord_client, study, faulted):
    response = coord_client.post(f"/studies/{study.pk}/monitor/act/", {
        "attempt": faulted.pk, "action": "reassign", "to": faulted.participant_id, "reason": "server lost the shift"},
        follow=True)
    assert ("a reassignment goes to another participant; use a coached retry for the same person"
            in response.content.decode())
    assert Attempt.objects.filter(study=study).count() == 1


def test_a_posted_bot_is_refused_with_the_domains_message(coord_client, study, bot, faulted):
    response = coord_client.post(f"/studies/{study.pk}/attempts/{faulted.pk}/",
                                 {"action": "reassign", "to": bot.pk, "reason": "server lost the shift"},
                                 follow=True)
    assert "bot-1 is a rehearsal bot; reassign a person&#x27;s attempt to a person" in response.content.decode()
    faulted.refresh_from_db()
    assert not faulted.platform_fault and not Attempt.objects.filter(participant=bot).exists()
    assert not AuditEvent.objects.filter(action=AuditAction.REASSIGNED).exists()


def test_the_service_refuses_a_persons_attempt_to_a_bot(bot, faulted, coordinator):
    with pytest.raises(StudyError, match="^bot-1 is a rehearsal bot; reassign a person's attempt to a person$"):
        attempts.reassign(coordinator, faulted, bot, "server lost the shift")


@pytest.fixture
def withdrawn(study, coordinator):
    from studies import bulk

    left = participants.accept(participants.invite(
        coordinator, participants.add_participant(coordinator, study, "expert-gone"), 3600).token, {})
    return bulk.withdraw(coordinator, left, "asked to leave")


def test_a_withdrawn_person_is_not_offered(coord_client, study, withdrawn, faulted):
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    assert "expert-gone" not in _to_options(html, f'<tr data-attempt="{faulted.pk}"')


def test_a_posted_withdrawn_person_is_refused_with_the_domains_message(coord_client, study, withdrawn, faulted):
    response = coord_client.post(f"/studies/{study.pk}/attempts/{faulted.pk}/",
                                 {"action": "reassign", "to": withdrawn.pk, "reason": "server lost the shift"},
                                 follow=True)
    assert ("expert-gone has withdrawn from the study; reassign to someone still taking part"
            in response.content.decode())
    assert not Attempt.objects.filter(participant=withdrawn).exists()


def test_the_service_refuses_a_withdrawn_person(withdrawn, faulted, coordinator):
    with pytest.raises(StudyError, match="^expert-gone has withdrawn from the study; reassign to someone still"):
        attempts.reassign(coordinator, faulted, withdrawn, "server lost the shift")


@pytest.fixture
def no_account(study, coordinator):
    """Added to the study, invitation not accepted."""
    return participants.add_participant(coordinator, study, "expert-new")


def test_the_service_refuses_a_target_without_an_account(no_account, faulted, coordinator):
    with pytest.raises(StudyError, match=r"^expert-new has no account yet \(invitation not accepted\); reassign to "):
        attempts.reassign(coordinator, faulted, no_account, "server lost the shift")


def test_a_posted_unknown_participant_is_a_form_error(coord_client, study, faulted):
    response = coord_client.post(f"/studies/{study.pk}/attempts/{faulted.pk}/",
                                 {"action": "reassign", "to": 99999, "reason": "server lost the shift"},
                                 follow=True)
    assert "Reassign to: study &#x27;Study A&#x27; has no participant 99999; choose one from the list" in (
        response.content.decode())


@pytest.fixture
def bot_attempt(study, admin, bot, cell):
    return assignment.assign_next(admin, study, [bot], include_bots=True)


def test_a_bots_attempt_row_offers_the_other_bot(coord_client, study, bot_attempt, bot2):
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    assert f'<option value="{bot2.pk}">bot-2</option>' in _to_options(html, f'<tr data-attempt="{bot_attempt.pk}"')


def test_the_monitor_offers_a_bots_attempt_the_other_bot_only(coord_client, study, bot_attempt, bot2):
    html = coord_client.get(f"/studies/{study.pk}/monitor/").content.decode()
    options = _to_options(html, 'id="monitor-action"')
    assert f'<option value="{bot2.pk}">bot-2</option>' in options and "bot-1" not in options


def test_a_bots_attempt_is_reassigned_to_another_bot_from_the_page(coord_client, study, bot_attempt, bot2):
    coord_client.post(f"/studies/{study.pk}/attempts/{bot_attempt.pk}/",
                      {"action": "reassign", "to": bot2.pk, "reason": "rehearsing a platform fault"})
    assert Attempt.objects.filter(participant=bot2, replaces=bot_attempt).exists()


def test_nobody_who_has_not_accepted_the_current_consent_text_is_offered(coord_client, study, faulted, other, admin):
    from studies.design import add_consent_version

    assert other in attempts.reassignment_targets(study, faulted)
    add_consent_version(admin, study, "A new consent text.")  # nobody has accepted it yet
    assert attempts.reassignment_targets(study, faulted) == []
    rows = coord_client.get(f"/studies/{study.pk}/monitor/rows/").content.decode()
    assert f'<tr data-attempt="{faulted.pk}" data-targets="" ' in rows


def test_nobody_whose_account_holds_a_team_role_is_offered(study, faulted, other, admin):
    from studies.design import add_member
    from studies.models import Role

    add_member(admin, study, other.user, Role.REVIEWER)  # a scored attempt would show them the thresholds
    assert attempts.reassignment_targets(study, faulted) == []



def test_reassigning_to_someone_without_the_current_consent_is_refused_before_the_shift_is_ended(
        study, faulted, other, admin, coordinator):
    from studies.design import add_consent_version

    add_consent_version(admin, study, "A new consent text.")
    with pytest.raises(StudyError, match="^expert-2 has not accepted the current consent text; reassign to someone"):
        attempts.reassign(coordinator, faulted, other, "store crashed")
    faulted.refresh_from_db()
    assert faulted.shift.status != "ended"  # its shift was left as it was

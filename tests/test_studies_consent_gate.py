"""A study participant starts no shift, practice included, before consenting to the
study's current text: the shift domain asks the studies app's start gate, and the
console sends the participant to their study page to give consent."""
import pytest
from console_helpers import call
from test_studies_support import admin, coordinator, other_study, study  # noqa: F401

from shifts import briefing, lifecycle
from shifts.errors import StartRefused
from shifts.models import Shift
from studies import bulk, participants
from studies.design import add_consent_version

pytestmark = pytest.mark.usefixtures("fresh_console_cache")

GIVE_CONSENT = ("Give your consent to study 'Study A' on your study page before starting a shift: "
                "read the consent text there and tick the box.")


@pytest.fixture
def invited(study, admin, coordinator):
    """A participant who accepted an invitation and read the briefing, but has not consented."""
    add_consent_version(admin, study, "You agree to take part.")
    person = participants.add_participant(coordinator, study, "P1")
    issued = participants.invite(coordinator, person, 3600)
    person = participants.accept(issued.token, {})
    briefing.acknowledge_briefing(person.user, briefing.BRIEFING_VERSION)
    return person


@pytest.fixture
def practice(invited):
    return Shift.objects.get(participant=invited.user, is_practice=True)


def test_starting_the_practice_shift_without_consent_sends_the_participant_to_consent(client, invited, practice):
    client.force_login(invited.user)
    response = client.post(f"/shifts/{practice.pk}/start/", follow=True)
    assert response.redirect_chain == [(f"/studies/me/?study={invited.study_id}", 302)]
    assert [str(m) for m in response.context["messages"]] == [GIVE_CONSENT]
    assert 'id="give-consent"' in response.content.decode()
    practice.refresh_from_db()
    assert practice.status == Shift.Status.ASSIGNED and practice.calls.count() == 0


def test_the_shift_domain_refuses_the_start_without_consent(invited, practice):
    with pytest.raises(StartRefused, match="^Give your consent to study 'Study A'") as refused:
        lifecycle.begin_shift(practice)
    assert refused.value.next_url == f"/studies/me/?study={invited.study_id}"


def test_no_tool_call_reaches_the_practice_store_without_consent(client, invited, practice):
    client.force_login(invited.user)
    client.post(f"/shifts/{practice.pk}/start/")
    call(client, practice, "list_orders")
    assert practice.calls.count() == 0


def test_the_home_page_shows_the_practice_shift_locked_until_consent(client, invited, practice):
    client.force_login(invited.user)
    html = client.get("/").content.decode()
    assert "Locked: Give your consent to study &#x27;Study A&#x27;" in html


def test_the_home_pages_lock_links_to_the_page_where_consent_is_given(client, invited, practice):
    client.force_login(invited.user)
    html = client.get("/").content.decode()
    assert f'<a href="/studies/me/?study={invited.study_id}">Go there</a>' in html


def test_after_consenting_the_practice_shift_starts(client, invited, practice):
    client.force_login(invited.user)
    client.post("/studies/me/", {"version": 1, "agree": "on"})
    response = client.post(f"/shifts/{practice.pk}/start/")
    assert response.status_code == 302 and response["Location"] == f"/shifts/{practice.pk}/"
    practice.refresh_from_db()
    assert practice.status == Shift.Status.ACTIVE


@pytest.fixture
def consented(client, invited):
    """The participant of ``invited``, consented to Study A's text."""
    client.force_login(invited.user)
    client.post("/studies/me/", {"version": 1, "agree": "on"})
    return invited


@pytest.fixture
def also_in_b(consented, other_study, admin):
    """The same person is also a participant of Study B, which has a consent text."""
    add_consent_version(admin, other_study, "Study B's terms.")
    return participants.add_participant(admin, other_study, "P1-in-B", user=consented.user)


def test_a_study_the_person_withdrew_from_does_not_block_their_shifts(also_in_b, practice, admin):
    bulk.withdraw(admin, also_in_b, "asked to leave")
    assert participants.consent_gate(also_in_b.user, practice) is None


def test_the_gate_sends_the_person_to_the_page_of_the_study_it_names(also_in_b, practice):
    refused = participants.consent_gate(also_in_b.user, practice)
    assert (refused.args[0].startswith("Give your consent to study 'Study B'"),
            refused.next_url) == (True, f"/studies/me/?study={also_in_b.study_id}")


def test_the_page_the_gate_names_shows_that_studys_consent_text(client, also_in_b):
    html = client.get(f"/studies/me/?study={also_in_b.study_id}").content.decode()
    assert "<h1>Study B</h1>" in html and "Study B&#x27;s terms." in html and 'id="give-consent"' in html


def test_consent_given_on_that_page_is_recorded_for_that_study(client, also_in_b, practice):
    client.post(f"/studies/me/?study={also_in_b.study_id}", {"version": 1, "agree": "on"})
    also_in_b.refresh_from_db()
    assert also_in_b.consent_version is not None and participants.consent_gate(also_in_b.user, practice) is None


@pytest.mark.parametrize("named", ["999999", "²", "abc"])
def test_the_study_page_of_a_study_the_person_is_not_in_is_not_found(client, also_in_b, named):
    assert client.get(f"/studies/me/?study={named}").status_code == 404

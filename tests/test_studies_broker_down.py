"""With the task queue's broker down at the moment of an assignment or a rehearsal, the page
answers as usual (the assignment was committed; the rehearsal says it could not start), and the
participant's assigned notice is sent by the notice sweep once the queue is back."""
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from kombu.exceptions import OperationalError
from test_studies_support import admin, bot, cell, coordinator, make_user, study  # noqa: F401

from studies import notifications, participants, rehearsal
from studies.models import Attempt, AuditAction, NoticeKind


class BrokerDown:
    """A task whose message cannot reach the broker (kombu's error when nothing listens)."""

    @staticmethod
    def delay(*args):
        raise OperationalError("[Errno 111] Connection refused")

    @staticmethod
    def apply_async(*args, **kwargs):
        raise OperationalError("[Errno 111] Connection refused")


@pytest.fixture
def person(study, admin):  # noqa: F811
    user = make_user("expert-9", email="expert9@example.org")
    return participants.add_participant(admin, study, "expert 9", user=user)


@pytest.mark.django_db(transaction=True)  # the request's own commit sends the task, as on a server
def test_an_assignment_stands_and_its_notice_waits_for_the_sweep(client, study, admin, person, cell,  # noqa: F811
                                                                 monkeypatch, caplog):
    monkeypatch.setattr(notifications, "notify", BrokerDown)
    client.force_login(admin)
    response = client.post(f"/studies/{study.pk}/assign/", {"participant": person.pk, "cell": cell.pk})
    assert response.status_code == 302
    attempt = Attempt.objects.get(participant=person)
    assert "could not be sent to the task queue" in caplog.text and not mail.outbox
    assert notifications.sweep()["assigned"] == 0  # not yet: its task may still be on its way
    later = timezone.now() + notifications.UNSENT_GRACE + timedelta(seconds=1)
    assert notifications.sweep(later)["assigned"] == 1
    assert [(m.subject, m.to) for m in mail.outbox] == [("A new shift is ready for you", ["expert9@example.org"])]
    assert notifications.sweep(later)["assigned"] == 0
    assert attempt.notices.get().kind == NoticeKind.ASSIGNED


@pytest.mark.django_db(transaction=True)
def test_a_rehearsal_that_cannot_be_queued_says_so_on_the_rehearsal_panel(client, study, admin,  # noqa: F811
                                                                          monkeypatch):
    monkeypatch.setattr(rehearsal, "run_rehearsal", BrokerDown)
    client.force_login(admin)
    response = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 1, "skill": "clerk"}, follow=True)
    assert response.status_code == 200
    outcome = rehearsal.last_outcome(study)
    assert outcome.action == AuditAction.REHEARSAL_FAILED
    assert outcome.reason.startswith("the rehearsal could not be sent to the task queue (OperationalError: [Errno 111] "
                                     "Connection refused), so no bot played; rehearse again")
    page = response.content.decode()
    assert "the rehearsal could not be sent to the task queue" in page and "Rehearsal started" not in page


class RefusesOne:
    """A mail backend whose server refuses one address for good (a 550), as SMTP does."""

    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        import smtplib

        for message in messages:
            if "refused@example.org" in message.to:
                raise smtplib.SMTPRecipientsRefused({"refused@example.org": (550, b"no such user")})
            mail.outbox.append(message)
        return len(messages)


def test_one_refused_address_does_not_stop_the_sweep(study, admin, cell, settings, monkeypatch, caplog):  # noqa: F811
    monkeypatch.setattr(notifications, "notify", BrokerDown)
    settings.EMAIL_BACKEND = f"{__name__}.RefusesOne"
    refused = participants.add_participant(admin, study, "refused", user=make_user("p-r", email="refused@example.org"))
    fine = participants.add_participant(admin, study, "fine", user=make_user("p-f", email="fine@example.org"))
    from studies import assignment
    from studies.design import set_quota

    set_quota(admin, study, cell, 2)
    for person in (refused, fine):
        assignment.assign(admin, person, cell)
    later = timezone.now() + notifications.UNSENT_GRACE + timedelta(seconds=1)
    assert notifications.sweep(later)["assigned"] == 1
    assert [m.to for m in mail.outbox] == [["fine@example.org"]]
    assert "could not be sent: {'refused@example.org': (550, b'no such user')}" in caplog.text


def test_an_assigned_notice_older_than_the_window_is_left_unsent(study, admin, person, cell,  # noqa: F811
                                                                  monkeypatch):
    from studies import assignment

    monkeypatch.setattr(notifications, "notify", BrokerDown)
    assignment.assign(admin, person, cell)
    much_later = timezone.now() + notifications.UNSENT_WINDOW + timedelta(minutes=1)
    assert notifications.sweep(much_later)["assigned"] == 0 and not mail.outbox

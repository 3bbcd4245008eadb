"""E-mail notices: assigned, reassigned, deadline near, code ready; each sent once, by Celery tasks."""
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from test_studies_support import admin, cell, coordinator, make_user, study  # noqa: F401

from shifts import briefing, ending, lifecycle
from shifts.models import Shift
from studies import assignment, attempts, notifications, participants
from studies.models import Notice, NoticeKind


@pytest.fixture
def person(study, admin):
    user = make_user("expert-1", email="expert1@example.org")
    return participants.add_participant(admin, study, "expert 1", user=user)


def test_assignment_mails_once_on_commit(person, cell, admin, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        attempt = assignment.assign(admin, person, cell)
    assert len(callbacks) == 1
    assert [(m.subject, m.to) for m in mail.outbox] == [("A new shift is ready for you", ["expert1@example.org"])]
    assert f"/shifts/{attempt.shift_id}/" in mail.outbox[0].body
    assert notifications.notify(attempt.pk, NoticeKind.ASSIGNED) == "skipped"  # a rerun sends nothing
    assert len(mail.outbox) == 1


def test_deadline_and_code_ready_are_swept_once(person, cell, admin):
    attempt = assignment.assign(admin, person, cell)
    briefing.acknowledge_briefing(person.user, briefing.BRIEFING_VERSION)
    practice = Shift.objects.get(participant=person.user, is_practice=True)
    lifecycle.begin_shift(practice)
    ending.end_shift(practice, "practice done")
    lifecycle.begin_shift(attempt.shift)
    assert notifications.sweep() == {"assigned": 0, "reassigned": 0, "deadline": 0, "code_ready": 0}  # 12 hours left
    now = timezone.now()
    Shift.objects.filter(pk=attempt.shift_id).update(deadline=now + timedelta(minutes=90))
    assert notifications.sweep() == {"assigned": 0, "reassigned": 0, "deadline": 1, "code_ready": 0}
    assert notifications.sweep() == {"assigned": 0, "reassigned": 0, "deadline": 0, "code_ready": 0}
    ending.end_shift(Shift.objects.get(pk=attempt.shift_id), "ended by the participant")
    assert notifications.sweep() == {"assigned": 0, "reassigned": 0, "deadline": 0, "code_ready": 1}
    assert notifications.sweep() == {"assigned": 0, "reassigned": 0, "deadline": 0, "code_ready": 0}
    assert [m.subject for m in mail.outbox] == ["Your shift ends in less than two hours",
                                                "Your completion code is ready"]
    assert Notice.objects.filter(attempt=attempt).count() == 2


def test_reassignment_tells_the_new_person(person, cell, admin, study, django_capture_on_commit_callbacks):
    attempt = assignment.assign(admin, person, cell)
    other = participants.add_participant(admin, study, "expert 2",
                                         user=make_user("expert-2", email="expert2@example.org"))
    with django_capture_on_commit_callbacks(execute=True):
        attempts.reassign(admin, attempt, other, "the server lost the shift")
    assert [(m.subject, m.to) for m in mail.outbox] == [("A shift was reassigned to you", ["expert2@example.org"])]


def test_no_address_no_mail(study, admin, cell, django_capture_on_commit_callbacks):
    quiet = participants.add_participant(admin, study, "quiet", user=make_user("quiet"))
    with django_capture_on_commit_callbacks(execute=True):
        assignment.assign(admin, quiet, cell)
    assert mail.outbox == [] and not Notice.objects.exists()


def test_a_notice_the_mail_server_refused_is_tried_again(person, cell, admin, monkeypatch):
    """An unreachable mail server (ConnectionRefusedError, seen on a real worker) failed the
    notify task for good: no Notice row, and the sweep does not look for assigned notices."""
    attempt = assignment.assign(admin, person, cell)
    real, refused = notifications.send_mail, []

    def flaky(*args, **kwargs):
        if not refused:
            refused.append(1)
            raise ConnectionRefusedError(111, "Connection refused")
        return real(*args, **kwargs)

    monkeypatch.setattr(notifications, "send_mail", flaky)
    assert notifications.notify.apply(args=[attempt.pk, NoticeKind.ASSIGNED], throw=False).get() == "sent"
    assert refused and Notice.objects.filter(attempt=attempt, kind=NoticeKind.ASSIGNED).count() == 1
    assert len(mail.outbox) == 1
    assert notifications.notify.retry_backoff_max <= 900  # under Redis's visibility timeout (config/celery.py)


def test_a_mail_backend_that_sends_out_without_a_site_url_is_warned_at_start(settings):
    from studies.checks import notice_links

    settings.EMAIL_BACKEND, settings.SITE_URL = "django.core.mail.backends.smtp.EmailBackend", ""
    (warning,) = notice_links()
    assert warning.id == "studies.W001" and "bare paths such as /shifts/12/" in warning.msg
    settings.SITE_URL = "https://bench.example.org"
    assert notice_links() == []
    settings.EMAIL_BACKEND, settings.SITE_URL = "django.core.mail.backends.console.EmailBackend", ""
    assert notice_links() == []  # mail kept on the server (a demo) is not read away from the site

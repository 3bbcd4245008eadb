"""Requesting an export while an equivalent one (same study, same filters) is queued
gives that job back instead of a second one computing the same files: the form
submitted twice, two coordinators pressing export at once (on PostgreSQL, one request
held in its transaction while the other waits for the study's row lock: ``make
test-services``, or ``DATABASE_URL=postgresql://... pytest -m services`` on this file).
A done or failed export blocks nothing, and neither does one whose task never reached
the broker (it fails saying so)."""
import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError
from test_studies_support import SEEDS, TASKS, admin, make_user, study  # noqa: F401

from studies import tasks
from studies.design import add_member, create_study
from studies.export_jobs import JOIN_WITHIN, Requested, request_export, start_or_join_export
from studies.figures import Filters
from studies.models import AuditAction, AuditEvent, ExportJob, Role

BOTS = Filters(include_bots=True)
FORM = {"include_bots": "on", "include_coached": "on"}  # the page's form, bots ticked


@pytest.fixture(autouse=True)
def export_root(settings, tmp_path):
    settings.STOREBENCH_EXPORT_ROOT = tmp_path / "exports"


@pytest.fixture
def coordinator(study, admin):  # noqa: F811
    user = make_user("coord-export")
    add_member(admin, study, user, Role.COORDINATOR)
    return user


def test_a_double_submit_of_the_form_gives_the_export_already_queued(client, study, admin,  # noqa: F811
                                                                     django_capture_on_commit_callbacks):
    client.force_login(admin)
    url = f"/studies/{study.pk}/exports/"
    with django_capture_on_commit_callbacks(execute=False) as sent:  # no worker has taken it yet
        first = client.post(url, FORM)
        second = client.post(url, FORM, follow=True)
    (job,) = ExportJob.objects.filter(study=study)
    assert len(sent) == 1  # one task for the one job
    assert first.url == f"/studies/{study.pk}/exports/#export-{job.pk}"
    assert second.redirect_chain == [(f"/studies/{study.pk}/exports/#export-{job.pk}", 302)]
    page = second.content.decode()
    assert (f"Export {job.pk} with these filters, requested by study-admin, is already queued: it is the one "
            "shown below, so no second export was started; its files appear in its row when it is done.") in page
    assert f'<tr id="export-{job.pk}" data-job="{job.pk}" data-status="queued">' in page
    assert AuditEvent.objects.filter(study=study, action=AuditAction.EXPORTED).count() == 1


def test_a_queued_export_is_given_to_another_coordinator_asking_for_the_same(study, admin,  # noqa: F811
                                                                            coordinator):
    job = request_export(admin, study, BOTS)
    assert start_or_join_export(coordinator, study, BOTS) == Requested(job, under_way=True)
    assert list(ExportJob.objects.filter(study=study)) == [job]


def test_a_running_export_is_not_joined_as_it_may_have_read_its_tables_already(study, admin,  # noqa: F811
                                                                             coordinator):
    job = request_export(admin, study, BOTS)
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.RUNNING)
    again = start_or_join_export(coordinator, study, BOTS)
    assert not again.under_way and again.job.pk != job.pk


def test_an_export_queued_too_long_is_not_joined_as_its_message_may_be_lost(study, admin):  # noqa: F811
    job = request_export(admin, study, BOTS)
    ExportJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - JOIN_WITHIN - timedelta(seconds=1))
    again = start_or_join_export(admin, study, BOTS)
    assert not again.under_way and again.job.pk != job.pk


def test_other_filters_or_another_study_start_an_export_of_their_own(study, admin):  # noqa: F811
    queued = request_export(admin, study, BOTS)
    other = start_or_join_export(admin, study, Filters(include_bots=True, include_practice=True))
    elsewhere = start_or_join_export(admin, create_study(admin, "Study B", TASKS, SEEDS), BOTS)
    assert not other.under_way and not elsewhere.under_way
    assert len({queued.pk, other.job.pk, elsewhere.job.pk}) == 3


def test_a_done_export_does_not_block_a_new_one(study, admin, django_capture_on_commit_callbacks):  # noqa: F811
    with django_capture_on_commit_callbacks(execute=True):
        done = request_export(admin, study, BOTS)
    done.refresh_from_db()
    assert done.status == ExportJob.Status.DONE
    with django_capture_on_commit_callbacks(execute=False) as sent:
        again = start_or_join_export(admin, study, BOTS)
    assert not again.under_way and again.job.pk != done.pk and len(sent) == 1


def test_a_failed_export_does_not_block_a_new_one(study, admin):  # noqa: F811
    failed = request_export(admin, study, BOTS)
    ExportJob.objects.filter(pk=failed.pk).update(status=ExportJob.Status.FAILED, error="worker fell over")
    again = start_or_join_export(admin, study, BOTS)
    assert not again.under_way and again.job.pk != failed.pk


class BrokerDown:
    """The export task as a web process sees it while the broker refuses connections
    (kombu raises this when Celery cannot publish)."""

    @staticmethod
    def delay(job_id):
        raise OperationalError("[Errno 111] Connection refused")


@pytest.mark.django_db(transaction=True)  # the request's own commit sends the task, as on a server
def test_an_export_whose_task_was_never_sent_fails_saying_so_and_blocks_nothing(client, study, admin,  # noqa: F811
                                                                                 monkeypatch):
    monkeypatch.setattr(tasks, "run_export", BrokerDown)
    client.force_login(admin)
    page = client.post(f"/studies/{study.pk}/exports/", FORM, follow=True).content.decode()
    job = ExportJob.objects.get(study=study)
    assert job.status == ExportJob.Status.FAILED and job.finished_at is not None
    assert job.error == ("the export could not be sent to the task queue (OperationalError: [Errno 111] Connection "
                         "refused), so nothing will write it; request the export again, and if it fails again, "
                         "tell the site's operator (the broker may be down)")
    assert f"Export {job.pk} failed: the export could not be sent to the task queue" in page
    monkeypatch.undo()
    again = start_or_join_export(admin, study, BOTS)
    again.job.refresh_from_db()
    assert not again.under_way and again.job.status == ExportJob.Status.DONE


# --- two requests at once (PostgreSQL row locks) ------------------------------------------------


@pytest.fixture
def on_postgres(transactional_db, skip_or_fail):
    if connection.vendor != "postgresql":
        skip_or_fail("row locks are checked on PostgreSQL (set DATABASE_URL=postgresql://...)")


@pytest.fixture
def broker_emptied_after():
    """The export's task goes to the broker for real (no worker consumes it here, so its job
    stays queued, as a job waiting for a worker does); its message is purged afterwards, so
    no later test's worker runs it."""
    from config.celery import app

    yield
    app.control.purge()


def _waiting_for_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:  # pg_locks is read live, even inside a transaction
        cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)", [pid])
        return cursor.fetchone()[0]


@pytest.mark.services
def test_a_request_made_while_another_creates_its_job_waits_for_it_and_gets_that_job(on_postgres,
                                                                                     broker_emptied_after):
    """The second request starts while the first holds its transaction open, job created
    but not committed (the moment two requests at once both used to find nothing under
    way and both create one).  It must wait on the study's row lock, then find the first's
    job; without the lock it would create its own at once, and the test sees that thread
    end without ever waiting.  No clock is read: the first commits as soon as the second
    is seen waiting (pg_locks) or has ended."""
    admin = get_user_model().objects.create_superuser("race-admin", password=None)
    study = create_study(admin, "Race", TASKS, SEEDS)
    other = make_user("race-coord")
    add_member(admin, study, other, Role.COORDINATOR)
    connected, pid, got = threading.Event(), [], []

    def second_request() -> None:
        try:
            connection.ensure_connection()
            pid.append(connection.connection.info.backend_pid)
            connected.set()
            got.append(start_or_join_export(other, study, BOTS))
        except Exception as exc:  # noqa: BLE001 - the test inspects what the thread got
            got.append(exc)
        finally:
            connected.set()
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=second_request)
    with transaction.atomic():
        first = start_or_join_export(admin, study, BOTS)  # holds the study's row until this block commits
        thread.start()
        assert connected.wait(60), "the second request never connected"
        while thread.is_alive() and not (pid and _waiting_for_a_lock(pid[0])):
            thread.join(0.01)
    thread.join(60)
    assert not first.under_way
    assert got == [Requested(first.job, under_way=True)]
    assert list(ExportJob.objects.filter(study=study).values_list("pk", "status")) == [
        (first.job.pk, ExportJob.Status.QUEUED)]


def test_an_export_queued_for_minutes_says_no_worker_has_taken_it(client, study, admin):  # noqa: F811
    job = ExportJob.objects.create(study=study, requested_by=admin, filters=BOTS.as_dict())
    client.force_login(admin)
    assert "no worker has taken it" not in client.get(f"/studies/{study.pk}/exports/").content.decode()
    ExportJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=7))
    page = client.get(f"/studies/{study.pk}/exports/").content.decode()
    assert ("queued for 7 minutes: no worker has taken it. An export takes seconds once a worker runs; ask the "
            "site&#x27;s operator to check that one does (`celery -A config inspect ping`)") in page

"""Export, rehearsal and notice tasks under the faults a real worker meets: a pool process
killed mid-task (SIGKILL, OOM), two deliveries of one export at once (a broker that
redelivers), and an error nobody expected.  A job must end done or failed with a
message; it never stays "running" with no task left to finish it."""
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from studies import exports, tasks
from studies.design import create_study
from studies.export_jobs import request_export
from studies.exports import job_dir
from studies.figures import Filters
from studies.models import ExportJob
from studies.notifications import notify
from studies.rehearsal import run_rehearsal

BOTS = Filters(include_bots=True)


@pytest.fixture(autouse=True)
def export_root(settings, tmp_path):
    settings.STOREBENCH_EXPORT_ROOT = tmp_path / "exports"


@pytest.fixture
def job(db, django_capture_on_commit_callbacks):
    admin = get_user_model().objects.create_superuser("fault-admin", password=None)
    study = create_study(admin, "Fault study", ["steady"], [7])
    with django_capture_on_commit_callbacks(execute=False):  # requested; its task not run yet
        return request_export(admin, study, BOTS)


@pytest.mark.parametrize("task", [tasks.run_export, run_rehearsal, notify], ids=lambda t: t.name)
def test_a_task_whose_pool_process_dies_is_delivered_again(task):
    # acks_late alone acknowledges the message when the pool process dies (Celery's
    # WorkerLostError): the export stayed "running" at 0% and the rehearsal never ended
    assert task.acks_late and task.reject_on_worker_lost


def test_an_unexpected_error_fails_the_export_with_what_to_do(job, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(tasks, "write_export", broken)
    with pytest.raises(ValueError):
        tasks.run_export(job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and job.finished_at is not None
    assert "ValueError: a bug" in job.error and "request the export again" in job.error


def test_a_second_delivery_at_the_same_time_writes_beside_the_first(job, monkeypatch):
    """A delivery that starts while another is writing (same job, same folder) used to
    remove the other's working folder: three of four concurrent deliveries on PostgreSQL
    failed with FileNotFoundError and the last to fail marked the finished export failed."""
    real = exports.write_table
    nested = []

    def interleaved(directory, table, columns, rows):
        if not nested:
            nested.append(table)
            ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.QUEUED)
            assert tasks.run_export(job.pk) == "done"  # the other delivery, start to end
        return real(directory, table, columns, rows)

    monkeypatch.setattr(exports, "write_table", interleaved)
    assert tasks.run_export(job.pk) == "skipped"  # the other finished it: this one's files are not put in place
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE and job.error == "" and job.progress == 100
    assert (job_dir(job.pk) / "manifest.json").exists()
    assert not list(job_dir(job.pk).parent.glob(f"{job_dir(job.pk).name}.tmp*"))


def test_a_failed_late_delivery_leaves_a_done_export_done(job, monkeypatch):
    def other_delivery_finishes_then_this_one_fails(study, filters, directory, progress, place):
        ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.DONE, progress=100)
        raise FileNotFoundError(2, "No such file or directory", str(directory) + ".tmp/wide.csv")

    monkeypatch.setattr(tasks, "write_export", other_delivery_finishes_then_this_one_fails)
    with pytest.raises(FileNotFoundError):
        tasks.run_export(job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE and job.error == ""


def test_an_export_no_attempt_passed_says_why_on_its_page(client, job):
    """Done with 0 attempt rows (a study with no attempt yet, or only bot attempts under the
    default filters) used to show only "Done" and "attempts.csv: 0"; the page now says which
    filters leave attempts out."""
    assert tasks.run_export(job.pk) == "done"
    job.refresh_from_db()
    assert job.row_counts["attempts.csv"] == 0
    client.force_login(job.requested_by)
    page = client.get(f"/studies/{job.study_id}/exports/").content.decode()
    assert "no attempt passed this export" in page and "tick them above" in page


def test_a_withdrawal_while_an_export_runs_fails_it_saying_so_and_writes_no_file(job, monkeypatch):
    from studies import bots, bulk

    study = job.study
    person = bots.add_bot(job.requested_by, study, "leaver")
    real = exports.write_table

    def withdrawn_meanwhile(directory, table, columns, rows):
        if table == "attempts":
            bulk.withdraw(job.requested_by, person, "asked to leave")
        return real(directory, table, columns, rows)

    monkeypatch.setattr(exports, "write_table", withdrawn_meanwhile)
    assert tasks.run_export(job.pk) == "superseded"
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and job.error.startswith("made before participant leaver withdrew (")
    assert job.error.endswith("a withdrawn person's data leaves every export, so its files were removed; request "
                              "the export again")
    assert not job_dir(job.pk).exists() and not list(job_dir(job.pk).parent.glob("*.tmp*"))


def test_a_late_delivery_of_a_superseded_export_leaves_it_failed(job, monkeypatch):
    from studies import bots, bulk

    person = bots.add_bot(job.requested_by, job.study, "leaver")
    real = exports.write_table

    def withdrawn_meanwhile(directory, table, columns, rows):
        if table == "attempts" and person.withdrawn_at is None:
            person.withdrawn_at = bulk.withdraw(job.requested_by, person, "asked to leave").withdrawn_at
        return real(directory, table, columns, rows)

    monkeypatch.setattr(exports, "write_table", withdrawn_meanwhile)
    assert tasks.run_export(job.pk) == "superseded"
    assert tasks.run_export(job.pk) == "skipped"  # the message delivered again (its worker was lost meanwhile)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and job.error.startswith("made before participant leaver withdrew (")
    assert not job_dir(job.pk).exists()


def test_an_export_queued_for_over_an_hour_is_failed_saying_why_and_a_late_delivery_skips_it(job):
    ExportJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - tasks.STALLED_AFTER - timedelta(minutes=1))
    fresh = ExportJob.objects.create(study=job.study, requested_by=job.requested_by, filters=job.filters)
    assert tasks.fail_stalled_exports() == 1
    job.refresh_from_db()
    assert (job.status, job.error) == (ExportJob.Status.FAILED, tasks.STALLED)
    assert job.error.startswith("it did not start within an hour")
    assert ExportJob.objects.get(pk=fresh.pk).status == ExportJob.Status.QUEUED
    assert tasks.run_export(job.pk) == "skipped"

"""Jobs on the embedded default (SQLite, eager Celery): calibration fanned out per
cell and gathered byte for byte as ``storebench calibrate`` writes it; batches;
idempotent redelivery; the deadline sweep; the export hook; bad input refused before
any job, and no job left running when its work fails."""
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from environment.cli import main as storebench
from environment.errors import StoreBenchError
from jobs import progress, tasks
from jobs.batch import create_batch_job
from jobs.models import Job, JobItem
from jobs.submit import submit_batch, submit_calibration, submit_export

pytestmark = pytest.mark.django_db(transaction=True)  # tasks are scheduled on commit
# Tasks run in-process here (tests/conftest.py), broker or not; real workers: tests/services.

CELLS = (["counter-punch", "short-runway"], [7, 11])


def _files(path: Path) -> dict[str, bytes]:
    stem = path.name[:-5]
    names = [path.name, path.name + ".sha256", stem + ".report.md", stem + ".ladder.svg"]
    return {name: (path.parent / name).read_bytes() for name in names}


def test_calibration_job_matches_the_cli_byte_for_byte(tmp_path):
    cli_out = tmp_path / "cli" / "cal.json"
    cli_out.parent.mkdir()
    assert storebench(["calibrate", "--tasks", *CELLS[0], "--seeds", *map(str, CELLS[1]),
                       "--out", str(cli_out)]) == 0
    job = submit_calibration(*CELLS, tmp_path / "job" / "cal.json")
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert (job.done, job.total) == (4, 4)
    assert job.kind == Job.Kind.CALIBRATION
    assert job.summary["gate_failures"] == []
    assert _files(Path(job.result_path)) == _files(cli_out)
    assert job.result_hash == (cli_out.parent / "cal.json.sha256").read_text().strip()
    assert [i.key for i in job.items.all()] == ["counter-punch:7", "counter-punch:11", "short-runway:7",
                                                "short-runway:11"]


def test_redelivered_cell_and_gather_change_nothing(tmp_path):
    job = submit_calibration(["counter-punch"], [7], tmp_path / "cal.json")
    job.refresh_from_db()
    item = job.items.get()
    before = (item.result_json, item.attempts, Path(job.result_path).read_bytes(), job.finished_at)
    tasks.run_calibration_cell.delay(item.pk)  # a second delivery of a finished cell
    tasks.gather_calibration.delay(job.pk)
    item.refresh_from_db()
    job.refresh_from_db()
    assert (item.result_json, item.attempts, Path(job.result_path).read_bytes(), job.finished_at) == before
    assert item.attempts == 1


def test_cell_killed_mid_task_is_rerun_to_the_same_file(tmp_path):
    """What a redelivery after a worker death sees: the item left running, no file yet."""
    job = submit_calibration(["counter-punch"], [7, 11], tmp_path / "cal.json")
    job.refresh_from_db()
    reference = Path(job.result_path).read_bytes()
    Path(job.result_path).unlink()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=1, finished_at=None)
    JobItem.objects.filter(job=job, index=1).update(status=JobItem.Status.RUNNING, result_json="")
    tasks.run_calibration_cell.delay(job.items.get(index=1).pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.done == 2
    assert Path(job.result_path).read_bytes() == reference
    assert job.items.get(index=1).attempts == 2


def test_unknown_task_is_refused_before_any_row(tmp_path):
    from environment.errors import StoreBenchError

    with pytest.raises(StoreBenchError):
        submit_calibration(["no-such-task"], [7], tmp_path / "x.json")
    assert not Job.objects.exists()


def test_run_calibration_command_shows_progress(tmp_path, capsys):
    out = tmp_path / "cmd.json"
    call_command("run_calibration", "--tasks", "counter-punch", "--seeds", "7", "--out", str(out))
    printed = capsys.readouterr().out
    assert "job " in printed and "[1/1] done" in printed and f"wrote {out}" in printed
    assert json.loads(out.read_text())["tasks"]["counter-punch"]["7"]["seed"] == 7


def test_an_in_process_job_logs_no_broker_warning(tmp_path, caplog):
    import logging

    with caplog.at_level(logging.WARNING):
        call_command("run_calibration", "--tasks", "counter-punch", "--seeds", "7", "--out", str(tmp_path / "c.json"))
    assert [r.getMessage() for r in caplog.records if r.name.startswith("kombu")] == []


def test_run_calibration_refuses_to_drop_cells_of_the_file_it_would_write(tmp_path):
    out = tmp_path / "public.json"
    out.write_text(json.dumps({"tasks": {"counter-punch": {"7": {}, "13": {}}}}))
    with pytest.raises(CommandError, match=re.escape(
            f"--out {out} holds 2 cells and this run calibrates 1: writing it would drop 1 (counter-punch seed 13); ")):
        call_command("run_calibration", "--tasks", "counter-punch", "--seeds", "7", "--out", str(out))
    assert not Job.objects.exists()


def test_following_a_job_prints_its_end_when_it_came_after_the_last_item(monkeypatch):
    from jobs.management import follow as following
    job = Job.objects.create(kind=Job.Kind.CALIBRATION, status=Job.Status.RUNNING, done=2, total=2)

    def gathered(_seconds):  # the worker gathers the file after the last cell, then the job is done
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, finished_at=timezone.now())

    monkeypatch.setattr(following.time, "sleep", gathered)
    lines: list[str] = []
    following.follow(job, 60, lines.append)
    assert lines == ["[2/2] running", "[2/2] done"]


def test_following_a_job_past_its_timeout_is_an_error_naming_it(monkeypatch):
    from django.core.management.base import CommandError

    from jobs.management import follow as following
    job = Job.objects.create(kind=Job.Kind.CALIBRATION, status=Job.Status.RUNNING, done=1, total=3)
    clock = iter([100.0, 100.0, 161.0])  # the deadline is set, the first look is in time, the second is not
    monkeypatch.setattr(following.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(following.time, "sleep", lambda _seconds: None)
    lines: list[str] = []
    with pytest.raises(CommandError, match=rf"^job {job.pk} not finished after 60 s \(1/3\)$"):
        following.follow(job, 60, lines.append)
    assert lines == ["[1/3] running"]


def test_batch_job_writes_one_trial_folder_per_cell(tmp_path):
    job = submit_batch(["counter-punch"], [7, 11], tmp_path / "trials", policy="rule-based",
                       calibration="calibration/public.json")
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert job.summary["trials"] == 2
    for item in job.items.all():
        folder = Path(item.params["out"])
        assert (folder / "score.json").is_file() and (folder / "actions.jsonl").is_file()
        assert json.loads(item.result_json)["out"] == str(folder)
    # A redelivery after a death mid-write: a partial folder and the item left running.
    item = job.items.get(index=0)
    folder = Path(item.params["out"])
    ledger = (folder / "ledger.jsonl").read_bytes()
    (folder / "score.json").unlink()
    JobItem.objects.filter(pk=item.pk).update(status=JobItem.Status.RUNNING)
    tasks.run_batch_trial.delay(item.pk)
    item.refresh_from_db()
    assert item.status == JobItem.Status.DONE and item.attempts == 2
    assert (folder / "ledger.jsonl").read_bytes() == ledger and (folder / "score.json").is_file()


def test_deadline_sweep_ends_only_overdue_shifts():
    from shifts import lifecycle
    from shifts.briefing import BRIEFING_VERSION, acknowledge_briefing
    from shifts.models import Shift

    user = get_user_model().objects.create_user("sweeper", password="x")
    acknowledge_briefing(user, BRIEFING_VERSION)
    overdue = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    current = lifecycle.start_shift(user, "counter-punch", 11, practice=True)
    Shift.objects.filter(pk=overdue.pk).update(deadline=timezone.now() - timedelta(minutes=1))
    assert tasks.enforce_shift_deadlines.delay().get() == 1
    overdue.refresh_from_db()
    current.refresh_from_db()
    assert overdue.status == Shift.Status.ENDED and overdue.end_reason
    assert current.status == Shift.Status.ACTIVE
    assert tasks.enforce_shift_deadlines.delay().get() == 0


@shared_task(name="tests.export_probe")
def export_probe(job_id: int) -> None:
    job = progress.start(job_id, total=3)
    for done in range(1, 4):
        progress.advance(job_id, done)
    progress.finish(job_id, path=f"/tmp/export-{job.params['study']}.zip", digest="sha256:x",
                    summary={"rows": 3})


def test_export_hook_runs_the_named_task_with_the_job_id():
    job = submit_export("tests.export_probe", {"study": "s1"})
    job.refresh_from_db()
    assert job.kind == Job.Kind.EXPORT and job.status == Job.Status.DONE
    assert (job.done, job.total, job.result_path, job.summary) == (3, 3, "/tmp/export-s1.zip", {"rows": 3})


def test_beat_schedules_the_deadline_sweep():
    from config.celery import app

    entry = app.conf.beat_schedule["enforce-shift-deadlines"]
    assert entry["task"] == tasks.enforce_shift_deadlines.name
    assert tasks.run_calibration_cell.acks_late and tasks.run_calibration_cell.reject_on_worker_lost


def test_an_unwritable_file_fails_the_job_with_the_reason(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    job = submit_calibration(["counter-punch"], [7], blocker / "cal.json")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "cannot write the calibration file" in job.error
    assert job.items.get().status == JobItem.Status.DONE  # the cell's work is kept


def test_run_batch_no_wait_says_the_job_and_does_not_follow_it(tmp_path, capsys):
    call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "--policy", "absentee",
                 "--calibration", "calibration/public.json", "--out", str(tmp_path / "trials"), "--no-wait")
    job = Job.objects.get()
    assert capsys.readouterr().out == f"job {job.pk}: 1 trial\n"


def test_run_batch_command_writes_the_trials(tmp_path, capsys):
    call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "--policy", "absentee",
                 "--calibration", "calibration/public.json", "--out", str(tmp_path / "trials"))
    printed = capsys.readouterr().out
    assert "[1/1] done" in printed and '"trials": 1' in printed
    assert printed.splitlines()[-1] == f"trial folders in {tmp_path / 'trials'}"
    assert (tmp_path / "trials" / "counter-punch-7-absentee" / "score.json").is_file()
    with pytest.raises(CommandError, match="neither --policy nor --actions given: give one"):
        call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "--out", str(tmp_path / "x"))


def test_a_failed_run_batch_prints_its_done_trials_summary_before_the_error(tmp_path, capsys, monkeypatch):
    from jobs import batch

    played = batch.run_trial

    def seed_11_fails(task, seed, out, **options):  # the first trial plays; the second is refused
        if seed == 11:
            raise StoreBenchError("the store would not open for seed 11")
        return played(task, seed, out, **options)

    monkeypatch.setattr(batch, "run_trial", seed_11_fails)
    with pytest.raises(CommandError) as failed:
        call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "11", "--policy", "absentee",
                     "--calibration", "calibration/public.json", "--out", str(tmp_path / "trials"))
    job = Job.objects.get()
    assert str(failed.value) == f"job {job.pk} failed: counter-punch:11: the store would not open for seed 11"
    done = json.loads(job.items.get(index=0).result_json)  # the played trial's score, as its folder holds it
    assert capsys.readouterr().out.splitlines() == [
        f"job {job.pk}: 2 trials", "[1/2] failed",
        json.dumps({"trials": 1, "passed": int(done["pass"]), "mean_composite": round(done["reward_composite"], 4)})]


# --- bad input: refused before any job, with what to do instead -------------------------------


def test_run_batch_refuses_an_actions_file_that_is_not_json_lines_before_any_job(tmp_path):
    actions = tmp_path / "bad_actions.jsonl"
    actions.write_text('{"tool": "store_status", "arguments": {}}\nnot json\n')
    with pytest.raises(CommandError, match=rf"^{re.escape(str(actions))} line 2 is not JSON"):
        call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "--actions", str(actions),
                     "--out", str(tmp_path / "trials"))
    assert not Job.objects.exists() and not (tmp_path / "trials").exists()


def test_an_item_whose_work_raises_fails_with_its_job_instead_of_staying_running(tmp_path):
    job = create_batch_job(["counter-punch"], [7], tmp_path / "trials", policy="absentee",
                           calibration="calibration/public.json")
    item = job.items.get()
    # An item without its folder: a bug's KeyError stands in for anything the task does not expect.
    JobItem.objects.filter(pk=item.pk).update(params={"task": "counter-punch", "seed": 7})
    with pytest.raises(KeyError):
        tasks.run_batch_trial.delay(item.pk)
    job.refresh_from_db()
    item.refresh_from_db()
    assert (job.status, item.status) == (Job.Status.FAILED, JobItem.Status.FAILED)
    assert job.error == "counter-punch:7: unexpected KeyError: 'out'" and job.finished_at is not None


def test_run_batch_refuses_trial_folders_that_already_exist_before_any_job(tmp_path):
    folder = tmp_path / "trials" / "counter-punch-7-absentee"
    folder.mkdir(parents=True)
    (folder / "score.json").write_text("an earlier trial")
    with pytest.raises(CommandError, match=r"^the trial folder .*/counter-punch-7-absentee already exists; "
                                           r"use a new --out$"):
        call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "--policy", "absentee",
                     "--calibration", "calibration/public.json", "--out", str(tmp_path / "trials"))
    assert not Job.objects.exists() and (folder / "score.json").read_text() == "an earlier trial"


def test_run_batch_refuses_an_out_that_is_a_file_before_any_job(tmp_path):
    out = tmp_path / "a-file"
    out.write_text("not a folder")
    with pytest.raises(CommandError, match=rf"^--out: {re.escape(str(out))} is a file, not a folder; name a folder"):
        call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "--policy", "absentee",
                     "--calibration", "calibration/public.json", "--out", str(out))
    assert not Job.objects.exists() and out.read_text() == "not a folder"


@pytest.mark.parametrize("out, refusal", [
    ("", r"is a folder; name the file to write, e\.g\. .*/public\.json$"),
    ("a-file/cal.json", r"^--out: .*/a-file is a file, not a folder; name a folder"),
])
def test_run_calibration_refuses_an_out_it_cannot_write_before_any_cell(tmp_path, out, refusal):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(CommandError, match=refusal):
        call_command("run_calibration", "--tasks", "counter-punch", "--seeds", "7", "--out", str(tmp_path / out))
    assert not Job.objects.exists() and [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_a_calibration_file_that_cannot_be_written_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "cal.json"
    out.mkdir()  # in the way of the rename, as a folder made after the job was submitted would be
    job = submit_calibration(["counter-punch"], [7], out)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "cannot write the calibration file" in job.error
    assert [path.name for path in tmp_path.iterdir()] == ["cal.json"]


def test_run_calibration_refuses_a_negative_seed_before_any_job(tmp_path):
    with pytest.raises(CommandError, match=r"argument --seeds: -3 is not a task seed: give a whole number from 0 "
                                           r"to 2,147,483,647"):
        call_command("run_calibration", "--tasks", "counter-punch", "--seeds", "-3", "--out",
                     str(tmp_path / "cal.json"))
    assert not Job.objects.exists()


@pytest.mark.parametrize("command, timeout", [("run_batch", "-1"), ("run_calibration", "0")])
def test_a_timeout_that_is_not_positive_is_refused_before_any_job(tmp_path, command, timeout):
    policy = ["--policy", "absentee", "--calibration", "calibration/public.json"] if command == "run_batch" else []
    with pytest.raises(CommandError, match=rf"argument --timeout: {timeout} is not a time: give a number of seconds "
                                           r"above zero"):
        call_command(command, "--tasks", "counter-punch", "--seeds", "7", *policy, "--out",
                     str(tmp_path / "out.json"), "--timeout", timeout)
    assert not Job.objects.exists()


def test_a_calibration_job_that_fails_a_gate_leaves_the_file_it_would_replace(tmp_path):
    """As ``storebench calibrate``: the practice cell fails its gates, so the job's file goes
    beside ``out`` as ``cal.failed.json`` and the calibration already at ``out`` is untouched."""
    out = tmp_path / "cal.json"
    out.write_text('{"tasks": {}}')
    job = submit_calibration(["practice"], [7], out)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert job.summary["gate_failures"] and all(f.startswith("practice seed 7: gate ") for f in job.summary["gate_failures"])
    assert job.result_path == str(tmp_path / "cal.failed.json") and Path(job.result_path).is_file()
    assert out.read_text() == '{"tasks": {}}'


def test_a_batch_job_with_a_repeated_seed_is_refused_before_its_folder_exists(tmp_path):
    out = tmp_path / "batch"
    with pytest.raises(StoreBenchError, match="more than once"):
        create_batch_job(["steady"], [7, 7], out, policy="rule-based")
    assert not out.exists() and not Job.objects.exists()


def test_a_calibration_job_with_a_repeated_seed_is_refused_before_any_row(tmp_path):
    with pytest.raises(StoreBenchError, match="--seeds names 7 more than once"):
        submit_calibration(["counter-punch"], [7, 7], tmp_path / "cal.json")
    assert not Job.objects.exists()


def test_a_batch_job_refuses_an_empty_action_log_as_the_cli_does(tmp_path):
    empty = tmp_path / "actions.jsonl"
    empty.write_text("")
    with pytest.raises(StoreBenchError, match="holds no recorded calls"):
        create_batch_job(["counter-punch"], [7], tmp_path / "out", actions=str(empty))
    assert not (tmp_path / "out").exists() and not Job.objects.exists()


def test_a_batch_item_redelivered_after_its_worker_died_before_finishing_the_job_finishes_it(tmp_path):
    job = create_batch_job(["counter-punch"], [7], tmp_path / "trials", policy="absentee",
                           calibration="calibration/public.json")
    item = job.items.get()
    progress.claim_item(item.pk)
    from jobs import batch

    progress.complete_item(item.pk, batch.run_item(JobItem.objects.get(pk=item.pk)))  # then the worker died
    assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING
    tasks.run_batch_trial.delay(item.pk)  # the broker delivers it again
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.summary["trials"] == 1 and (job.done, job.total) == (1, 1)


def test_a_failed_job_or_item_is_not_turned_done_by_a_later_delivery(tmp_path):
    job = create_batch_job(["counter-punch"], [7], tmp_path / "trials", policy="absentee",
                           calibration="calibration/public.json")
    item = job.items.get()
    progress.claim_item(item.pk)
    progress.fail_item(item.pk, "a refused input")  # one delivery fails it, and the job
    _job, complete = progress.complete_item(item.pk, "{}")  # an overlapping one completes after
    progress.finish(job.pk)
    job.refresh_from_db()
    item.refresh_from_db()
    assert not complete and (job.status, item.status) == (Job.Status.FAILED, JobItem.Status.FAILED)
    assert job.error == "counter-punch:7: a refused input" and item.result_json == ""


def test_a_batch_whose_summary_raises_fails_instead_of_staying_running(tmp_path, monkeypatch):
    from jobs import batch

    def broken(job):
        raise ValueError("a bug in the summary")

    monkeypatch.setattr(batch, "summary", broken)
    job = create_batch_job(["counter-punch"], [7], tmp_path / "trials", policy="absentee",
                           calibration="calibration/public.json")
    with pytest.raises(ValueError):
        tasks.run_batch_trial.delay(job.items.get().pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error == "unexpected ValueError: a bug in the summary"


def test_a_job_whose_tasks_cannot_reach_the_broker_fails_saying_so(tmp_path, monkeypatch, caplog):
    from kombu.exceptions import OperationalError

    class BrokerDown:
        @staticmethod
        def delay(*args):
            raise OperationalError("[Errno 111] Connection refused")

    monkeypatch.setattr(tasks, "run_batch_trial", BrokerDown)
    job = submit_batch(["counter-punch"], [7, 11], tmp_path / "trials", policy="rule-based",
                       calibration="calibration/public.json")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.finished_at is not None
    assert job.error == ("2 of its 2 tasks could not be sent to the task queue (OperationalError: [Errno 111] "
                         "Connection refused), so nothing will run them; submit the job again (a model-trial job: "
                         f"manage.py run_agents --retry {job.pk}), and if it fails again, tell the site's operator (the "
                         "broker may be down)")
    assert "could not be sent to the task queue" in caplog.text


def test_a_job_submitted_without_waiting_that_cannot_reach_the_broker_fails_the_command(tmp_path, monkeypatch):
    from kombu.exceptions import OperationalError

    class BrokerDown:
        @staticmethod
        def delay(*args):
            raise OperationalError("[Errno 111] Connection refused")

    monkeypatch.setattr(tasks, "run_batch_trial", BrokerDown)
    with pytest.raises(CommandError, match=r"^job \d+ failed: 2 of its 2 tasks could not be sent to the task queue "):
        call_command("run_batch", "--tasks", "counter-punch", "--seeds", "7", "11", "--policy", "rule-based",
                     "--calibration", "calibration/public.json", "--out", str(tmp_path / "trials"), "--no-wait")

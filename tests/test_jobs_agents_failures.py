"""Model-trial jobs whose cells fail, and ``run_agents --retry`` (on the embedded default: SQLite,
eager Celery, the chat stub on 127.0.0.1): a failed cell fails only its item, the other cells play
on, and the job ends failed naming the failed cells, with a summary of the done ones and its
folder; a bug stops the cells not yet played; ``--retry JOB`` plays the failed cells again, only
them, in the same job and folder, and refuses what it cannot retry saying why."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import chat_stub
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from test_jobs_agents import KEY, TASK, end_window, run_agents

from jobs import tasks
from jobs.agents import create_agent_job
from jobs.models import Job, JobItem

pytestmark = pytest.mark.django_db(transaction=True)  # tasks are scheduled on commit

OVERLOADED = b'{"error": "model overloaded"}'


class Cells:
    """A responder that answers 503 to the first request of the cells numbered in ``failing`` (1 is
    the first cell to ask; eager tasks play the cells one after another, in order) and plays the
    others; ``failing`` may be changed between jobs.  ``firsts`` counts the cells that asked."""

    def __init__(self, *failing: int) -> None:
        self.failing, self.firsts = set(failing), 0

    def __call__(self, body: dict) -> tuple[int, bytes]:
        if len(body["messages"]) == 2:  # a cell's first request: the brief and the opening
            self.firsts += 1
            if self.firsts in self.failing:
                return 503, OVERLOADED
        return end_window(body)


def never_answered(base_url: str) -> str:
    return (f"the endpoint {base_url}/chat/completions answered 503: {OVERLOADED.decode()}; it never answered a "
            "completion, so no trial was written")


def three_cells(base_url: str, tmp_path: Path) -> Job:
    """``run_agents`` on seeds 7 11 13 without retries of a request; the job, however it ended."""
    try:
        run_agents(base_url, tmp_path / "out", "--retries", "0", seeds=("7", "11", "13"))
    except CommandError:
        pass
    return Job.objects.get()


def test_a_failed_cell_fails_only_its_item_and_the_cells_after_it_play_on(tmp_path):
    responder = Cells(1, 3)
    with chat_stub.endpoint(responder) as (base_url, _seen):
        job = three_cells(base_url, tmp_path)
    statuses = [(i.key, i.status, i.error) for i in job.items.order_by("index")]
    assert statuses == [(f"{TASK}:7", JobItem.Status.FAILED, never_answered(base_url)),
                        (f"{TASK}:11", JobItem.Status.DONE, ""),
                        (f"{TASK}:13", JobItem.Status.FAILED, never_answered(base_url))]
    assert responder.firsts == 3  # every cell asked the model, the one after the first failure too


def test_a_partly_failed_job_ends_failed_naming_how_many_and_which_cells_failed(tmp_path):
    with chat_stub.endpoint(Cells(1, 3)) as (base_url, _seen):
        job = three_cells(base_url, tmp_path)
    assert job.status == Job.Status.FAILED and job.finished_at is not None
    assert job.error == f"2 of 3 cells failed: {TASK}/7, {TASK}/13: {never_answered(base_url)}"  # one reason, once


def test_a_partly_failed_job_keeps_the_summary_of_its_done_cells_and_its_folder(tmp_path):
    with chat_stub.endpoint(Cells(2)) as (base_url, seen):
        job = three_cells(base_url, tmp_path)
    done = [json.loads(i.result_json) for i in job.items.filter(status=JobItem.Status.DONE).order_by("index")]
    assert [r["seed"] for r in done] == [7, 13]
    assert job.summary["trials"] == 2 and job.summary["passed"] == sum(r["pass"] for r in done)
    assert job.summary["mean_composite"] == round(sum(r["reward_composite"] for r in done) / 2, 4)
    assert job.summary["tokens"]["prompt_tokens"] == 100 * (len(seen) - 1)  # every answered request
    assert job.summary["ended_by"] == {"turn cap": 2} and job.summary["model"] == "stub-1"
    assert job.summary["failed"] == [{"task": TASK, "seed": 11, "error": never_answered(base_url)}]
    assert job.result_path == job.params["out"] == str(tmp_path / "out" / f"job-{job.pk}")
    assert (job.done, job.total) == (2, 3)
    assert sorted(p.name for p in Path(job.result_path).iterdir()) == [f"{TASK}-13-agent", f"{TASK}-7-agent"]


def test_the_command_prints_a_partly_failed_jobs_summary_and_folder_then_its_error(tmp_path, capsys):
    with chat_stub.endpoint(Cells(2)) as (base_url, _seen):
        with pytest.raises(CommandError) as failed:
            run_agents(base_url, tmp_path / "out", "--retries", "0", seeds=("7", "11", "13"))
    job = Job.objects.get()
    assert str(failed.value) == f"job {job.pk} failed: 1 of 3 cells failed: {TASK}/11: {never_answered(base_url)}"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"job {job.pk}: 3 model trials" and lines[-3] == "[2/3] failed"
    assert json.loads(lines[-2]) == job.summary
    assert lines[-1] == (f"the done cells are in {job.result_path}; play the failed ones again with "
                         f"`manage.py run_agents --retry {job.pk}`")


def test_a_job_does_not_end_while_a_cell_still_plays_and_ends_with_it(tmp_path):
    with chat_stub.endpoint(Cells(1)) as (base_url, _seen):
        job = create_agent_job([TASK], [7, 11], tmp_path / "out", model="stub-1", base_url=base_url, max_turns=3,
                               retries=0)
        playing, failing = job.items.order_by("index")
        until = timezone.now() + timedelta(seconds=200)
        JobItem.objects.filter(pk=playing.pk).update(status=JobItem.Status.RUNNING, attempts=1,
                                                     lease_owner="alive:1", lease_until=until)
        tasks.run_agent_trial.delay(failing.pk)  # the only cell that asks now: it is the first to ask
        job.refresh_from_db()
        assert (job.status, job.error) == (Job.Status.RUNNING, "")
        # the player of the other cell dies; its message, delivered again after the lease, takes it over
        JobItem.objects.filter(pk=playing.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
        tasks.run_agent_trial.delay(playing.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.summary["trials"] == 1
    assert job.error == f"1 of 2 cells failed: {TASK}/11: {never_answered(base_url)}"


def test_a_bug_fails_its_cell_and_the_cells_not_yet_played_and_ends_the_job(tmp_path):
    """A bug is likely to strike every cell: the cells not yet played fail unplayed, so the job
    ends at once instead of spending the model's tokens on them or leaving them pending."""
    with chat_stub.endpoint(end_window) as (base_url, seen):
        job = create_agent_job([TASK], [7, 11, 13], tmp_path / "out", model="stub-1", base_url=base_url,
                               max_turns=3)
        first, broken, last = job.items.order_by("index")
        tasks.run_agent_trial.delay(first.pk)
        asked = len(seen)
        JobItem.objects.filter(pk=broken.pk).update(params={**broken.params, "seed": "eleven"})  # a row no cell has
        with pytest.raises(ValueError):
            tasks.run_agent_trial.delay(broken.pk)
        tasks.run_agent_trial.delay(last.pk)  # its message, still queued: it plays nothing
        assert len(seen) == asked
    bug = "unexpected ValueError: invalid literal for int() with base 10: 'eleven'"
    unplayed = f"not played: the job stopped after an unexpected error in {TASK}/eleven"
    assert [(i.status, i.error) for i in job.items.order_by("index")] == [
        (JobItem.Status.DONE, ""), (JobItem.Status.FAILED, bug), (JobItem.Status.FAILED, unplayed)]
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.summary["trials"] == 1
    assert job.error == f"2 of 3 cells failed: {TASK}/eleven: {bug}; {TASK}/13: {unplayed}"


def test_a_bug_also_fails_a_cell_whose_player_died(tmp_path):
    """A cell left running under an expired lease (its worker died) would be taken over when its message
    came back: after a bug it is failed unplayed too, so the job spends nothing more."""
    with chat_stub.endpoint(end_window) as (base_url, seen):
        job = create_agent_job([TASK], [7, 11], tmp_path / "out", model="stub-1", base_url=base_url, max_turns=3)
        dead, broken = job.items.order_by("index")
        JobItem.objects.filter(pk=dead.pk).update(status=JobItem.Status.RUNNING, lease_owner="gone:1:x",
                                                  lease_until=timezone.now() - timedelta(seconds=1))
        JobItem.objects.filter(pk=broken.pk).update(params={**broken.params, "seed": "eleven"})
        with pytest.raises(ValueError):
            tasks.run_agent_trial.delay(broken.pk)
        tasks.run_agent_trial.delay(dead.pk)  # the dead player's message, back: nothing is played
        assert seen == []
    dead.refresh_from_db()
    assert (dead.status, dead.error) == (
        JobItem.Status.FAILED, f"not played: the job stopped after an unexpected error in {TASK}/eleven")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED


# --- run_agents --retry ---------------------------------------------------------------------------------------


def test_retry_plays_again_only_the_failed_cells_in_the_same_job_and_folder(tmp_path, capsys):
    responder = Cells(2)
    with chat_stub.endpoint(responder) as (base_url, _seen):
        job = three_cells(base_url, tmp_path)
        kept = {i.key: i.result_json for i in job.items.filter(status=JobItem.Status.DONE)}
        root = Path(job.params["out"])
        folders = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
        responder.failing = set()
        capsys.readouterr()
        call_command("run_agents", "--retry", str(job.pk))
        assert responder.firsts == 4  # one more cell asked: the failed one
    job.refresh_from_db()
    assert (job.status, job.error, job.done, Job.objects.count()) == (Job.Status.DONE, "", 3, 1)
    assert job.summary["trials"] == 3 and "failed" not in job.summary
    again = job.items.get(key=f"{TASK}:11")
    assert (again.status, again.error, again.attempts) == (JobItem.Status.DONE, "", 2)
    assert {i.key: i.result_json for i in job.items.exclude(pk=again.pk)} == kept
    assert folders and {p: p.stat().st_mtime_ns for p in folders} == folders  # the done cells' files are untouched
    assert Path(json.loads(again.result_json)["out"]).parent == Path(job.params["out"]) / f"{TASK}-11-agent"
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"job {job.pk}: 3 model trials, playing again the 1 that failed: {TASK}/11"
    assert printed[-3] == "[3/3] done" and json.loads(printed[-2]) == job.summary
    assert printed[-1] == f"trial folders in {job.result_path}" and Path(job.result_path) == root


def test_a_late_message_of_a_retried_cell_plays_nothing_more(tmp_path, capsys):
    responder = Cells(2)
    with chat_stub.endpoint(responder) as (base_url, _seen):
        job = three_cells(base_url, tmp_path)
        responder.failing = set()
        call_command("run_agents", "--retry", str(job.pk))
        asked = responder.firsts
        again = job.items.get(key=f"{TASK}:11")
        tasks.run_agent_trial.delay(again.pk)  # a message of the first attempt, delivered again after the retry
        assert responder.firsts == asked  # the cell is done: nothing is played twice
    again.refresh_from_db()
    assert (again.status, again.attempts) == (JobItem.Status.DONE, 2)


def test_retry_clears_what_an_earlier_attempt_of_a_failed_cell_left(tmp_path):
    responder = Cells(1)
    with chat_stub.endpoint(responder) as (base_url, _seen):
        run = create_agent_job([TASK], [7], tmp_path / "out", model="stub-1", base_url=base_url, max_turns=3,
                               retries=0)
        tasks.run_agent_trial.delay(run.items.get().pk)
        final = Path(run.items.get().params["out"])
        (final.parent / f".{final.name}.attempt-dead_1").mkdir()  # a worker killed before it removed it
        (final / "short-runway__s7__old").mkdir(parents=True)
        responder.failing = set()
        call_command("run_agents", "--retry", str(run.pk))
    item = JobItem.objects.get()
    session = Path(json.loads(item.result_json)["out"])
    assert item.status == JobItem.Status.DONE and (session / "score.json").is_file()
    assert sorted(p.name for p in final.iterdir()) == sorted(["agent.log", session.name])
    assert [p.name for p in final.parent.iterdir()] == [final.name]


def test_retry_may_name_another_key_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("SB_RETRY_UNSET", raising=False)
    monkeypatch.setenv("SB_RETRY_KEY", KEY)
    with chat_stub.endpoint(end_window, api_key=KEY) as (base_url, _seen):
        with pytest.raises(CommandError, match=r"\$SB_RETRY_UNSET is not set on this worker"):
            run_agents(base_url, tmp_path / "out", "--api-key-env", "SB_RETRY_UNSET")
        job = Job.objects.get()
        call_command("run_agents", "--retry", str(job.pk), "--api-key-env", "SB_RETRY_KEY")
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.params["api_key_env"] == "SB_RETRY_KEY"
    assert KEY not in json.dumps([job.params, job.summary, job.error])


def _ended(status: str, kind: str = Job.Kind.BATCH, runner: str = "agent", item_status: str = JobItem.Status.DONE,
           lease_until=None) -> Job:
    job = Job.objects.create(kind=kind, status=status, total=1, done=1, params={"runner": runner, "out": "/nowhere"})
    JobItem.objects.create(job=job, index=0, key=f"{TASK}:7", status=item_status, lease_owner="w:1",
                           lease_until=lease_until, params={"task": TASK, "seed": 7, "out": "/nowhere/x"})
    return job


@pytest.mark.parametrize("make, refusal", [
    (lambda: None,
     "there is no job {id}: give the number `run_agents` printed (\"job N: ...\")"),
    (lambda: _ended(Job.Status.FAILED, kind=Job.Kind.CALIBRATION, runner="", item_status=JobItem.Status.FAILED),
     "job {id} is not a model-trial job (it is a calibration job of another runner): --retry plays again the "
     "failed cells of a run_agents job only"),
    (lambda: _ended(Job.Status.FAILED, runner="", item_status=JobItem.Status.FAILED),
     "job {id} is not a model-trial job (it is a trial batch job of another runner): --retry plays again the "
     "failed cells of a run_agents job only"),
    (lambda: _ended(Job.Status.RUNNING, item_status=JobItem.Status.FAILED),
     "job {id} is still running (1/1 cells done): --retry plays its failed cells once it has ended; wait for "
     "it, then run the command again"),
    (lambda: _ended(Job.Status.FAILED, item_status=JobItem.Status.RUNNING,
                    lease_until=timezone.now() + timedelta(seconds=300)),
     "job {id} is still running (1/1 cells done): --retry plays its failed cells once it has ended; wait for "
     "it, then run the command again"),
    (lambda: _ended(Job.Status.DONE),
     "job {id} has no failed cell: its only cell is done, so there is nothing to play again"),
], ids=["unknown", "calibration", "scripted-batch", "running", "a-cell-still-playing", "nothing-failed"])
def test_retry_refuses_what_it_cannot_play_again_saying_why(make, refusal):
    job = make()
    job_id = job.pk if job is not None else 999
    before = [(i.pk, i.status, i.error, i.lease_owner) for i in JobItem.objects.all()]
    with pytest.raises(CommandError) as refused:
        call_command("run_agents", "--retry", str(job_id))
    assert str(refused.value) == refusal.format(id=job_id)
    assert [(i.pk, i.status, i.error, i.lease_owner) for i in JobItem.objects.all()] == before


def test_retry_refuses_the_options_that_are_the_jobs_own():
    with pytest.raises(CommandError) as refused:
        call_command("run_agents", "--retry", "5", "--model", "other", "--seeds", "7")
    assert str(refused.value) == ("--retry plays job 5's failed cells as the job was submitted: leave out --model, "
                                  "--seeds (only --api-key-env, --timeout and --no-wait go with --retry)")


def test_a_new_job_still_needs_a_model_an_endpoint_and_a_folder():
    with pytest.raises(CommandError) as refused:
        call_command("run_agents", "--model", "m")
    assert str(refused.value) == ("--base-url and --out are required (unless --retry JOB_ID plays an ended job's "
                                  "failed cells again)")
    assert not Job.objects.exists()


def test_help_explains_retry(capsys):
    with pytest.raises(SystemExit):
        call_command("run_agents", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "--retry JOB_ID play again the failed cells of model-trial job JOB_ID (nothing else), in the same job " \
           "and job folder, once that job has ended" in text

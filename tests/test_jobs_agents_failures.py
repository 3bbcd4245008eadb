"""Model-trial jobs whose cells fail, and ``run_agents --retry`` (on the embedded default: SQLite,
eager Celery, the chat stub on 127.0.0.1): a failed cell fails only its item, the other cells play
on, and the job ends failed naming the failed cells, with a summary of the done ones and its
folder; a bug stops the cells not yet played."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import chat_stub
import pytest
from django.core.management import CommandError
from django.utils import timezone
from test_jobs_agents import TASK, end_window, run_agents

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
    assert job.error == (f"2 of 3 cells failed: {TASK}/7: {never_answered(base_url)}; "
                         f"{TASK}/13: {never_answered(base_url)}")


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
    assert lines[-1] == f"the done cells are in {job.result_path}"


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


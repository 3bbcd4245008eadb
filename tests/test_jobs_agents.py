"""Model-trial batches as jobs (``manage.py run_agents``, :mod:`jobs.agents`), on the embedded
default (SQLite, eager Celery) against the chat stub on 127.0.0.1: graded folders and a summary;
the key read from the named variable and stored nowhere; an endpoint that never answers; the
lease (a live one is not played again, an expired one is taken over into a clean folder, and an
attempt that lost its lease publishes nothing); bad input refused before any row or folder."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import chat_stub
import pytest
from chat_stub import completion
from django.core.management import CommandError, call_command
from django.utils import timezone

from environment.errors import StoreBenchError
from jobs import lease, tasks
from jobs.agents import create_agent_job
from jobs.models import Job, JobItem

pytestmark = pytest.mark.django_db(transaction=True)  # tasks are scheduled on commit

TASK = "short-runway"
KEY = "sk-test-0123456789-never-stored"


def end_window(body: dict) -> tuple[int, bytes]:
    """Every reply ends the window: a short, whole, graded trial in a few turns."""
    return completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{len(body['messages'])}", "type": "function", "function": {"name": "end_window", "arguments": "{}"}}]},
        model=body["model"], prompt_tokens=100, completion_tokens=7)


def run_agents(base_url: str, out: Path, *extra: str, seeds: tuple[str, ...] = ("7",)) -> None:
    call_command("run_agents", "--model", "stub-1", "--base-url", base_url, "--tasks", TASK, "--seeds", *seeds,
                 "--out", str(out), "--max-turns", "3", *extra)


def test_a_two_cell_job_writes_two_graded_trial_folders_and_a_summary(tmp_path, capsys):
    with chat_stub.endpoint(end_window) as (base_url, seen):
        run_agents(base_url, tmp_path / "out", seeds=("7", "11"))
    job = Job.objects.get()
    assert job.status == Job.Status.DONE, job.error
    assert job.kind == Job.Kind.BATCH and job.params["runner"] == "agent" and job.params["model"] == "stub-1"
    assert job.summary["trials"] == 2 and job.summary["tokens"]["prompt_tokens"] == 100 * len(seen)
    assert set(job.summary) >= {"passed", "mean_composite", "ended_by"}
    for item, seed in zip(job.items.order_by("index"), (7, 11), strict=True):
        result = json.loads(item.result_json)
        folder = tmp_path / "out" / f"job-{job.pk}" / f"{TASK}-{seed}-agent"
        assert item.status == JobItem.Status.DONE and item.params["out"] == str(folder)
        session = Path(result["out"])
        assert session.parent == folder and (session / "score.json").is_file() and (session / "summary.json").is_file()
        labels = json.loads((session / "summary.json").read_text())
        assert labels["model"] == "stub-1" and labels["ended_by"] == result["ended_by"] == "turn cap"
        assert (folder / "agent.log").read_text().startswith("turn 1:")
        assert item.lease_until is None
    assert [p.name for p in (tmp_path / "out").iterdir()] == [f"job-{job.pk}"]
    assert sorted(p.name for p in (tmp_path / "out" / f"job-{job.pk}").iterdir()) == [f"{TASK}-11-agent", f"{TASK}-7-agent"]
    assert job.params["out"] == str(tmp_path / "out" / f"job-{job.pk}")
    printed = capsys.readouterr().out
    assert "[2/2] done" in printed and '"trials": 2' in printed
    assert printed.splitlines()[0] == f"job {job.pk}: 2 model trials"
    assert printed.splitlines()[-1] == f"trial folders in {tmp_path / 'out' / f'job-{job.pk}'}"


def test_the_key_comes_from_the_named_variable_as_a_bearer_token_and_is_stored_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv("SB_AGENTS_TEST_KEY", KEY)
    with chat_stub.endpoint(end_window, api_key=KEY) as (base_url, seen):  # another key: 401
        run_agents(base_url, tmp_path / "out", "--api-key-env", "SB_AGENTS_TEST_KEY")
    job = Job.objects.get()
    assert job.status == Job.Status.DONE, job.error
    assert seen
    assert job.params["api_key_env"] == "SB_AGENTS_TEST_KEY"
    rows = [json.dumps([job.params, job.summary, job.error, job.result_path])]
    rows += [json.dumps([i.params, i.result_json, i.error, i.lease_owner]) for i in job.items.all()]
    assert not any(KEY in row for row in rows)
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert files and not any(KEY.encode() in p.read_bytes() for p in files)


def test_a_worker_without_the_variable_sends_no_key_and_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("SB_AGENTS_UNSET", raising=False)
    with chat_stub.endpoint(end_window, api_key=KEY) as (base_url, _seen):
        with pytest.raises(CommandError, match=r"answered 401.*\$SB_AGENTS_UNSET is not set on this worker"):
            run_agents(base_url, tmp_path / "out", "--api-key-env", "SB_AGENTS_UNSET")


def test_an_endpoint_that_never_answers_fails_the_item_with_its_message(tmp_path):
    def broken(_body: dict) -> tuple[int, bytes]:
        return 503, b'{"error": "model overloaded"}'

    with chat_stub.endpoint(broken) as (base_url, _seen):
        with pytest.raises(CommandError, match=r"failed: 1 of 1 cells failed: short-runway/7: the endpoint .* answered 503.*model overloaded"):
            run_agents(base_url, tmp_path / "out")
    job = Job.objects.get()
    item = job.items.get()
    assert (job.status, item.status) == (Job.Status.FAILED, JobItem.Status.FAILED)
    assert "answered 503" in item.error and "model overloaded" in item.error
    assert list(Path(job.params["out"]).iterdir()) == []  # no trial, no attempt folder
    assert "is not set on this worker" not in item.error  # a 503 is not about the key


def test_an_endpoint_error_after_some_turns_is_a_graded_trial_ended_by_the_endpoint(tmp_path):
    def once(body: dict) -> tuple[int, bytes]:
        return end_window(body) if len(body["messages"]) <= 2 else (500, b"gone")

    with chat_stub.endpoint(once) as (base_url, _seen):
        run_agents(base_url, tmp_path / "out")
    job = Job.objects.get()
    assert job.status == Job.Status.DONE, job.error
    result = json.loads(job.items.get().result_json)
    assert result["ended_by"] == "endpoint error" and result["turns_taken"] == 1
    assert "answered 500" in result["endpoint_error"]
    assert (Path(result["out"]) / "score.json").is_file() and job.summary["ended_by"] == {"endpoint error": 1}


def _job(tmp_path: Path, base_url: str) -> Job:
    return create_agent_job([TASK], [7], tmp_path / "out", model="stub-1", base_url=base_url, max_turns=3)


def test_a_redelivery_while_a_live_lease_is_held_plays_nothing_and_checks_again_later(tmp_path, monkeypatch):
    sent: list[tuple[int, float]] = []
    monkeypatch.setattr(tasks, "check_agent_trial_later", lambda item_id, left: sent.append((item_id, left)))
    with chat_stub.endpoint(end_window) as (base_url, seen):
        job = _job(tmp_path, base_url)
        item = job.items.get()
        until = timezone.now() + timedelta(seconds=200)
        JobItem.objects.filter(pk=item.pk).update(status=JobItem.Status.RUNNING, attempts=1, lease_owner="alive:1",
                                                  lease_until=until)
        partial = Path(item.params["out"]).parent / f".{TASK}-7-agent.attempt-alive_1"
        partial.mkdir(parents=True)
        tasks.run_agent_trial.delay(item.pk)
        assert seen == []
    item.refresh_from_db()
    assert (item.status, item.attempts, item.lease_owner, item.lease_until) == (
        JobItem.Status.RUNNING, 1, "alive:1", until)
    assert partial.is_dir()  # the live player's folder is left alone
    assert len(sent) == 1 and sent[0][0] == item.pk and 150 < sent[0][1] <= 200


def test_a_recheck_is_sent_to_run_just_after_the_lease_ends(monkeypatch):
    from config.celery import app

    calls: list[dict] = []
    monkeypatch.setattr(tasks.run_agent_trial, "apply_async", lambda args, **kw: calls.append({"args": args, **kw}))
    app.conf.task_always_eager = False  # as with a broker (tests/conftest.py puts it back)
    try:
        tasks.check_agent_trial_later(42, 100.0)
        tasks.check_agent_trial_later(43, 5000.0)
    finally:
        app.conf.task_always_eager = True
    assert calls == [{"args": (42,), "countdown": 105.0}, {"args": (43,), "countdown": lease.RECHECK_MAX_SECONDS}]


def test_a_redelivery_after_an_expired_lease_plays_again_into_a_clean_folder(tmp_path):
    with chat_stub.endpoint(end_window) as (base_url, seen):
        job = _job(tmp_path, base_url)
        item = job.items.get()
        JobItem.objects.filter(pk=item.pk).update(status=JobItem.Status.RUNNING, attempts=1, lease_owner="dead:9",
                                                  lease_until=timezone.now() - timedelta(seconds=1))
        final = Path(item.params["out"])
        (final / "short-runway__s7__old").mkdir(parents=True)  # the dead attempt got as far as its folder
        (final / "short-runway__s7__old" / "actions.jsonl").write_text("partial\n")
        dead_attempt = final.parent / f".{final.name}.attempt-dead_9"
        dead_attempt.mkdir()
        tasks.run_agent_trial.delay(item.pk)
        assert seen
    item.refresh_from_db()
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and item.status == JobItem.Status.DONE and item.attempts == 2
    assert item.lease_owner != "dead:9"
    session = Path(json.loads(item.result_json)["out"])
    assert sorted(p.name for p in final.iterdir()) == sorted(["agent.log", session.name])
    assert (session / "score.json").is_file() and not dead_attempt.exists()
    assert sorted(p.name for p in final.parent.iterdir()) == [final.name]


def test_an_attempt_that_lost_its_lease_while_playing_writes_nothing(tmp_path):
    taken: list[int] = []

    def steal_then_answer(body: dict) -> tuple[int, bytes]:
        if not taken:  # another worker takes the item over while this one waits for the model
            taken.append(JobItem.objects.filter(status=JobItem.Status.RUNNING).update(
                lease_owner="thief:1", lease_until=timezone.now() + timedelta(seconds=300)))
        return end_window(body)

    with chat_stub.endpoint(steal_then_answer) as (base_url, seen):
        job = _job(tmp_path, base_url)
        item = job.items.get()
        tasks.run_agent_trial.delay(item.pk)
        assert seen and taken == [1]
    item.refresh_from_db()
    assert (item.status, item.lease_owner, item.result_json) == (JobItem.Status.RUNNING, "thief:1", "")
    assert list(Path(item.params["out"]).parent.iterdir()) == []


@pytest.mark.parametrize("args, refusal", [
    (["--base-url", "ftp://127.0.0.1/v1"], r"--base-url 'ftp://127.0.0.1/v1' is not an http\(s\) URL with a host"),
    (["--base-url", "127.0.0.1:8000/v1"], r"is not an http\(s\) URL with a host"),
    (["--base-url", "http:///v1"], r"is not an http\(s\) URL with a host"),
    (["--base-url", "http://me:pw@127.0.0.1/v1"], r"carries credentials"),
    (["--tasks", "no-such-task"], r"no-such-task"),
    (["--seeds", "7", "7"], r"--seeds names 7 more than once"),
    (["--api-key-env", "sk-abc123"], r"must name an environment variable"),
])
def test_bad_input_is_refused_before_any_row_or_folder(tmp_path, args, refusal):
    argv = {"--base-url": "http://127.0.0.1:9/v1", "--tasks": TASK, "--seeds": "7"}
    flat: list[str] = []
    for flag, value in argv.items():
        if flag not in args:
            flat += [flag, value]
    with pytest.raises(CommandError, match=refusal) as caught:
        call_command("run_agents", "--model", "m", *flat, *args, "--out", str(tmp_path / "out"))
    assert "sk-abc123" not in str(caught.value)
    assert not Job.objects.exists() and not JobItem.objects.exists() and not (tmp_path / "out").exists()


def test_two_jobs_on_one_out_each_keep_their_own_trials(tmp_path):
    with chat_stub.endpoint(end_window) as (base_url, _seen):
        first = _job(tmp_path, base_url)
        second = _job(tmp_path, base_url)  # the command run again while the first job still plays
        tasks.run_agent_trial.delay(first.items.get().pk)
        tasks.run_agent_trial.delay(second.items.get().pk)
    outs = [Path(json.loads(job.items.get().result_json)["out"]) for job in (first, second)]
    assert outs[0] != outs[1] and all((out / "score.json").is_file() for out in outs)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([f"job-{first.pk}", f"job-{second.pk}"])


def test_a_job_folder_already_there_is_refused_and_no_row_is_kept(tmp_path):
    with chat_stub.endpoint(end_window) as (base_url, _seen):
        taken = _job(tmp_path, base_url)
    Job.objects.all().delete()  # as in another database, whose next job has the same number
    (tmp_path / "out" / f"job-{taken.pk + 1}").mkdir()
    with pytest.raises(StoreBenchError, match=f"job-{taken.pk + 1} already exists"):
        create_agent_job([TASK], [7], tmp_path / "out", model="m", base_url="http://127.0.0.1:9/v1")
    assert not Job.objects.exists() and not JobItem.objects.exists()


def test_help_explains_each_option(capsys):
    with pytest.raises(SystemExit):
        call_command("run_agents", "--help")
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--model", "--base-url", "--tasks", "--seeds", "--out", "--api-key-env", "--max-turns",
                 "--keep-turns", "--max-idle-turns", "--temperature", "--retries", "--timeout", "--no-wait"):
        assert flag in text
    assert "only the name is stored" in text


def _claimed(tmp_path: Path, owner: str) -> JobItem:
    job = create_agent_job([TASK], [7], tmp_path / "out", model="m", base_url="http://127.0.0.1:9/v1")
    claim = lease.claim(job.items.get().pk, owner)
    assert claim.item is not None
    return claim.item


def test_the_heartbeat_renews_its_own_lease_and_reports_one_taken_over(tmp_path, monkeypatch):
    item = _claimed(tmp_path, "me:1")
    JobItem.objects.filter(pk=item.pk).update(lease_until=timezone.now())  # about to expire
    monkeypatch.setattr(lease, "HEARTBEAT_SECONDS", 0)
    renewals: list[bool] = []
    real_renew = lease.renew

    def renew(item_id: int, owner: str) -> bool:
        renewals.append(real_renew(item_id, owner))
        if len(renewals) == 2:
            beat.stopped.set()
        return renewals[-1]

    monkeypatch.setattr(lease, "renew", renew)
    beat = lease.Heartbeat(item.pk, "me:1", on_lost=lambda: pytest.fail("the lease is still mine"))
    beat.start()
    beat.join(60)  # a safety net, not a timing: it has stopped itself after two renewals
    assert not beat.is_alive()
    item.refresh_from_db()
    assert renewals == [True, True] and not beat.lost
    assert item.lease_until > timezone.now() + timedelta(seconds=lease.LEASE_SECONDS - 60)

    JobItem.objects.filter(pk=item.pk).update(lease_owner="other:2")
    lost: list[bool] = []
    beat = lease.Heartbeat(item.pk, "me:1", on_lost=lambda: lost.append(True))
    beat.start()
    beat.join(60)  # it ends by itself once it has seen the lease gone
    assert not beat.is_alive()
    assert beat.lost and lost == [True] and renewals[2:] == [False]


def test_a_player_whose_lease_is_taken_over_stops_playing_at_once(tmp_path, monkeypatch):
    """The heartbeat cancels the play: no further request, so no more tokens spent.  Without the
    cancellation the play would wait out the slow answer and ask a third time."""
    import threading

    monkeypatch.setattr(lease, "HEARTBEAT_SECONDS", 0.01)
    released = threading.Event()

    def steal_then_hang(body: dict) -> tuple[int, bytes]:
        if len(seen) == 1:  # another worker takes the item over while this one plays
            JobItem.objects.filter(status=JobItem.Status.RUNNING).update(
                lease_owner="thief:1", lease_until=timezone.now() + timedelta(seconds=300))
            return end_window(body)
        released.wait(20)  # the model is slow: only a cancelled play stops waiting for it
        return end_window(body)

    with chat_stub.endpoint(steal_then_hang) as (base_url, seen):
        item = _job(tmp_path, base_url).items.get()
        try:
            tasks.run_agent_trial.delay(item.pk)
        finally:
            released.set()
        # cancelled while waiting for the first answer or the second: never the third (--max-turns 3)
        assert len(seen) in (1, 2)
    item.refresh_from_db()
    assert (item.status, item.lease_owner, item.result_json) == (JobItem.Status.RUNNING, "thief:1", "")
    assert list(Path(item.params["out"]).parent.iterdir()) == []


def test_retries_reach_the_workers_runner(tmp_path):
    refused = []

    def rate_limited_once(body: dict) -> tuple:
        if not refused:
            refused.append(1)
            return 429, b'{"error": "slow down"}', {"Retry-After": "0"}
        return end_window(body)

    with chat_stub.endpoint(rate_limited_once) as (base_url, _seen):
        run_agents(base_url, tmp_path / "out", "--retries", "1")
    job = Job.objects.get()
    assert job.status == Job.Status.DONE and job.params["retries"] == 1
    assert json.loads(job.items.get().result_json)["metrics"]["retries"] == 1


@pytest.mark.parametrize("raw", ["5m", "0", "9", "nan", "inf", ""])
def test_a_lease_length_that_is_no_usable_number_of_seconds_is_refused_naming_the_variable(raw):
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match=r"^STOREBENCH_AGENT_LEASE_SECONDS must be a number of seconds of "
                                                   r"at least 10, not '.*' \(unset, it is 300\)$"):
        lease._lease_seconds(raw)
    assert lease._lease_seconds("15") == 15.0


def test_a_job_trial_records_the_temperature_it_was_played_with(tmp_path):
    with chat_stub.endpoint(end_window) as (base_url, seen):
        run_agents(base_url, tmp_path / "out", "--temperature", "0.3")
    result = json.loads(Job.objects.get().items.get().result_json)
    assert {body["temperature"] for body in seen} == {0.3} and result["metrics"]["temperature"] == 0.3
    assert json.loads((Path(result["out"]) / "summary.json").read_text())["metrics"]["temperature"] == 0.3

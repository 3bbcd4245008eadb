"""Exports: asynchronous jobs, re-import to the same figures, manifest checksums, codebook, filters."""
import csv
import hashlib
import json
import re
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from test_studies_support import SEEDS, TASKS

from studies import attempts, bots, reference
from studies.assignment import assign
from studies.design import create_study
from studies.export_jobs import request_export
from studies.exports import job_dir
from studies.figures import Filters, study_figures
from studies.models import SCORE_FIELDS, AuditAction, AuditEvent, ExportJob
from studies.tasks import run_export

BOTS = Filters(include_bots=True)


@pytest.fixture(autouse=True)
def export_root(settings, tmp_path):
    settings.STOREBENCH_EXPORT_ROOT = tmp_path / "exports"


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker):
    """One played study for the module (rolled back at the end): 4 cells, 3 bots, one coached retry."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            admin = get_user_model().objects.create_superuser("export-admin", password=None)
            study = create_study(admin, "Export study", TASKS, SEEDS)
            people = [bots.add_bot(admin, study, f"b{i}") for i in range(3)]
            cells = list(study.cells.order_by("task_id", "seed"))
            skills = ["novice", "clerk", "expert", "clerk"]
            first = [bots.play(assign(admin, people[i % 3], c), skills[i]) for i, c in enumerate(cells)]
            bots.play(attempts.grant_coached_retry(admin, first[0], "refund returns too"), "expert")
            attempts.select_by_rule(admin, study, "latest", include_bots=True)
            yield admin, study
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


@pytest.fixture
def admin(built, db):
    return built[0]


@pytest.fixture
def played(built, db):
    return built[1]


def export(admin, study, filters, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = request_export(admin, study, filters)
    job.refresh_from_db()
    return job


def rows_from_csv(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def reference_rows(records):
    return [reference.AttemptRow(
        cell=r["cell"], task=r["task"], person=r["participant_code"], composite=Decimal(str(r["composite"])),
        threshold=Decimal(str(r["threshold"])), selected=r["selected"] in (True, "true"),
        order=(r["completed_at"], int(r["attempt_number"])),
        components={name: Decimal(str(r[name])) if r[name] not in (None, "") else None
                    for name in SCORE_FIELDS})
        for r in records if r["status"] in ("submitted", "timed_out")]


def test_export_runs_on_commit_and_finishes(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    assert (job.status, job.progress) == (ExportJob.Status.DONE, 100)
    assert job.row_counts["attempts.csv"] == 5 and job.row_counts["wide.csv"] == 3
    assert AuditEvent.objects.filter(action=AuditAction.EXPORTED, detail__job=job.pk).exists()


def test_csv_reimports_to_the_same_figures(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    recomputed = reference.compute(reference_rows(rows_from_csv(job_dir(job.pk) / "attempts.csv")))
    assert recomputed == study_figures(admin, played, BOTS)


def test_json_reimports_to_the_same_figures(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    records = json.loads((job_dir(job.pk) / "attempts.json").read_text())
    recomputed = reference.compute(reference_rows(records))
    aggregates = {(r["figure"], r["group"]): r for r in json.loads((job_dir(job.pk) / "aggregates.json").read_text())}
    for figure, est in [("equal_cell_mean", recomputed.equal_cell), ("equal_person_mean", recomputed.equal_person),
                        ("earliest_attempt_mean", recomputed.earliest), ("pass_rate", recomputed.pass_rate)]:
        assert (aggregates[(figure, "")]["value"], aggregates[(figure, "")]["ci_low"],
                aggregates[(figure, "")]["ci_high"]) == (str(est.value), str(est.low), str(est.high))
    for task, est in recomputed.per_task.items():
        assert aggregates[("task_mean", task)]["value"] == str(est.value)


def test_manifest_checksums_match_the_files(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    directory = job_dir(job.pk)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert sorted(manifest["files"]) == sorted(p.name for p in directory.iterdir() if p.name != "manifest.json")
    for name, entry in manifest["files"].items():
        assert hashlib.sha256((directory / name).read_bytes()).hexdigest() == entry["sha256"]
    assert manifest["files"]["events.csv"]["rows"] == len(rows_from_csv(directory / "events.csv"))


def test_codebook_names_every_column(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    directory = job_dir(job.pk)
    book = json.loads((directory / "codebook.json").read_text())
    for table in ("attempts", "events", "aggregates", "wide"):
        with (directory / f"{table}.csv").open() as fh:
            header = next(csv.reader(fh))
        assert header == [b["column"] for b in book if b["table"] == table]
    assert all(b["type"] and b["meaning"] for b in book)


def test_bots_are_excluded_by_default(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, Filters(), django_capture_on_commit_callbacks)
    assert job.row_counts["attempts.csv"] == 0


def test_coached_filter_drops_retries(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, Filters(include_bots=True, include_coached=False), django_capture_on_commit_callbacks)
    kinds = {r["kind"] for r in rows_from_csv(job_dir(job.pk) / "attempts.csv")}
    assert kinds == {"first"}


def test_event_rows_list_the_audit_log(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    actions = [r["action"] for r in rows_from_csv(job_dir(job.pk) / "events.csv")]
    assert actions.count("retry") == 1 and actions.count("selected") == 4 and "exported" in actions


def test_task_is_idempotent(played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    assert run_export(job.pk) == "skipped"
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.QUEUED)
    before = job.checksums
    assert run_export(job.pk) == "done"
    job.refresh_from_db()
    assert job.checksums["attempts.csv"] == before["attempts.csv"]


def test_unknown_filter_is_named():
    from studies.errors import StudyError

    with pytest.raises(StudyError, match="^unknown filter: include_ghosts; allowed: "):
        Filters.from_mapping({"include_ghosts": "1"})


def test_aggregates_match_the_leaderboard_anchors(played, admin, django_capture_on_commit_callbacks):
    from studies.leaderboard import leaderboard

    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    rows = json.loads((job_dir(job.pk) / "aggregates.json").read_text())
    exported = {r["group"]: r["value"] for r in rows if r["figure"] == "anchor_mean"}
    entries, _ = leaderboard(admin, played, filters=BOTS)
    shown = {e.name: str(e.estimate.value) for e in entries if e.kind == "anchor"}
    assert exported == shown and "smart-triage" in exported


def test_the_export_page_lists_the_manifest_it_serves(client, played, admin, django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    client.force_login(admin)
    url = f"/studies/{played.pk}/exports/{job.pk}/manifest.json"
    assert f'<a href="{url}">manifest.json</a>' in client.get(f"/studies/{played.pk}/exports/").content.decode()
    assert json.loads(b"".join(client.get(url).streaming_content))["files"]["attempts.csv"]["rows"] == 5


def test_a_withdrawal_removes_the_exports_made_before_it(played, admin, django_capture_on_commit_callbacks):
    from studies import bulk
    from studies.errors import StudyError
    from studies.export_jobs import export_file

    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    person = played.participants.get(label="b0")
    assert person.code in (job_dir(job.pk) / "participants.csv").read_text()
    with django_capture_on_commit_callbacks(execute=True):
        bulk.withdraw(admin, person, "asked to leave")
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and not job_dir(job.pk).exists()
    assert job.error.startswith("made before participant b0 withdrew (")
    with pytest.raises(StudyError, match=rf"^export {job.pk} is failed, not done$"):
        export_file(admin, job, "participants.csv")
    event = AuditEvent.objects.get(action=AuditAction.WITHDRAWN)
    assert event.detail["exports_superseded"] == [job.pk]


def test_a_withdrawn_persons_events_leave_the_events_table(played, admin, django_capture_on_commit_callbacks):
    from studies import bulk

    person = played.participants.get(label="b0")
    theirs = set(AuditEvent.objects.filter(study=played, attempt__participant=person).values_list("pk", flat=True))
    assert theirs
    with django_capture_on_commit_callbacks(execute=True):
        bulk.withdraw(admin, person, "asked to leave")
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    text = (job_dir(job.pk) / "events.csv").read_text()
    rows = rows_from_csv(job_dir(job.pk) / "events.csv")
    assert person.code not in text and "asked to leave" not in text
    assert not theirs & {int(r["event_id"]) for r in rows}
    assert "retry" not in [r["action"] for r in rows]  # the module's one coached retry was b0's


def test_the_events_table_follows_the_bot_filter_and_unnames_a_withdrawn_person_in_lists(played, admin):
    from studies import bulk
    from studies.exports import event_rows
    from studies.figures import Filters

    assert {r["participant_code"] for r in event_rows(played, Filters(include_bots=True))} - {""}
    people = {p.code for p in played.participants.filter(is_bot=True)}
    assert not people & {r["participant_code"] for r in event_rows(played, Filters())}
    assert not any(r["action"] == "participant_added" and r["participant_code"] in people
                   for r in event_rows(played, Filters()))
    person = played.participants.get(label="b0")
    AuditEvent.objects.create(study=played, actor=admin, action=AuditAction.BONUS_FILE, reason="",
                              detail={"without_pid": ["b0", "b1"]})
    bulk.withdraw(admin, person, "asked to leave")
    (bonus,) = [r for r in event_rows(played, Filters(include_bots=True)) if r["action"] == AuditAction.BONUS_FILE]
    assert bonus["detail"] == {"without_pid": ["(withdrawn)", "b1"]}


def test_every_decimal_column_is_a_string_or_null_in_json_as_the_codebook_says(played, admin,
                                                                               django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    directory = job_dir(job.pk)
    book = json.loads((directory / "codebook.json").read_text())
    assert any(b["column"] == "(decimal columns)" and "string of its digits" in b["meaning"] for b in book)
    seen = 0
    for table in ("attempts", "aggregates", "wide", "participants"):
        decimals = {b["column"] for b in book if b["table"] == table and b["type"] == "decimal"}
        for row in json.loads((directory / f"{table}.json").read_text()):
            for column in decimals:
                assert row[column] is None or isinstance(row[column], str), (table, column, row[column])
                if row[column] is not None:
                    Decimal(row[column])
                    seen += 1
    assert seen > 0


def test_a_deidentified_export_names_nobody(played, admin, django_capture_on_commit_callbacks):
    """Labels and Prolific ids are left out; the events give a participant's code where their
    label (in a detail) or username (as the actor) stood, and a team member's pseudonym where
    theirs did; the codebook and manifest say so."""
    from studies import audit
    from studies.design import add_member
    from studies.models import Participant, Role
    from studies.participants import add_participant

    user = get_user_model().objects.create_user("rita.example@mail.test", password=None)
    person = add_participant(admin, played, "Rita Example", user=user)
    Participant.objects.filter(pk=person.pk).update(external_ids={"PROLIFIC_PID": "5f1e2d3c4b5a69788796a5b4",
                                                                  "SESSION_ID": "sess-0f9e8d7c6b"})
    audit.record(played, user, AuditAction.CONSENTED, participant=person, version=1)
    audit.record(played, admin, AuditAction.REASSIGNED, from_participant="Rita Example")
    audit.record(played, admin, AuditAction.BONUS_FILE, people=1, without_pid=["Rita Example"])
    audit.record(played, admin, AuditAction.QUOTA_CHANGED, rule="Rita Example")  # not a key that holds labels: left as is
    add_member(admin, played, user, Role.REVIEWER)  # a member event naming her username

    shared = export(admin, played, Filters(include_bots=True, deidentified=True), django_capture_on_commit_callbacks)
    directory = job_dir(shared.pk)
    text = "".join(p.read_text() for p in sorted(directory.iterdir()))
    for secret in ("rita.example@mail.test", "5f1e2d3c4b5a69788796a5b4", "sess-0f9e8d7c6b", "export-admin"):
        assert secret not in text
    assert text.count("Rita Example") == 2  # only the quota event's free-form value, in events.csv and .json
    for name in ("b0", "b1", "b2"):  # the bots' labels too
        assert f'"{name}"' not in (directory / "participants.json").read_text()
    events = rows_from_csv(directory / "events.csv")
    assert any(r["action"] == "consented" and r["actor"] == person.code for r in events)
    assert any(json.loads(r["detail"]).get("from_participant") == person.code for r in events)
    assert any(json.loads(r["detail"]).get("without_pid") == [person.code] for r in events)
    assert any(json.loads(r["detail"]).get("user") == person.code for r in events if r["action"] == "member_added")
    team = {r["actor"] for r in events if r["action"] == "reassigned"}
    assert len(team) == 1 and re.fullmatch(r"team-[0-9a-f]{8}", team.pop())
    coaches = {r["coach"] for r in rows_from_csv(directory / "attempts.csv") if r["coached"] == "true"}
    assert len(coaches) == 1 and re.fullmatch(r"team-[0-9a-f]{8}", coaches.pop())
    assert "participant_label" not in rows_from_csv(directory / "attempts.csv")[0]
    book = json.loads((directory / "codebook.json").read_text())
    assert any(b["column"] == "(de-identified)" for b in book)
    assert json.loads((directory / "manifest.json").read_text())["filters"]["deidentified"] is True

    plain = export(admin, played, BOTS, django_capture_on_commit_callbacks)  # the team's own export keeps them
    kept = (job_dir(plain.pk) / "participants.csv").read_text()
    assert "Rita Example" in kept and "5f1e2d3c4b5a69788796a5b4" in kept


def test_the_exports_page_says_what_each_job_was_asked_for(client, played, admin, django_capture_on_commit_callbacks):
    export(admin, played, Filters(include_bots=True, deidentified=True), django_capture_on_commit_callbacks)
    client.force_login(admin)
    page = client.get(f"/studies/{played.pk}/exports/").content.decode()
    assert '<small class="muted filters">with bots, coached retries; de-identified</small>' in page


def test_the_leaderboards_filters_do_not_offer_de_identification():
    from studies.errors import StudyError

    with pytest.raises(StudyError, match=r"^unknown filter: include_ghosts; allowed: include_bots, include_coached, "
                                         r"include_invalid, include_practice$"):
        Filters.from_mapping({"include_ghosts": "1"}, rows_only=True)


def test_an_exports_folder_is_closed_to_other_accounts_of_the_machine(played, admin,
                                                                      django_capture_on_commit_callbacks):
    job = export(admin, played, BOTS, django_capture_on_commit_callbacks)
    assert job_dir(job.pk).stat().st_mode & 0o007 == 0  # the files hold labels and Prolific ids

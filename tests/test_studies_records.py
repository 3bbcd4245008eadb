"""Records that cannot change quietly: the audit log append-only in the database, the
admin for looking only, every coordinator change audited, selection and policies that
leave bots and not-yet-ready people out, and quotas that hold under concurrent requests
(the concurrency test runs on PostgreSQL: ``make test-services`` or
``DATABASE_URL=postgresql://... pytest -m services tests/test_studies_records.py``)."""
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, connections, transaction
from test_studies_support import SEEDS, TASKS, admin, bot, bot2, cell, make_user, ready_person, study  # noqa: F401

from studies import assignment, attempts, bots
from studies.design import add_consent_version, create_study, set_quota
from studies.errors import StudyError
from studies.models import Attempt, AuditAction, AuditEvent, ConsentVersion

# --- the audit log in the database ---------------------------------------------------------


def test_the_database_refuses_to_update_an_audit_event(study):
    event = AuditEvent.objects.first()
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        AuditEvent._base_manager.filter(pk=event.pk).update(reason="quietly changed")
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE studies_auditevent SET actor_id = NULL")
    assert AuditEvent.objects.get(pk=event.pk).reason == event.reason


def test_the_database_refuses_to_delete_an_audit_event(study):
    count = AuditEvent.objects.count()
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        AuditEvent._base_manager.all()._raw_delete(AuditEvent._base_manager.db)
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM studies_auditevent")
    assert AuditEvent.objects.count() == count > 0


def test_appending_still_works(study, admin):
    before = AuditEvent.objects.count()
    add_consent_version(admin, study, "v1 text")
    assert AuditEvent.objects.count() == before + 1


# --- the admin is for looking ----------------------------------------------------------------


@pytest.fixture
def admin_client(client, admin):
    client.force_login(admin)
    return client


def test_the_admin_cannot_change_scores_status_or_selection(admin_client, study, admin, bot, cell):
    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    page = admin_client.get(f"/admin/studies/attempt/{attempt.pk}/change/")
    assert page.status_code == 200 and b'name="composite"' not in page.content
    posted = admin_client.post(f"/admin/studies/attempt/{attempt.pk}/change/",
                               {"composite": "1.0", "status": "submitted", "passed": "on", "is_selected": "on"})
    assert posted.status_code == 403
    fresh = Attempt.objects.get(pk=attempt.pk)
    assert (fresh.composite, fresh.passed, fresh.is_selected) == (attempt.composite, attempt.passed, False)


def test_the_admin_cannot_add_an_audit_event(admin_client, study):
    assert admin_client.get("/admin/studies/auditevent/add/").status_code == 403


def test_consent_text_cannot_be_edited_and_a_new_text_is_a_new_audited_version(admin_client, study, admin):
    first = add_consent_version(admin, study, "original text")
    posted = admin_client.post(f"/admin/studies/consentversion/{first.pk}/change/", {"text": "rewritten"})
    assert posted.status_code == 403
    assert ConsentVersion.objects.get(pk=first.pk).text == "original text"
    added = admin_client.post("/admin/studies/consentversion/add/", {"study": study.pk, "text": "second text"})
    assert added.status_code == 302
    assert list(study.consent_versions.order_by("version").values_list("version", "text")) == [
        (1, "original text"), (2, "second text")]
    event = AuditEvent.objects.filter(action=AuditAction.CONSENT_PUBLISHED).last()
    assert (event.actor, event.detail["version"]) == (admin, 2)


def test_a_quota_change_is_audited(study, admin, cell):
    set_quota(admin, study, cell, 3)
    event = AuditEvent.objects.get(action=AuditAction.QUOTA_CHANGED)
    assert (event.actor, event.cell, event.detail) == (admin, cell, {"before": 1, "after": 3})


# --- selection and policies --------------------------------------------------------------------


def test_selection_by_rule_never_picks_a_bot_attempt(study, admin, bot, cell):
    bots.play(assignment.assign(admin, bot, cell), "expert")
    assert attempts.select_by_rule(admin, study, "latest") == []
    assert not Attempt.objects.filter(is_selected=True).exists()
    done = Attempt.objects.get(cell=cell)
    with pytest.raises(StudyError, match="a bot attempt cannot be selected"):
        attempts.select(admin, done, "by hand")


def test_the_leaderboard_says_how_many_cells_the_mean_covers(client, study, admin, bot, cell):
    bots.play(assignment.assign(admin, bot, cell), "clerk")
    attempts.select_by_rule(admin, study, "latest", include_bots=True)
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/").content.decode()
    assert "covers 0 of the study's 4 cells" in html
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert "covers 1 of the study's 4 cells" in html


def test_policies_skip_bots_and_people_who_cannot_start_yet(study, admin, bot):
    ready_person(admin, study, "unbriefed", briefed=False, practised=False)
    ready_person(admin, study, "no-practice", practised=False)
    assert assignment.assign_next(admin, study, policy="balanced") is None
    ready = ready_person(admin, study, "ready")
    made = assignment.assign_next(admin, study, policy="balanced")
    assert made.participant == ready
    assert assignment.assign_next(admin, study, policy="balanced") is None  # the only ready person is busy


# --- concurrency (PostgreSQL row locks) --------------------------------------------------------


def _race(jobs):
    """Run the callables at once (one thread each, own connections); their results or errors."""
    barrier = threading.Barrier(len(jobs))
    results = [None] * len(jobs)

    def run(i, job):
        try:
            barrier.wait()
            results[i] = job()
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.fixture
def on_postgres(transactional_db, skip_or_fail):
    if connection.vendor != "postgresql":
        skip_or_fail("row locks are checked on PostgreSQL (set DATABASE_URL=postgresql://...)")


@pytest.mark.services
def test_a_quota_of_one_holds_under_concurrent_assignment(on_postgres):
    admin = get_user_model().objects.create_superuser("race-admin", password=None)
    study = create_study(admin, "Race", TASKS, SEEDS)
    cell = study.cells.get(task_id="steady", seed=7)
    people = [bots.add_bot(admin, study, f"racer-{i}") for i in range(4)]
    results = _race([lambda p=p: assignment.assign(admin, p, cell) for p in people])
    made = [r for r in results if isinstance(r, Attempt)]
    refused = [r for r in results if not isinstance(r, Attempt)]
    assert len(made) == 1 and Attempt.objects.filter(cell=cell).count() == 1
    assert all(isinstance(r, StudyError) and "is full: 1 of 1" in str(r) for r in refused), refused


@pytest.mark.services
def test_one_open_attempt_per_person_holds_under_concurrent_assignment(on_postgres):
    admin = get_user_model().objects.create_superuser("race-admin", password=None)
    study = create_study(admin, "Race", TASKS, SEEDS, quota=5)
    cell = study.cells.get(task_id="steady", seed=7)
    person = bots.add_bot(admin, study, "racer")
    results = _race([lambda: assignment.assign(admin, person, cell) for _ in range(4)])
    made = [r for r in results if isinstance(r, Attempt)]
    refused = [r for r in results if not isinstance(r, Attempt)]
    assert len(made) == 1 and Attempt.objects.filter(cell=cell).count() == 1
    assert all(isinstance(r, StudyError) and "already has an open attempt" in str(r) for r in refused), refused

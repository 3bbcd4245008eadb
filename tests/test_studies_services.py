"""Study services: roles and scoping, participants and invitations, assignment, actions, audit."""
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone
from test_studies_support import SEEDS, TASKS, admin, bot, bot2, cell, coordinator, make_user, other_study, study  # noqa: F401

from environment.calibration import load_calibration
from shifts.models import Shift
from studies import assignment, attempts, bots, participants
from studies.design import add_consent_version, add_member, check_calibration, create_study
from studies.errors import StudyError, StudyPermissionDenied
from studies.models import AppendOnlyError, Attempt, AttemptKind, AttemptStatus, AuditAction, AuditEvent, Role

# --- roles and scoping ------------------------------------------------------------------


def test_coordinator_of_study_a_cannot_assign_in_study_b(coordinator, other_study, admin):
    target = bots.add_bot(admin, other_study, "b-bot")
    with pytest.raises(StudyPermissionDenied, match="coord-a may not manage participants and attempts: they hold no role in this study"):
        assignment.assign(coordinator, target, other_study.cells.first())


def test_researcher_may_not_manage(study, admin, bot, cell):
    researcher = make_user("res")
    add_member(admin, study, researcher, Role.RESEARCHER)
    with pytest.raises(StudyPermissionDenied, match="res may not manage participants and attempts"):
        assignment.assign(researcher, bot, cell)


def test_reviewer_may_not_export(study, admin):
    from studies.export_jobs import request_export

    reviewer = make_user("rev")
    add_member(admin, study, reviewer, Role.REVIEWER)
    with pytest.raises(StudyPermissionDenied, match="rev may not export data in study 'Study A'"):
        request_export(reviewer, study)


def test_participant_role_cannot_view_study(study, admin):
    from studies.overview import study_overview

    person = make_user("pp")
    participants.add_participant(admin, study, "P", user=person)
    with pytest.raises(StudyPermissionDenied, match="^pp may not view study 'Study A'$"):
        study_overview(person, study)


def test_only_staff_create_studies(db):
    with pytest.raises(StudyError, match="may not create studies \\(staff only\\)"):
        create_study(make_user("nobody"), "X", TASKS, SEEDS)


def test_unknown_task_is_named(admin):
    with pytest.raises(StudyError, match="unknown task 'nope'"):
        create_study(admin, "X", ["nope"], SEEDS)


def test_calibration_hash_is_recorded_and_checked(admin, tmp_path):
    source = (tmp_path / "cal.json")
    from django.conf import settings
    source.write_bytes((settings.BASE_DIR / "calibration" / "public.json").read_bytes())
    study = create_study(admin, "Cal", ["steady"], [7], calibration_path=source)
    assert study.calibration_hash.startswith("sha256:")
    assert check_calibration(study)["tasks"]["steady"]["7"]["threshold"] == float(study.cells.get().threshold)
    source.write_bytes(source.read_bytes() + b"\n")
    with pytest.raises(StudyError, match="but study 'Cal' was created with sha256:"):
        check_calibration(study)


@pytest.fixture
def cal_study(admin, tmp_path):
    from django.conf import settings
    source = tmp_path / "cal.json"
    source.write_bytes((settings.BASE_DIR / "calibration" / "public.json").read_bytes())
    return create_study(admin, "Cal", ["steady"], [7], calibration_path=source), source


def test_an_unchanged_calibration_file_is_read_once(cal_study, monkeypatch):
    from studies import design
    study, _source = cal_study
    reads = []
    monkeypatch.setattr(design, "load_calibration", lambda path: reads.append(path) or load_calibration(path))
    for _ in range(3):
        check_calibration(study)
    assert len(reads) == 1


def test_a_calibration_file_replaced_by_one_of_the_same_size_is_read_again(cal_study):
    import os
    study, source = cal_study
    check_calibration(study)
    data = source.read_bytes()
    other = source.with_name("other.json")
    other.write_bytes(data.replace(b'"threshold": 0.7', b'"threshold": 0.6', 1))  # same length, another hash
    assert len(other.read_bytes()) == len(data)
    os.replace(other, source)
    with pytest.raises(StudyError, match="but study 'Cal' was created with sha256:"):
        check_calibration(study)


def test_a_side_file_written_after_a_passing_check_is_read(cal_study):
    study, source = cal_study
    check_calibration(study)
    source.with_name("cal.json.sha256").write_text("sha256:" + "0" * 64 + "\n")
    with pytest.raises(StudyError, match="does not match its recorded hash in cal.json.sha256"):
        check_calibration(study)


def test_cell_copies_threshold_and_anchor_composites(cell, study):
    doc = check_calibration(study)["tasks"]["steady"]["7"]
    assert cell.threshold == Decimal(str(doc["threshold"]))
    assert Decimal(cell.anchors["smart-triage"]) == Decimal(str(doc["anchors"]["smart-triage"]["reward_composite"]))


# --- participants, invitations, consent ---------------------------------------------------


def test_participant_code_is_unguessable_and_unique(study, admin):
    a = participants.add_participant(admin, study, "A")
    b = participants.add_participant(admin, study, "B")
    assert a.code != b.code and len(a.code) >= 24


def test_duplicate_label_is_refused(study, admin):
    participants.add_participant(admin, study, "A")
    with pytest.raises(StudyError, match="study 'Study A' already has a participant labelled 'A'"):
        participants.add_participant(admin, study, "A")


def test_a_label_differing_only_in_case_and_spaces_is_a_duplicate(study, admin):
    participants.add_participant(admin, study, "Alice")
    with pytest.raises(StudyError, match="study 'Study A' already has a participant labelled 'alice'"):
        participants.add_participant(admin, study, " alice ")
    assert list(study.participants.values_list("label", flat=True)) == ["Alice"]


def test_a_bad_email_is_named_and_nobody_is_added(study, admin):
    with pytest.raises(StudyError, match=r"^email 'p1-at-example' is not an e-mail address$"):
        participants.add_participant(admin, study, "P1", email="p1-at-example")
    assert not study.participants.exists()


def test_a_cell_held_at_quota_0_is_assigned_no_more(study, admin, bot, cell):
    from studies.design import set_quota

    set_quota(admin, study, cell, 0)
    with pytest.raises(StudyError, match=r"^cell steady/7 is on hold \(quota 0\): raise its quota on the study page "
                                         r"to assign it again$"):
        assignment.assign(admin, bot, cell)
    assert assignment.assign_next(admin, study, include_bots=True).cell != cell
    with pytest.raises(StudyError, match=r"^the per-cell quota must be 0 \(the cell is assigned no more\) or more, "
                                         r"not -1$"):
        set_quota(admin, study, cell, -1)


def test_bad_qualification_is_named(study, admin):
    with pytest.raises(StudyError, match="years_ecommerce must be a whole number, not 'lots'"):
        participants.add_participant(admin, study, "A", {"years_ecommerce": "lots"})


def test_invitation_accept_creates_account_and_records_prolific_ids(study, admin):
    person = participants.add_participant(admin, study, "A")
    issued = participants.invite(admin, person)
    accepted = participants.accept(issued.token, {"PROLIFIC_PID": "abc123", "STUDY_ID": "s1", "SESSION_ID": "x-9",
                                                  "other": "ignored"})
    assert accepted.user is not None and not accepted.user.has_usable_password()
    assert accepted.external_ids == {"PROLIFIC_PID": "abc123", "STUDY_ID": "s1", "SESSION_ID": "x-9"}


def test_bad_recruitment_id_is_named(study, admin):
    issued = participants.invite(admin, participants.add_participant(admin, study, "A"))
    with pytest.raises(StudyError, match="PROLIFIC_PID must be 1-64 letters, digits"):
        participants.accept(issued.token, {"PROLIFIC_PID": "<script>"})


def test_expired_invitation_is_refused(study, admin, monkeypatch):
    issued = participants.invite(admin, participants.add_participant(admin, study, "A"), max_age_seconds=60)
    now = signing.time.time()
    monkeypatch.setattr(signing.time, "time", lambda: now + 120)
    with pytest.raises(StudyError, match="this invitation link has expired"):
        participants.resolve(issued.token)


def test_revoked_invitation_is_refused(study, admin):
    issued = participants.invite(admin, participants.add_participant(admin, study, "A"))
    participants.revoke(admin, issued.invitation, "sent to the wrong address")
    with pytest.raises(StudyError, match="this invitation link has been revoked"):
        participants.resolve(issued.token)


def test_tampered_invitation_is_refused(study, admin):
    issued = participants.invite(admin, participants.add_participant(admin, study, "A"))
    with pytest.raises(StudyError, match="this invitation link is not valid"):
        participants.resolve(issued.token[:-2] + "xx")


def _person(study, admin):
    """A participant with an account (bots are not asked for consent)."""
    return participants.add_participant(admin, study, "P1", user=make_user("p1"))


def test_assignment_waits_for_current_consent(study, admin, cell):
    add_consent_version(admin, study, "v1 text")
    person = _person(study, admin)
    with pytest.raises(StudyError, match="participant P1 has not accepted the current consent text"):
        assignment.assign(admin, person, cell)
    participants.give_consent(person.user, person, 1)
    add_consent_version(admin, study, "v2 text")
    with pytest.raises(StudyError, match="has not accepted the current consent text"):
        assignment.assign(admin, person, cell)


def test_consent_records_version_and_time(study, admin):
    add_consent_version(admin, study, "v1 text")
    person = _person(study, admin)
    participants.give_consent(person.user, person, 1)
    person.refresh_from_db()
    assert person.consent_version.version == 1 and person.consented_at is not None


def test_stale_consent_version_is_refused(study, admin):
    add_consent_version(admin, study, "v1")
    person = _person(study, admin)
    add_consent_version(admin, study, "v2")
    with pytest.raises(StudyError, match="consent version 1 is not the current version \\(2\\)"):
        participants.give_consent(person.user, person, 1)


# --- assignment ---------------------------------------------------------------------------


def test_second_open_attempt_on_a_cell_is_refused_with_a_clear_error(study, admin, bot, cell):
    cell.quota = 3
    cell.save()
    assignment.assign(admin, bot, cell)
    with pytest.raises(StudyError, match=r"participant bot-1 already has an open attempt on cell steady/7 \(attempt #1, assigned\)"):
        assignment.assign(admin, bot, cell)


def test_an_attempt_whose_shift_ran_out_of_time_is_settled_before_the_open_attempt_check(study, admin, bot, cell):
    cell.quota = 3
    cell.save()
    first = assignment.assign(admin, bot, cell)
    now = timezone.now()  # started 12 hours ago (a bot's briefing is its script's business)
    Shift.objects.filter(pk=first.shift_id).update(status=Shift.Status.ACTIVE, started_at=now - timedelta(hours=12),
                                                   deadline=now - timedelta(minutes=1))
    second = assignment.assign(admin, bot, cell, practice=True)  # a scored one: seen_refusal
    first.refresh_from_db()
    assert first.status == AttemptStatus.TIMED_OUT and second.number == 2


def test_database_refuses_two_open_attempts_by_one_person_on_one_cell(study, admin, bot, cell):
    first = assignment.assign(admin, bot, cell)
    shift = Shift.objects.create(participant=bot.user, task_id="steady", seed=7)
    with pytest.raises(IntegrityError), transaction.atomic():
        Attempt.objects.create(study=study, cell=cell, participant=bot, shift=shift, number=first.number + 1,
                               completion_code="X")


def test_database_refuses_two_selected_attempts_in_a_cell(study, admin, bot, bot2, cell):
    cell.quota = 2
    cell.save()
    a = assignment.assign(admin, bot, cell)
    b = assignment.assign(admin, bot2, cell)
    Attempt.objects.filter(pk=a.pk).update(is_selected=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Attempt.objects.filter(pk=b.pk).update(is_selected=True)


def test_quota_is_enforced(study, admin, bot, bot2, cell):
    assignment.assign(admin, bot, cell)
    with pytest.raises(StudyError, match="cell steady/7 is full: 1 of 1 places taken, 1 of them by rehearsal bots; raise its quota"):
        assignment.assign(admin, bot2, cell)


def test_participant_without_account_cannot_be_assigned(study, admin, cell):
    person = participants.add_participant(admin, study, "no-account")
    with pytest.raises(StudyError, match="participant no-account has not accepted an invitation yet"):
        assignment.assign(admin, person, cell)


def test_assignment_creates_a_console_shift_and_an_audit_event(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell, reason="first batch")
    assert (attempt.shift.participant, attempt.shift.task_id, attempt.shift.seed) == (bot.user, "steady", 7)
    event = AuditEvent.objects.get(action=AuditAction.ASSIGNED)
    assert (event.actor, event.attempt, event.reason, event.detail["rule"]) == (admin, attempt, "first batch", "manual")


def test_balanced_policy_fills_cells_evenly(study, admin):
    people = [bots.add_bot(admin, study, f"b{i}") for i in range(4)]
    made = [assignment.assign_next(admin, study, policy="balanced", include_bots=True) for _ in people]
    assert sorted(a.cell.key for a in made) == ["steady/11", "steady/7", "trade-war/11", "trade-war/7"]
    assert assignment.assign_next(admin, study, policy="balanced", include_bots=True) is None  # every cell full, everyone busy


def test_automatic_assignment_leaves_out_a_cell_whose_task_was_removed(study, admin):
    from studies.models import Cell

    Cell.objects.filter(study=study, task_id="steady", seed=7).update(task_id="retired-task")
    people = [bots.add_bot(admin, study, f"b{i}") for i in range(4)]
    made = [assignment.assign_next(admin, study, policy="balanced", include_bots=True) for _ in people]
    assert sorted(a.cell.key for a in made if a is not None) == ["steady/11", "trade-war/11", "trade-war/7"]
    assert made[-1] is None  # the fourth person waits: the only cell left has no task here


def test_random_policy_is_seeded(admin):
    def run(name):
        s = create_study(admin, name, TASKS, SEEDS, random_seed=3)
        for i in range(3):
            bots.add_bot(admin, s, f"b{i}")
        return [(a.participant.label, a.cell.key) for a in
                [assignment.assign_next(admin, s, policy="random", include_bots=True) for _ in range(3)]]
    assert run("R1") == run("R2")


def test_an_unknown_policy_is_refused_by_name(study, admin, bot):
    with pytest.raises(StudyError, match=r"^unknown assignment policy 'greedy'; choose one of balanced, random, "
                                         r"adaptive$"):
        assignment.assign_next(admin, study, policy="greedy", include_bots=True)


def test_a_bug_inside_a_policy_is_raised_not_shown_as_a_refusal(study, admin, bot, monkeypatch):
    def broken(*args):
        raise ValueError("a bug in the policy")

    monkeypatch.setattr(assignment, "choose", broken)
    with pytest.raises(ValueError, match="^a bug in the policy$") as raised:
        assignment.assign_next(admin, study, policy="balanced", include_bots=True)
    assert type(raised.value) is ValueError  # not a StudyError, which the pages show as a refusal


def test_adaptive_policy_favours_the_better_performer(study, admin):
    weak, strong = bots.add_bot(admin, study, "weak"), bots.add_bot(admin, study, "strong")
    cells = list(study.cells.all())
    bots.play(assignment.assign(admin, weak, cells[0]), "idle")
    bots.play(assignment.assign(admin, strong, cells[1]), "expert")
    nxt = assignment.assign_next(admin, study, policy="adaptive", include_bots=True)
    assert nxt.participant == strong


# --- attempt actions -----------------------------------------------------------------------


def test_bot_attempt_is_graded_with_the_study_calibration(study, admin, bot, cell):
    done = bots.play(assignment.assign(admin, bot, cell), "clerk")
    assert done.status == AttemptStatus.SUBMITTED
    assert done.calibration_hash == study.calibration_hash
    assert done.release and done.is_bot and done.composite > 0


def test_attempt_graded_with_another_calibration_is_invalid(study, admin, bot, cell):
    from shifts.lifecycle import begin_shift

    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)  # running when the calibration changes: left to end, then invalid
    study.calibration_hash = "sha256:other"
    study.save()
    attempt.study = study
    done = bots.play(attempt, "novice")
    assert done.status == AttemptStatus.INVALID
    assert done.end_reason.endswith("not the study's sha256:other")


def test_coached_retry_needs_a_note(study, admin, bot, cell):
    done = bots.play(assignment.assign(admin, bot, cell), "novice")
    with pytest.raises(StudyError, match="a reason is required to grant a coached retry"):
        attempts.grant_coached_retry(admin, done, "  ")


def test_coached_retry_records_coach_and_note(study, admin, bot, cell):
    done = bots.play(assignment.assign(admin, bot, cell), "novice")
    retry = attempts.grant_coached_retry(admin, done, "ship the oldest orders first")
    assert (retry.kind, retry.coach, retry.coach_note, retry.replaces, retry.number) == (
        AttemptKind.COACHED_RETRY, admin, "ship the oldest orders first", done, 2)
    assert AuditEvent.objects.filter(action=AuditAction.RETRY, attempt=retry).exists()


def test_open_attempt_cannot_be_retried(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    with pytest.raises(StudyError, match="attempt #1 on cell steady/7 is assigned; only a completed attempt can be retried"):
        attempts.grant_coached_retry(admin, attempt, "note")


def test_reassignment_flags_platform_fault_and_goes_to_someone_else(study, admin, bot, bot2, cell):
    attempt = assignment.assign(admin, bot, cell)
    with pytest.raises(StudyError, match="a reassignment goes to another participant"):
        attempts.reassign(admin, attempt, bot, "crash")
    new = attempts.reassign(admin, attempt, bot2, "server crashed")
    attempt.refresh_from_db()
    assert attempt.platform_fault and attempt.status == AttemptStatus.ABANDONED
    assert (new.kind, new.participant, new.replaces) == (AttemptKind.REASSIGNMENT, bot2, attempt)


def test_extend_deadline_moves_the_shift_deadline_and_logs_it(study, admin, bot, cell):
    from shifts.lifecycle import begin_shift

    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    before = Shift.objects.get(pk=attempt.shift_id).deadline
    attempts.extend_deadline(admin, attempt, 90, "fire alarm")
    assert Shift.objects.get(pk=attempt.shift_id).deadline - before == timedelta(minutes=90)
    event = AuditEvent.objects.get(action=AuditAction.DEADLINE_CHANGED)
    assert (event.reason, event.detail["minutes"]) == ("fire alarm", 90)


def test_a_deadline_change_that_would_put_the_deadline_in_the_past_is_refused_and_changes_nothing(
        study, admin, bot, cell):
    from django.utils import timezone

    from shifts.lifecycle import begin_shift

    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    soon = timezone.now() + timedelta(minutes=5)
    Shift.objects.filter(pk=attempt.shift_id).update(deadline=soon)
    attempt.refresh_from_db()
    with pytest.raises(StudyError, match=r"would put it at .*which has already passed.*use force end to end the "
                                         r"shift"):
        attempts.extend_deadline(admin, attempt, -10, "typo")
    assert Shift.objects.get(pk=attempt.shift_id).deadline == soon
    assert not AuditEvent.objects.filter(action=AuditAction.DEADLINE_CHANGED).exists()


def test_extend_deadline_needs_a_reason(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    with pytest.raises(StudyError, match="a reason is required to change a deadline"):
        attempts.extend_deadline(admin, attempt, 30, "")


def test_force_end_grades_the_shift(study, admin, bot, cell):
    from shifts.lifecycle import begin_shift

    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    ended = attempts.force_end(admin, attempt, "participant left")
    assert ended.status == AttemptStatus.SUBMITTED
    assert ended.end_reason == "ended by the coordinator: participant left"


def test_a_shift_whose_task_was_removed_is_not_force_ended_and_the_refusal_names_the_task(study, admin, bot, cell,
                                                                                         caplog):
    from shifts import cache
    from shifts.lifecycle import begin_shift
    from studies.settling import settle_ended

    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    Shift.objects.filter(pk=attempt.shift_id).update(task_id="retired-task",
                                                     deadline=timezone.now() - timedelta(minutes=1))
    cache.evict(attempt.shift_id)
    settle_ended(Attempt.objects.filter(pk=attempt.pk))  # a sweep goes on: the record stays
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.ACTIVE
    assert [r.name for r in caplog.records if "cannot be ended" in r.getMessage()] == ["studies.settling"]
    for action, done in ((attempts.force_end, "ended"), (attempts.invalidate, "invalidated")):
        with pytest.raises(StudyError, match=rf"attempt #1 on cell {cell.key} cannot be {done}: its running shift's "
                                             r"task 'retired-task' cannot be loaded on this server.*install that "
                                             r"task file again, then try again"):
            action(admin, Attempt.objects.get(pk=attempt.pk), "participant left")
    assert Shift.objects.get(pk=attempt.shift_id).status == Shift.Status.ACTIVE
    assert not AuditEvent.objects.filter(action__in=[AuditAction.FORCE_ENDED, AuditAction.INVALIDATED]).exists()
    with pytest.raises(StudyError, match=r"is active; only a completed attempt can be retried \(its shift is past "
                                         r"its deadline but cannot be ended: its task 'retired-task' cannot be loaded "
                                         r"on this server; install that task file again\)$"):
        attempts.grant_coached_retry(admin, Attempt.objects.get(pk=attempt.pk), "try again")


def test_a_cell_whose_task_was_removed_is_not_assigned_and_the_refusal_names_the_task(study, admin, bot, cell):
    from studies.models import Cell

    Cell.objects.filter(pk=cell.pk).update(task_id="retired-task")
    with pytest.raises(StudyError, match=r"cell retired-task/7 cannot be assigned: its task cannot be "
                                         r"loaded on this server \(unknown task 'retired-task'.*install that task "
                                         r"file again"):
        assignment.assign(admin, bot, Cell.objects.get(pk=cell.pk))
    assert not Attempt.objects.exists()


def test_invalidate_drops_the_selection(study, admin, bot, cell):
    done = bots.play(assignment.assign(admin, bot, cell), "novice")
    attempts.select(admin, done, "only one", include_bots=True)
    out = attempts.invalidate(admin, done, "shared screen with another participant")
    assert out.status == AttemptStatus.INVALID and not out.is_selected


def test_select_replaces_the_previous_selection(study, admin, bot, cell):
    first = bots.play(assignment.assign(admin, bot, cell), "novice")
    attempts.select(admin, first, "first", include_bots=True)
    retry = bots.play(attempts.grant_coached_retry(admin, first, "coached"), "clerk")
    attempts.select(admin, retry, "retry is better", include_bots=True)
    first.refresh_from_db()
    assert not first.is_selected and Attempt.objects.get(cell=cell, is_selected=True) == retry
    assert AuditEvent.objects.filter(action=AuditAction.SELECTED).last().detail["previous"] == first.pk


def test_manual_selection_needs_a_reason(study, admin, bot, cell):
    done = bots.play(assignment.assign(admin, bot, cell), "novice")
    with pytest.raises(StudyError, match="a reason is required to select an attempt by hand"):
        attempts.select(admin, done, "")


def test_open_attempt_cannot_be_selected(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    with pytest.raises(StudyError, match="attempt #1 on cell steady/7 is assigned; only a completed attempt can be selected"):
        attempts.select(admin, attempt, "why not")


def test_completion_code_appears_only_after_the_shift_is_committed(study, admin, bot, cell):
    attempt = assignment.assign(admin, bot, cell)
    assert attempts.completion_code_for(bot.user, attempt) is None
    done = bots.play(attempt, "novice")
    assert attempts.completion_code_for(bot.user, done) == done.completion_code


# --- audit log ----------------------------------------------------------------------------


def test_audit_event_cannot_be_updated(study):
    event = AuditEvent.objects.filter(study=study).first()
    event.reason = "rewritten"
    with pytest.raises(AppendOnlyError, match="the audit log is append-only: events cannot be updated"):
        event.save()


def test_audit_event_cannot_be_deleted(study):
    with pytest.raises(AppendOnlyError, match="events cannot be deleted"):
        AuditEvent.objects.filter(study=study).first().delete()


def test_audit_log_refuses_bulk_update_and_delete(study):
    with pytest.raises(AppendOnlyError, match="events cannot be updated"):
        AuditEvent.objects.filter(study=study).update(reason="x")
    with pytest.raises(AppendOnlyError, match="events cannot be deleted"):
        AuditEvent.objects.filter(study=study).delete()


def test_paused_shift_shows_as_paused_and_can_be_force_ended(study, admin, bot, cell):
    from shifts.lifecycle import begin_shift, pause_shift

    attempt = assignment.assign(admin, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    pause_shift(attempt.shift, "lunch")
    assert attempt.outcome.status == AttemptStatus.PAUSED  # read through the shift, nothing written
    assert attempts.settle(attempt).status == AttemptStatus.PAUSED
    ended = attempts.force_end(admin, attempt, "did not come back")
    assert ended.status == AttemptStatus.SUBMITTED and ended.composite is not None


def test_adopting_someone_elses_practice_shift_is_refused(study, admin, bot, bot2, cell):
    shift = Shift.objects.create(participant=bot2.user, task_id="steady", seed=7, is_practice=True)
    with pytest.raises(StudyError, match=f"shift {shift.pk} is not a practice shift of participant bot-1"):
        assignment.adopt_practice_shift(admin, bot, cell, shift)


def test_bot_skills_order_their_scores(study, admin, cell):
    cell.quota = 4
    cell.save()
    scores = {}
    for skill in ("idle", "novice", "clerk", "expert"):
        person = bots.add_bot(admin, study, f"bot-{skill}")
        scores[skill] = bots.play(assignment.assign(admin, person, cell), skill).composite
    assert scores["idle"] < scores["novice"] < scores["clerk"] < scores["expert"]


def test_a_withdrawn_participant_is_not_assigned_a_cell_by_hand(study, admin, bot, cell):
    from studies import bulk

    bulk.withdraw(admin, bot, "asked to leave")
    with pytest.raises(StudyError, match=r"participant bot-1 withdrew on \d{4}-\d\d-\d\d; no cell is assigned to them"):
        assignment.assign(admin, bot, cell)
    assert not bot.attempts.exists()


def test_no_team_role_goes_to_someone_with_a_scored_shift_still_to_play(study, admin, bot, cell):
    from studies.design import add_member
    from studies.models import Role

    attempt = assignment.assign(admin, bot, cell)
    with pytest.raises(StudyError, match=rf"^{re.escape(bot.user.get_username())} still has 1 scored shift to play or "
                                         r"finish; a researcher role would show them what a participant may not see"):
        add_member(admin, study, bot.user, Role.RESEARCHER)
    bots.play(attempt, "clerk")
    assert add_member(admin, study, bot.user, Role.RESEARCHER).role == Role.RESEARCHER


def test_a_study_name_that_differs_only_in_case_is_refused(study, admin):
    from studies.design import create_study

    with pytest.raises(StudyError, match=r"^a study named 'Study A' already exists; study names must differ by more "
                                         r"than case$"):
        create_study(admin, "  study a ", ["steady"], [7])


def test_an_account_with_a_team_role_takes_no_scored_attempt_but_may_practise(study, other_study, admin, bot, cell):
    from studies.design import add_member
    from studies.models import Role

    add_member(admin, other_study, bot.user, Role.RESEARCHER)
    with pytest.raises(StudyError, match=r"^participant bot-1's account holds the role researcher in another study, "
                                         r"which shows pass thresholds and the anchors' play: it takes no scored "
                                         r"attempt \(a practice one is allowed\)$"):
        assignment.assign(admin, bot, cell)
    assert assignment.assign(admin, bot, cell, practice=True).is_practice


def test_a_full_cell_counts_the_places_taken_even_after_its_quota_was_lowered(study, admin, bot, bot2, cell):
    from studies.design import set_quota
    from studies.models import Participant

    set_quota(admin, study, cell, 2)
    assignment.assign(admin, bot, cell)
    assignment.assign(admin, bot2, cell)
    set_quota(admin, study, cell, 1)
    third = bots.add_bot(admin, study, "bot-3")
    with pytest.raises(StudyError, match=r"^cell steady/7 is full: 2 of 1 places taken, 2 of them by rehearsal bots"):
        assignment.assign(admin, Participant.objects.get(pk=third.pk), cell)

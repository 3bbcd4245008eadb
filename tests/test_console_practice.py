"""The practice task and the end page's threshold switch.

Practice runs on a dedicated task (environment/tasks/files/practice/) that no eval or
train list contains, that no study can take as a cell, and that is still graded (on
the spot, against its own anchors) so the practice end page reads like a real one.
A study decides whether its participants' end pages show the pass threshold.
"""
import pytest
from django.db import IntegrityError, transaction
from test_studies_support import SEEDS, TASKS, admin, bot, cell, coordinator, study  # noqa: F401

from environment.tasks import all_tasks, get_task
from shifts import briefing, grading
from shifts.models import Shift
from studies import assignment, entry, pay
from studies.design import create_study
from studies.errors import StudyError
from studies.forms import StudyForm
from studies.models import AuditAction, AuditEvent, Cell

PRACTICE_TASK = briefing.PRACTICE_CELL[0]


def test_the_practice_task_is_in_no_eval_or_train_list():
    task = get_task(PRACTICE_TASK)
    assert task.split == "practice" and task.windows <= 6
    assert PRACTICE_TASK not in {t.id for t in all_tasks()}
    assert PRACTICE_TASK not in {t.id for t in all_tasks("eval")} | {t.id for t in all_tasks("train")}
    assert [t.id for t in all_tasks("practice")] == [PRACTICE_TASK]


def test_acknowledging_the_briefing_gives_a_practice_shift_on_the_practice_task(user):
    practice = Shift.objects.get(participant=user) if Shift.objects.filter(participant=user).exists() else None
    assert practice is None  # the fixture acknowledged without the view
    other = briefing.acknowledge_briefing(user, briefing.BRIEFING_VERSION)
    assert other.user == user
    practice = Shift.objects.get(participant=user, is_practice=True)
    assert (practice.task_id, practice.seed) == briefing.PRACTICE_CELL
    assert get_task(practice.task_id).split == "practice"


def test_a_practice_shift_is_graded_against_its_own_anchors(client, user, fresh_console_cache):
    briefing.acknowledge_briefing(user, briefing.BRIEFING_VERSION)
    practice = Shift.objects.get(participant=user, is_practice=True)
    client.force_login(user)
    client.post(f"/shifts/{practice.pk}/start/")
    client.post(f"/shifts/{practice.pk}/end/")
    practice.refresh_from_db()
    assert practice.status == Shift.Status.ENDED and practice.score_composite is not None
    assert practice.calibration_source == "calibrated for this cell on the spot" and practice.calibration_hash == ""
    cell, _, _ = grading.grading_cell(*briefing.PRACTICE_CELL)
    assert grading.grading_cell(*briefing.PRACTICE_CELL)[0] is cell  # computed once per process
    html = client.get("/").content.decode()
    assert "Done: scored shifts are unlocked." in html and 'id="next-step"' in html
    end_page = client.get(f"/shifts/{practice.pk}/").content.decode()
    # no verdict: on a three-day store where nothing reordered lands, shipping everything scores above judgment,
    # and a "would have passed" there would teach the opposite of what a scored shift rewards
    assert "Practice: not counted, and no pass or fail." in end_page and 'id="verdict"' not in end_page
    # what a first-timer's low business means, and where the decisions that raise it are described
    assert 'id="practice-reading"' in end_page and "0 means no better than" in end_page
    assert 'href="/briefing/#heuristics"' in end_page


def test_a_study_refuses_the_practice_task_as_a_cell(admin):  # noqa: F811
    with pytest.raises(StudyError, match="'practice' is the console's practice task, never a study cell"):
        create_study(admin, "With practice", ["steady", PRACTICE_TASK], [1])
    form = StudyForm({"name": "x", "tasks": [PRACTICE_TASK], "seeds": "1", "quota": 1, "policy": "balanced",
                      "random_seed": 0})
    assert not form.is_valid()
    assert "practice is not a task a study can use (the practice task is never a study cell)" in str(form.errors)


def test_a_practice_attempt_on_a_study_cell_is_not_the_briefings_practice(client, admin, bot, cell,  # noqa: F811
                                                                          fresh_console_cache):
    on_cell = assignment.assign(admin, bot, cell, practice=True)  # given before the briefing was read
    briefing.acknowledge_briefing(bot.user, briefing.BRIEFING_VERSION)
    short = Shift.objects.get(participant=bot.user, task_id=PRACTICE_TASK)
    assert short.is_practice and short.status == Shift.Status.ASSIGNED
    client.force_login(bot.user)
    client.post(f"/shifts/{on_cell.shift_id}/start/")
    client.post(f"/shifts/{on_cell.shift_id}/end/")
    assert Shift.objects.get(pk=on_cell.shift_id).status == Shift.Status.ENDED
    assert not briefing.practice_completed(bot.user)
    client.post(f"/shifts/{short.pk}/start/")
    client.post(f"/shifts/{short.pk}/end/")
    assert briefing.practice_completed(bot.user)


def test_the_database_refuses_a_practice_cell(study):  # noqa: F811
    with pytest.raises(IntegrityError), transaction.atomic():
        Cell.objects.create(study=study, task_id=PRACTICE_TASK, seed=1, threshold="0.5")


def _ended_study_shift(client, study, admin, bot, cell):  # noqa: F811
    from django.utils import timezone

    from shifts.models import BriefingAcknowledgement

    user = bot.user
    BriefingAcknowledgement.objects.create(user=user, version=briefing.BRIEFING_VERSION,
                                           acknowledged_at=timezone.now())
    Shift.objects.create(participant=user, task_id=PRACTICE_TASK, seed=1, is_practice=True,
                         status=Shift.Status.ENDED)
    attempt = assignment.assign(admin, bot, cell)
    client.force_login(user)
    client.post(f"/shifts/{attempt.shift_id}/start/")
    client.post(f"/shifts/{attempt.shift_id}/end/")
    shift = Shift.objects.get(pk=attempt.shift_id)
    assert shift.status == Shift.Status.ENDED
    return shift


def _configure(actor, study, show):  # noqa: F811
    entry.configure(actor, study, entry_open=False, completion_url=study.completion_url, completion_code="",
                    return_code="", base_pay_cents=0, bonus_bands=pay.parse_bands(""), fault_compensation_cents=0,
                    reason="threshold display", show_threshold=show)


def test_the_end_page_shows_the_threshold_only_when_the_study_allows_it(client, study, admin, bot, cell,  # noqa: F811
                                                                        coordinator, fresh_console_cache):
    shift = _ended_study_shift(client, study, admin, bot, cell)
    threshold = shift.score_components["threshold"]
    html = client.get(f"/shifts/{shift.pk}/").content.decode()
    assert 'id="threshold"' not in html and "threshold" not in html.lower()
    assert 'id="practice-reading"' not in html  # a scored shift's page has no practice note

    _configure(coordinator, study, True)
    study.refresh_from_db()
    assert study.show_threshold_to_participants
    event = AuditEvent.objects.filter(action=AuditAction.ENTRY_CHANGED).latest("pk")
    assert event.detail["changed"]["show_threshold_to_participants"] == [False, True]
    assert event.actor == coordinator
    html = client.get(f"/shifts/{shift.pk}/").content.decode()
    assert 'id="threshold"' in html and f"{float(threshold):.3f}" in html

    _configure(coordinator, study, False)
    assert 'id="threshold"' not in client.get(f"/shifts/{shift.pk}/").content.decode()


def test_the_threshold_switch_in_the_study_settings_form(client, study, coordinator):  # noqa: F811
    client.force_login(coordinator)
    data = {"completion_url": study.completion_url, "base_pay_cents": 0, "fault_compensation_cents": 0,
            "reason": "let them see it", "show_threshold_to_participants": "on"}
    client.post(f"/studies/{study.pk}/entry/", data)
    study.refresh_from_db()
    assert study.show_threshold_to_participants
    html = client.get(f"/studies/{study.pk}/").content.decode()
    assert 'name="show_threshold_to_participants" checked' in html
    client.post(f"/studies/{study.pk}/entry/", {**data, "show_threshold_to_participants": ""} | {"reason": "hide"})
    study.refresh_from_db()
    assert not study.show_threshold_to_participants


def test_a_study_practice_attempt_shows_no_verdict_nor_threshold(client, study, admin, bot, cell,  # noqa: F811
                                                                coordinator, fresh_console_cache):
    """A practice attempt on a study's cell (a 15-day store, say): no pass or fail, so no threshold
    to read one from even where the study shows thresholds, and not the practice store's three days."""
    from django.utils import timezone

    from shifts.models import BriefingAcknowledgement

    _configure(coordinator, study, True)
    user = bot.user
    BriefingAcknowledgement.objects.create(user=user, version=briefing.BRIEFING_VERSION,
                                           acknowledged_at=timezone.now())
    attempt = assignment.assign(admin, bot, cell, practice=True)
    client.force_login(user)
    client.post(f"/shifts/{attempt.shift_id}/start/")
    client.post(f"/shifts/{attempt.shift_id}/end/")
    html = client.get(f"/shifts/{attempt.shift_id}/").content.decode()
    assert '<span class="muted" id="practice-note">Practice: not counted, and no pass or fail.</span>' in html
    assert 'id="threshold"' not in html and 'id="verdict"' not in html

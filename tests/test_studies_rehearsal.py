"""A rehearsal from the study page: bots play a study that has a consent text (a
script gives no consent, so none is asked of it or recorded for it), and a rehearsal
that could give no bot a cell is refused with the reason instead of claiming it started."""
import re

import pytest
from test_studies_support import admin, bot, coordinator, study  # noqa: F401

from shifts.models import Shift
from studies import assignment, bots, exports, figures, participants, rehearsal
from studies.design import add_consent_version
from studies.errors import StudyError
from studies.models import Attempt, AttemptStatus


def test_bots_rehearse_a_study_that_has_a_consent_text(client, study, coordinator, admin,
                                                        django_capture_on_commit_callbacks):
    add_consent_version(admin, study, "You agree to take part.")
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/studies/{study.pk}/rehearse/", {"bots": 2, "skill": "clerk"})
    assert [a.status for a in Attempt.objects.filter(study=study)] == [AttemptStatus.SUBMITTED] * 2


def test_a_bot_passes_the_consent_start_gate(study, admin, bot):
    add_consent_version(admin, study, "You agree to take part.")
    shift = assignment.assign(admin, bot, study.cells.first()).shift
    assert participants.consent_gate(bot.user, Shift.objects.get(pk=shift.pk)) is None


def test_no_consent_is_recorded_for_a_rehearsal_bot(study, admin):
    add_consent_version(admin, study, "You agree to take part.")
    bots.play(assignment.assign_next(admin, study, [bots.add_bot(admin, study, "b")], include_bots=True), "idle")
    rows = list(exports.participant_rows(study, figures.Filters(include_bots=True)))
    assert [(r["bot"], r["consent_version"], r["consented_at"]) for r in rows] == [(True, None, None)]


def test_a_rehearsal_that_can_give_no_bot_a_cell_says_why(client, study, coordinator, admin,
                                                          django_capture_on_commit_callbacks):
    for i, cell in enumerate(study.cells.all()):
        assignment.assign(admin, bots.add_bot(admin, study, f"holder-{i}"), cell)
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        html = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 2, "skill": "clerk"}, follow=True
                           ).content.decode()
    assert "no bot can get a cell: every cell&#x27;s quota is taken (4 of 4 places)" in html
    assert "Rehearsal started" not in html and Attempt.objects.filter(study=study).count() == 4


def test_the_page_says_how_many_bots_play_when_fewer_places_are_left(client, study, coordinator, admin,
                                                                     django_capture_on_commit_callbacks):
    for i, cell in enumerate(list(study.cells.all())[:3]):
        assignment.assign(admin, bots.add_bot(admin, study, f"holder-{i}"), cell)
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        html = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 3, "skill": "idle"}, follow=True
                           ).content.decode()
    assert "Rehearsal started: 1 rehearsal attempt, played by scripted bots (only 1 place is left" in html
    assert Attempt.objects.filter(study=study, status=AttemptStatus.SUBMITTED).count() == 1


def test_the_page_counts_rehearsal_attempts_not_bots_when_one_bot_plays_two_cells(
        client, study, coordinator, bot, django_capture_on_commit_callbacks):
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        html = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 2, "skill": "idle"}, follow=True
                           ).content.decode()
    assert "Rehearsal started: 2 rehearsal attempts, played by scripted bots;" in html


def test_a_bot_cannot_record_consent(study, admin, bot):
    add_consent_version(admin, study, "You agree to take part.")
    with pytest.raises(StudyError, match="^bot-1 is a scripted bot; a script gives no consent"):
        participants.give_consent(bot.user, bot, 1)


def test_a_redelivered_rehearsal_task_makes_no_extra_attempts(study, admin):
    rehearsal.run_rehearsal(study.pk, admin.pk, 2, "idle", "r-1")
    rehearsal.run_rehearsal(study.pk, admin.pk, 2, "idle", "r-1")  # the broker delivers it again
    assert Attempt.objects.filter(study=study).count() == 2


def test_a_rerun_plays_an_attempt_its_rehearsal_assigned_but_did_not_play(study, admin):
    cut_short = assignment.assign_next(admin, study, [bots.add_bot(admin, study, "b")], include_bots=True,
                                       reason="rehearsal", rehearsal="r-1")
    rehearsal.run_rehearsal(study.pk, admin.pk, 1, "idle", "r-1")
    assert [(a.pk, a.status) for a in Attempt.objects.filter(study=study)] == [
        (cut_short.pk, AttemptStatus.SUBMITTED)]


def test_a_rehearsal_makes_no_more_bots_than_places_left(study, admin):
    for i, cell in enumerate(list(study.cells.all())[:3]):
        assignment.assign(admin, bots.add_bot(admin, study, f"holder-{i}"), cell)
    rehearsal.rehearse(admin, study, 20, "idle")
    assert list(study.participants.filter(label__startswith="rehearsal-bot").values_list("label", flat=True)) == [
        "rehearsal-bot-4"]


def test_a_rerun_finishes_an_attempt_whose_play_was_cut_short_mid_shift(study, admin):
    cut_short = assignment.assign_next(admin, study, [bots.add_bot(admin, study, "b")], include_bots=True,
                                       reason="rehearsal", rehearsal="r-1")
    from shifts.lifecycle import begin_shift

    bots.Bot(cut_short, bots.SKILLS["idle"]).onboard()
    begin_shift(cut_short.shift)  # the worker died after the bot started its shift
    rehearsal.run_rehearsal(study.pk, admin.pk, 1, "idle", "r-1")
    assert [(a.pk, a.status) for a in Attempt.objects.filter(study=study)] == [
        (cut_short.pk, AttemptStatus.SUBMITTED)]


def test_the_end_page_of_a_study_shift_links_that_studys_page(client, study, admin, bot):
    played = bots.play(assignment.assign_next(admin, study, [bot], include_bots=True, reason="rehearsal"), "idle")
    client.force_login(bot.user)
    html = client.get(f"/shifts/{played.shift_id}/").content.decode()
    assert f'on <a href="/studies/me/?study={study.pk}">your study page</a>' in html


def test_the_study_page_says_a_rehearsal_finished_and_how_many_attempts_it_played(
        client, study, coordinator, django_capture_on_commit_callbacks):
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/studies/{study.pk}/rehearse/", {"bots": 2, "skill": "idle"})
    html = client.get(f"/studies/{study.pk}/").content.decode()
    assert re.search(r'<p id="rehearsal-outcome" class="hint">Last rehearsal, \d{4}-\d\d-\d\d \d\d:\d\d: finished: '
                     r"2 rehearsal attempts played by idle bots\.</p>", html)


def test_a_rehearsal_refused_inside_its_task_is_reported_on_the_study_page(client, study, coordinator):
    assert rehearsal.run_rehearsal(study.pk, coordinator.pk, 2, "bad-skill", "r1") == 0
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/").content.decode()
    assert re.search(r'<p id="rehearsal-outcome" class="error">Last rehearsal, [^:]+:\d\d: failed: unknown bot skill '
                     r"&#x27;bad-skill&#x27;; choose one of idle, novice, clerk, expert\.</p>", html)


def test_a_rehearsal_that_crashes_is_recorded_as_failed_and_raised(study, coordinator, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("cell")

    monkeypatch.setattr(rehearsal, "rehearse", broken)
    with pytest.raises(KeyError):
        rehearsal.run_rehearsal(study.pk, coordinator.pk, 1, "idle", "r2")
    event = rehearsal.last_outcome(study)
    assert (event.action, event.reason, event.detail) == (
        "rehearsal_failed", "internal error (KeyError: 'cell'); the server log has the traceback", {"rehearsal": "r2"})

"""What a QA pass of the coordinator pages found: times as hours, minutes and seconds rather than raw
seconds, scores with three decimals, the coach's score components in words, one label per rehearsal
bot, and a study left on an old calibration refusing new work."""
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from test_studies_support import admin, bot, cell, coordinator, make_user, study  # noqa: F401

from shifts.models import Shift
from studies import assignment, participants
from studies.wording import duration_text

# --- 1. times as h:mm:ss ------------------------------------------------------------------------


def test_a_duration_is_written_as_hours_minutes_and_seconds():
    assert [duration_text(s) for s in (143, 43200, 0, None)] == ["0:02:23", "12:00:00", "0:00:00", "—"]


@pytest.fixture
def ended_12h(coordinator, bot, cell):
    """An attempt whose shift ran 12 hours (43,200 s) with no pause."""
    attempt = assignment.assign(coordinator, bot, cell)
    end = timezone.now()
    Shift.objects.filter(pk=attempt.shift_id).update(status=Shift.Status.ENDED, started_at=end - timedelta(hours=12),
                                                     deadline=end, ended_at=end, wall_seconds=43200,
                                                     active_seconds=43200, paused_seconds=0)
    return attempt


def test_the_coach_view_writes_the_shift_time_as_hours_minutes_and_seconds(client, study, coordinator, ended_12h):
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/attempts/{ended_12h.pk}/shift/").content.decode()
    assert "<tr><th>Time</th><td>wall 12:00:00, active 12:00:00, paused 0:00:00</td></tr>" in html


def test_the_participant_page_writes_active_time_as_hours_minutes_and_seconds(client, study, coordinator, bot,
                                                                              ended_12h):
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/participants/{bot.pk}/").content.decode()
    row = html[html.index('id="person-attempts"'):].split("</tr>")[1]
    assert "<td>12:00:00</td>" in row


def test_the_monitor_writes_wall_and_active_time_as_hours_minutes_and_seconds(client, study, coordinator, bot,
                                                                             cell, monkeypatch):
    attempt = assignment.assign(coordinator, bot, cell)
    now = timezone.now()
    Shift.objects.filter(pk=attempt.shift_id).update(status=Shift.Status.ACTIVE, started_at=now - timedelta(seconds=143),
                                                     deadline=now + timedelta(hours=11))
    monkeypatch.setattr("studies.monitor.timezone.now", lambda: now)
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/monitor/rows/").content.decode()
    assert "<td>0:02:23</td><td>0:02:23</td>" in html


def test_the_pay_page_writes_wall_active_and_paused_time_as_hours_minutes_and_seconds(client, study, coordinator,
                                                                                      cell):
    person = participants.accept(participants.invite(coordinator, participants.add_participant(
        coordinator, study, "P1"), 3600).token, {})
    attempt = assignment.assign(coordinator, person, cell)
    end = timezone.now()
    Shift.objects.filter(pk=attempt.shift_id).update(status=Shift.Status.ENDED, started_at=end - timedelta(hours=12),
                                                     deadline=end, ended_at=end, wall_seconds=43200,
                                                     active_seconds=43170, paused_seconds=30)
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/pay/").content.decode()
    row = html[html.index(f'data-attempt="{attempt.pk}"'):].split("</tr>")[0]
    assert "<td>12:00:00</td><td>11:59:30</td><td>0:00:30</td>" in row


# --- 2. three decimals on the study pages -------------------------------------------------------


@pytest.fixture
def selected(study, admin, bot, cell):
    """A bot's selected attempt (composite 0.025000), its composite then stored as 0.033333."""
    from studies import attempts, bots
    from studies.models import Attempt

    attempt = attempts.select(admin, bots.play(assignment.assign(admin, bot, cell), "clerk"), "the only attempt",
                              include_bots=True)
    Shift.objects.filter(pk=attempt.shift_id).update(score_composite="0.033333")
    Attempt.objects.filter(pk=attempt.pk).update(composite="0.033333")
    return attempt


def test_the_study_page_writes_an_attempts_composite_with_three_decimals(client, study, admin, selected):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/").content.decode()
    row = html[html.index(f'data-attempt="{selected.pk}"'):].split("</tr>")[0]
    assert '<td class="mono">0.033</td>' in row


def test_the_participant_page_writes_an_attempts_composite_with_three_decimals(client, study, admin, bot, selected):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/participants/{bot.pk}/").content.decode()
    row = html[html.index('id="person-attempts"'):].split("</tr>")[1]
    assert '<td class="mono">0.033</td>' in row


def test_the_leaderboard_writes_means_and_intervals_with_three_decimals(client, study, admin, selected):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert ('<tr class="kind-anchor"><td>smart-triage</td><td>anchor</td><td class="mono">0.759</td>\n'
            '<td class="mono">[0.759, 0.759]</td><td>1</td></tr>') in html


def test_the_leaderboard_names_a_component_in_words_beside_its_code_name(client, study, admin, selected):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert ('<tr><td>Component: Orders shipped on time <small class="mono">on_time_rate</small></td>'
            '<td class="mono">15.0%</td><td class="mono">[15.0%, 15.0%]</td><td>1</td></tr>') in html


def test_the_leaderboard_writes_a_components_shares_with_three_decimals(client, study, admin, selected):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    row = html[html.index("<tr><td>Component: Reliability</td>"):].split("</tr>")[0]  # its key, reliability, unsaid
    assert re.search(r'<td class="mono">\d\.\d{3}</td><td class="mono">\[\d\.\d{3}, \d\.\d{3}\]</td>', row)


def test_the_forest_plot_writes_each_mean_and_interval_with_three_decimals(client, study, admin, selected):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert "<title>smart-triage: 0.759 [0.759, 0.759], 1 cell</title>" in html


def test_the_attempts_export_keeps_the_composite_in_full(study, selected):
    """A guard rather than a fix: the export was right and stays so."""
    from studies import exports
    from studies.figures import Filters

    assert [r["composite"] for r in exports.attempt_rows(study, Filters(include_bots=True))] == ["0.033333"]


def test_a_score_that_is_not_a_finite_number_is_written_as_a_dash():
    from studies.wording import score_text

    assert [score_text(v) for v in ("NaN", "Infinity", None, "-0.0001")] == ["—", "—", "—", "0.000"]


# --- 3. the coach's score components --------------------------------------------------------------


@pytest.fixture
def graded(study, coordinator, bot, cell):
    """An attempt whose shift ended with these components, as shifts.grading stores them."""
    attempt = assignment.assign(coordinator, bot, cell)
    now = timezone.now()
    Shift.objects.filter(pk=attempt.shift_id).update(
        status=Shift.Status.ENDED, started_at=now - timedelta(hours=1), ended_at=now, score_composite="0.6123",
        score_components={"business_raw": "23283.47", "business_zero_raw": "51020.1", "business_scale": "29678.93",
                          "on_time_rate": "0.1875", "return_handled_rate": "0.107", "notes": "by hand"})
    return attempt


def _components(client, study, attempt) -> str:
    html = client.get(f"/studies/{study.pk}/attempts/{attempt.pk}/shift/").content.decode()
    return html[html.index('id="components"'):].split("</table>")[0]


def test_the_coach_view_names_the_business_figures_in_words_beside_their_code_names(client, study, coordinator,
                                                                                     graded):
    client.force_login(coordinator)
    table = _components(client, study, graded)
    assert ('<tr><th>Net-asset growth <small class="mono">business_raw</small></th>'
            '<td class="mono">$23,283.47</td></tr>') in table
    assert ('<tr><th>Zero (absentee&#x27;s growth) <small class="mono">business_zero_raw</small></th>'
            '<td class="mono">$51,020.10</td></tr>') in table
    assert '<tr><th>Scale <small class="mono">business_scale</small></th><td class="mono">$29,678.93</td></tr>' in table


def test_the_coach_view_shows_rates_as_percentages_as_the_end_page_does(client, study, coordinator, graded):
    client.force_login(coordinator)
    table = _components(client, study, graded)
    assert ('<tr><th>Orders shipped on time <small class="mono">on_time_rate</small></th>'
            '<td class="mono">18.8%</td></tr>') in table
    assert ('<tr><th>Returns handled <small class="mono">return_handled_rate</small></th>'
            '<td class="mono">10.7%</td></tr>') in table


def test_the_coach_view_names_a_component_it_does_not_know_once(client, study, coordinator, graded):
    client.force_login(coordinator)
    assert '<tr><th>notes</th><td class="mono">by hand</td></tr>' in _components(client, study, graded)


def test_a_count_given_as_infinity_is_a_dash_not_an_error():
    from studies.wording import component_text

    assert component_text("seed", "Infinity") == "—"


def test_a_share_given_as_nan_or_infinity_is_a_dash():
    from studies.wording import component_text

    assert [component_text("business", v) for v in ("NaN", "Infinity", "-Infinity")] == ["—", "—", "—"]


def test_a_count_that_is_not_whole_is_shown_as_given():
    from studies.wording import component_text

    assert component_text("seed", 7.9) == "7.9"


def test_a_share_just_below_zero_is_written_as_zero_without_a_sign():
    from studies.wording import component_text

    assert component_text("business", "-0.0001") == "0.000"


def test_a_component_too_large_to_round_is_shown_as_given():
    from studies.wording import component_text

    assert component_text("net_assets", "1e999999") == "1e999999"


# --- 5. a study whose calibration file changed takes no new work ----------------------------------


def _stale(study):
    """The study as if created before the calibration file changed: its recorded hash is another."""
    from environment.calibration import load_calibration
    from studies.models import Study

    current = load_calibration(study.calibration_path)[1]
    Study.objects.filter(pk=study.pk).update(calibration_hash="sha256:old")
    study.refresh_from_db()
    return (f"calibration file {study.calibration_path} has hash {current}, but study 'Study A' was created with "
            "sha256:old: it assigns no new cell and starts no new attempt (shifts already running end as before, "
            "and are marked invalid): start a new study on the current calibration")


def test_a_study_whose_calibration_changed_assigns_no_cell_by_hand(study, coordinator, bot, cell):
    from studies.errors import StudyError
    from studies.models import Attempt

    reason = _stale(study)
    with pytest.raises(StudyError) as refused:
        assignment.assign(coordinator, bot, cell)
    assert str(refused.value) == reason and not Attempt.objects.exists()


def test_a_study_whose_calibration_changed_assigns_no_cell_by_its_policy(study, coordinator, bot):
    from studies.errors import StudyError
    from studies.models import Attempt

    reason = _stale(study)
    with pytest.raises(StudyError) as refused:
        assignment.assign_next(coordinator, study, [bot], include_bots=True)
    assert str(refused.value) == reason and not Attempt.objects.exists()


def test_an_assigned_shift_of_a_study_whose_calibration_changed_does_not_start(study, coordinator, bot, cell):
    from shifts.errors import StartRefused
    from shifts.lifecycle import begin_shift
    from studies import bots

    attempt = assignment.assign(coordinator, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    reason = _stale(study)
    with pytest.raises(StartRefused) as refused:
        begin_shift(attempt.shift)
    # The participant is not shown the server's file, hashes or advice meant for coordinators.
    assert str(refused.value) == ("This shift is on hold: its study's scoring changed after the study was set up. "
                                  "Your coordinator's study page says so; ask them what to do next.")
    assert "sha256:" in reason and "sha256:" not in str(refused.value)
    assert Shift.objects.get(pk=attempt.shift_id).status == Shift.Status.ASSIGNED


def test_a_shift_running_when_the_calibration_changed_plays_on_and_is_marked_invalid(study, coordinator, bot, cell):
    """A guard rather than a fix: a running shift is left alone, as before."""
    from shifts.lifecycle import begin_shift
    from studies import bots
    from studies.models import AttemptStatus

    attempt = assignment.assign(coordinator, bot, cell)
    bots.Bot(attempt, bots.SKILLS["idle"]).onboard()
    begin_shift(attempt.shift)
    _stale(study)
    attempt.study = study
    done = bots.play(attempt, "idle")
    assert (done.status, done.end_reason.split(", ")[-1]) == (AttemptStatus.INVALID, "not the study's sha256:old")


def test_the_study_page_warns_while_its_calibration_is_stale(client, study, coordinator):
    reason = _stale(study)
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/").content.decode()
    assert (f'<p class="error" id="calibration-stale" role="alert"><strong>Calibration changed:</strong> '
            f"{reason.replace(chr(39), '&#x27;')}.</p>") in html


def test_the_study_page_of_a_current_study_has_no_calibration_warning(client, study, coordinator):
    client.force_login(coordinator)
    assert 'id="calibration-stale"' not in client.get(f"/studies/{study.pk}/").content.decode()


def test_a_rehearsal_of_a_study_whose_calibration_changed_is_refused_on_the_page(client, study, coordinator,
                                                                                 django_capture_on_commit_callbacks):
    reason = _stale(study)
    client.force_login(coordinator)
    with django_capture_on_commit_callbacks(execute=True):
        html = client.post(f"/studies/{study.pk}/rehearse/", {"bots": 2, "skill": "idle"}, follow=True
                           ).content.decode()
    assert reason.replace("'", "&#x27;") in html and "Rehearsal started" not in html

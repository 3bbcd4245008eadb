"""What the studies pages tell coordinators and participants: repeated or uncalibrated cells on
the new-study form, counts in words, money in dollars, call arguments and audit details as JSON,
and a participant's way to their own page from the studies list."""
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from test_studies_support import admin, bot, cell, coordinator, make_user, study  # noqa: F401

from shifts.models import Shift
from studies import assignment, bots, participants
from studies import attempts as attempt_actions
from studies.design import create_study
from studies.errors import StudyError
from studies.models import Study

FORM = {"name": "Pilot", "tasks": ["steady"], "seeds": "7", "quota": 1, "policy": "balanced", "random_seed": 0}


def _new(client, **changes) -> str:
    return client.post("/studies/new/", {**FORM, **changes}, follow=True).content.decode()


# --- the new-study form ------------------------------------------------------------------


def test_the_study_form_refuses_a_seed_given_twice_naming_it(client, admin):
    client.force_login(admin)
    html = _new(client, seeds="7 7")
    assert ('<p class="error">Seeds: seed 7 is given more than once: give each seed once '
            "(each task and seed make one cell of the study)</p>") in html
    assert not Study.objects.filter(name="Pilot").exists()


def test_the_study_form_refuses_a_task_given_twice_naming_it(client, admin):
    client.force_login(admin)
    html = _new(client, tasks=["steady", "liquidity", "steady"], seeds="7 11")
    assert ('<p class="error">Tasks: task steady is given more than once: give each task once '
            "(each task and seed make one cell of the study)</p>") in html
    assert not Study.objects.filter(name="Pilot").exists()


def test_the_study_created_message_says_1_cell(client, admin):
    client.force_login(admin)
    assert "Study &#x27;Pilot&#x27; created with 1 cell." in _new(client)


def test_the_study_created_message_says_2_cells(client, admin):
    client.force_login(admin)
    assert "Study &#x27;Pilot&#x27; created with 2 cells." in _new(client, seeds="7 11")


def test_the_study_page_counts_1_cell(client, admin):
    client.force_login(admin)
    assert " · 1 cell · 0 selected · " in _new(client)


def test_a_seed_the_calibration_file_lacks_is_refused_naming_the_seeds_it_holds(client, admin):
    client.force_login(admin)
    html = _new(client, seeds="0 7")
    assert ('<p class="error">the calibration file has no cell steady/0; it holds steady with seeds 7, 11, 13: '
            "choose from those</p>") in html
    assert not Study.objects.filter(name="Pilot").exists()


def test_every_seed_the_calibration_file_lacks_is_named(admin):
    with pytest.raises(StudyError) as refused:
        create_study(admin, "Pilot", ["steady"], [0, 7, 5])
    assert str(refused.value) == ("the calibration file has no cells steady/0 and steady/5; it holds steady with "
                                  "seeds 7, 11, 13: choose from those")


def test_a_task_the_calibration_file_lacks_is_refused_saying_so(admin, tmp_path):
    doc = json.loads((Path(settings.BASE_DIR) / "calibration" / "public.json").read_text())
    del doc["tasks"]["liquidity"]
    path = tmp_path / "steady-only.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(StudyError) as refused:
        create_study(admin, "Pilot", ["liquidity"], [7], calibration_path=path)
    assert str(refused.value) == ("the calibration file has no cell liquidity/7; it holds no liquidity cell at all: "
                                  "choose another task")


def test_the_missing_cells_of_every_task_are_named_at_once(admin):
    with pytest.raises(StudyError) as refused:
        create_study(admin, "Pilot", ["steady", "liquidity"], [7, 5])
    assert str(refused.value) == (
        "the calibration file has no cell steady/5; it holds steady with seeds 7, 11, 13: choose from those; "
        "the calibration file has no cell liquidity/5; it holds liquidity with seeds 7, 11, 13: choose from those")


# --- other counts ---------------------------------------------------------------------------


def test_an_invitation_of_one_second_is_refused_in_the_singular(study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    with pytest.raises(StudyError) as refused:
        participants.invite(coordinator, person, 1)
    assert str(refused.value) == "an invitation lasts between 60 seconds and 90 days, not 1 second"


def test_a_deadline_moved_into_the_past_by_one_minute_says_minute(study, coordinator, bot, cell):
    attempt = assignment.assign(coordinator, bot, cell)
    now = timezone.now()
    Shift.objects.filter(pk=attempt.shift_id).update(status=Shift.Status.ACTIVE, started_at=now - timedelta(hours=1),
                                                     deadline=now + timedelta(seconds=30))
    attempt.shift.refresh_from_db()
    with pytest.raises(StudyError) as refused:
        attempt_actions.extend_deadline(coordinator, attempt, -1, "network trouble")
    assert str(refused.value).startswith("moving the deadline by -1 minute would put it at ")


# --- the coach's view of a shift, the audit log -------------------------------------------------


@pytest.fixture
def played(study, admin, bot, cell):
    return bots.play(assignment.assign(admin, bot, cell), "clerk")


def test_the_coach_view_shows_the_timeline_in_dollars(client, study, coordinator, played):
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/attempts/{played.pk}/shift/").content.decode()
    table = html[html.index('id="timeline"'):].split("</table>")[0]
    assert "<th>Cash</th><th>Net assets</th>" in table
    assert '<tr><td>W1</td><td class="mono">$28,000.00</td><td class="mono">$37,405.73</td><td>1695</td></tr>' in table


def test_the_coach_view_draws_the_timeline_chart_of_the_end_page(client, study, coordinator, played):
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/attempts/{played.pk}/shift/").content.decode()
    chart = html[html.index('id="timeline-chart"'):].split("</figure>")[0]
    timeline = Shift.objects.get(pk=played.shift_id).timeline
    assert chart.count("<polyline") == 3  # cash, net assets, stock
    assert chart.count("<circle") == 3 * len(timeline)
    first, last = timeline[0], timeline[-1]  # said in words too, for a screen reader
    assert (f"<desc>From W1 to settled: cash $28,000.00 to ${last['cash_cents'] / 100:,.2f}, net assets "
            f"${first['net_assets_cents'] / 100:,.2f} to ${last['net_assets_cents'] / 100:,.2f}, stock "
            f"{first['stock_units']:,} to 0 units.</desc>") in chart
    assert html.index('id="timeline-chart"') < html.index('<details id="timeline-figures">') < html.index('id="timeline"')


def test_the_coach_view_draws_a_timeline_by_replay_for_a_shift_ended_before_timelines_were_kept(
        client, study, coordinator, played):
    kept = Shift.objects.get(pk=played.shift_id).timeline
    Shift.objects.filter(pk=played.shift_id).update(timeline=[])
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/attempts/{played.pk}/shift/").content.decode()
    assert html[html.index('id="timeline-chart"'):].split("</figure>")[0].count("<circle") == 3 * len(kept)
    assert Shift.objects.get(pk=played.shift_id).timeline == []  # a page view writes nothing


def test_the_coach_view_says_why_a_timeline_cannot_be_replayed(client, study, coordinator, played):
    Shift.objects.filter(pk=played.shift_id).update(timeline=[], task_id="retired-task")
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/attempts/{played.pk}/shift/").content.decode()
    said = html.split('id="timeline-missing">')[1].split("</p>")[0]
    assert said.startswith("This shift&#x27;s timeline cannot be drawn")
    assert "The replay said: unknown task &#x27;retired-task&#x27;; known tasks: " in said
    assert 'id="calls"' in html  # the rest of the page is there


def test_the_coach_view_shows_call_arguments_as_json(client, study, coordinator, played):
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/attempts/{played.pk}/shift/").content.decode()
    assert Shift.objects.get(pk=played.shift_id).calls.get(seq=2).arguments == {"page_size": 3}
    assert ('<td class="mono">list_orders</td><td class="mono">{&quot;page_size&quot;: 3}</td>') in html


def test_the_audit_log_shows_details_as_key_value_text_with_json_values(client, study, coordinator, bot):
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/audit/").content.decode()
    assert '<td class="mono">bot: true</td>' in html
    assert '<td class="mono">role: coordinator; user: coord-a</td>' in html  # keys in order, whatever the database


# --- the studies list for a participant ---------------------------------------------------------


def test_a_participant_opening_the_studies_list_is_linked_to_their_own_page(client, study, coordinator):
    person = participants.accept(participants.invite(coordinator, participants.add_participant(
        coordinator, study, "P1"), 3600).token, {})
    client.force_login(person.user)
    html = client.get("/studies/").content.decode()
    assert (f'<p class="taking-part">You take part in Study A: your consent, shifts and completion codes are on '
            f'<a href="/studies/me/?study={study.pk}">your study page</a>.</p>') in html
    assert "You hold no role in any study." not in html


def test_someone_in_no_study_still_hears_they_hold_no_role(client, study):
    client.force_login(make_user("walker"))
    html = client.get("/studies/").content.decode()
    assert "<p>You hold no role in any study.</p>" in html and "taking-part" not in html


def test_create_study_itself_refuses_a_repeated_seed(admin):
    with pytest.raises(StudyError) as refused:
        create_study(admin, "Pilot", ["steady"], [7, 11, 7])
    assert str(refused.value) == ("seed 7 is given more than once: give each seed once (each task and seed make one "
                                  "cell of the study)")
    assert not Study.objects.filter(name="Pilot").exists()


# --- the coach's view of a shift's score components ---------------------------------------------


@pytest.fixture
def graded(study, coordinator, bot, cell):
    """An attempt whose shift ended with these components, as shifts.grading stores them (Decimals as
    strings), plus one key the studies app does not know."""
    attempt = assignment.assign(coordinator, bot, cell)
    now = timezone.now()
    Shift.objects.filter(pk=attempt.shift_id).update(
        status=Shift.Status.ENDED, started_at=now - timedelta(hours=1), ended_at=now, score_composite="0.6123",
        score_components={"net_assets": "41234.5", "business_raw": "-1234.567", "business_zero_raw": None,
                          "business": "0.7", "on_time_rate": "0.912345", "reward_composite": "0.61235",
                          "threshold": "0.55", "return_credit": "2.5", "orders_due": 14, "windows_played": 8,
                          "seed": 7, "bankrupt": False, "task": "steady", "notes": {"by": "a later release"}})
    return attempt


def _components(client, study, attempt) -> str:
    html = client.get(f"/studies/{study.pk}/attempts/{attempt.pk}/shift/").content.decode()
    return html[html.index('id="components"'):].split("</table>")[0]


def _row(label: str, name: str, text: str) -> str:
    return f'<tr><th>{label} <small class="mono">{name}</small></th><td class="mono">{text}</td></tr>'


def test_the_coach_view_shows_money_components_in_dollars(client, study, coordinator, graded):
    client.force_login(coordinator)
    table = _components(client, study, graded)
    assert _row("Net assets after settlement", "net_assets", "$41,234.50") in table
    assert _row("Net-asset growth", "business_raw", "-$1,234.57") in table
    assert _row("Zero (absentee&#x27;s growth)", "business_zero_raw", "—") in table


def test_the_coach_view_shows_shares_and_composites_with_three_decimals(client, study, coordinator, graded):
    client.force_login(coordinator)
    table = _components(client, study, graded)
    assert _row("Business", "business", "0.700") in table
    assert _row("Composite score", "reward_composite", "0.612") in table  # as the summary's composite reads
    assert _row("Pass threshold", "threshold", "0.550") in table
    assert _row("Return credit (returns&#x27; worth)", "return_credit", "2.500") in table


def test_the_coach_view_shows_count_components_as_integers(client, study, coordinator, graded):
    client.force_login(coordinator)
    table = _components(client, study, graded)
    assert _row("Orders due", "orders_due", "14") in table
    assert _row("Windows played", "windows_played", "8") in table and _row("Seed", "seed", "7") in table


def test_the_coach_view_says_whether_the_store_went_bankrupt_in_words(client, study, coordinator, graded):
    client.force_login(coordinator)
    assert _row("Bankrupt", "bankrupt", "no") in _components(client, study, graded)


def test_the_coach_view_shows_components_it_does_not_know_as_they_are(client, study, coordinator, graded):
    client.force_login(coordinator)
    table = _components(client, study, graded)
    assert _row("Task", "task", "steady") in table
    assert '<tr><th>notes</th><td class="mono">{&#x27;by&#x27;: &#x27;a later release&#x27;}</td></tr>' in table


def test_the_audit_log_names_an_attempt_by_its_number_as_the_study_page_does(client, study, coordinator, bot, cell):
    from studies import assignment

    assignment.assign(coordinator, bot, cell)
    other = study.cells.exclude(pk=cell.pk).first()
    attempt = assignment.assign(coordinator, bot, other)  # its cell's attempt #1, not the study's first attempt
    assert attempt.number == 1 and attempt.pk != attempt.number
    client.force_login(coordinator)
    html = client.get(f"/studies/{study.pk}/audit/").content.decode()
    row = html[html.index('<tr data-action="assigned">'):].split("</tr>")[0]  # the newest first
    assert f"<td>{other.key}</td><td>{bot.label}</td><td>#1</td>" in row

"""The wall clock: an absolute 12-hour deadline, pauses, and the deadline sweep."""
import json
import re
from datetime import timedelta

import pytest
from console_helpers import OPS, briefed_user, call, ops_left
from django.core.management import call_command
from django.utils import timezone

from shifts import ending, errors, lifecycle
from shifts.models import Shift, ShiftPause

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")

HX = {"HTTP_HX_REQUEST": "true"}


def make_user(name):
    return briefed_user(name)


def backdate_pause(shift, seconds):
    pause = shift.pauses.get(ended_at__isnull=True)
    ShiftPause.objects.filter(pk=pause.pk).update(started_at=pause.started_at - timedelta(seconds=seconds))


def test_pause_needs_a_reason(signed_in, shift):
    response = signed_in.post(f"/shifts/{shift.pk}/pause/", {"reason": "   "}, follow=True)
    assert [str(m) for m in response.context["messages"]] == ["A reason for the pause is required."]
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE and not shift.pauses.exists()


def test_a_too_long_reason_is_refused(shift):
    with pytest.raises(errors.PauseRefused, match="^The reason is 201 characters long; at most 200 are allowed.$"):
        lifecycle.pause_shift(shift, "x" * 201)


def test_a_bug_while_pausing_is_raised_not_shown_as_a_refusal(signed_in, shift, monkeypatch):
    def broken(shift, now=None):
        raise ValueError("a bug in the deadline check")

    monkeypatch.setattr(lifecycle, "end_if_due", broken)
    with pytest.raises(ValueError, match="^a bug in the deadline check$"):
        signed_in.post(f"/shifts/{shift.pk}/pause/", {"reason": "lunch"})


def test_tool_calls_are_refused_while_paused(signed_in, shift):
    signed_in.post(f"/shifts/{shift.pk}/pause/", {"reason": "lunch"})
    shift.refresh_from_db()
    assert shift.status == Shift.Status.PAUSED
    response = call(signed_in, shift, "list_orders")
    assert response.status_code == 200
    assert "The shift is paused: resume it before calling a tool." in response.content.decode()
    assert shift.calls.count() == 1  # only the opening store_status
    page = signed_in.get(f"/shifts/{shift.pk}/").content.decode()
    assert "Shift paused" in page and 'id="tool-' not in page and "Paused: lunch" in page
    assert "the 12-hour wall-clock deadline keeps running during the break" in page


def test_resume_records_the_pause_and_splits_the_time(signed_in, shift):
    deadline = shift.deadline
    Shift.objects.filter(pk=shift.pk).update(started_at=shift.started_at - timedelta(hours=1))
    lifecycle.pause_shift(shift, "phone call")
    backdate_pause(shift, 600)
    signed_in.post(f"/shifts/{shift.pk}/resume/")
    shift.refresh_from_db()
    pause = shift.pauses.get()
    assert pause.reason == "phone call" and pause.ended_at is not None
    assert shift.status == Shift.Status.ACTIVE
    assert shift.deadline == deadline  # pausing does not move the deadline
    assert 600 <= shift.paused_seconds <= 605
    assert 3600 <= shift.wall_seconds <= 3605
    assert shift.active_seconds == shift.wall_seconds - shift.paused_seconds
    assert ops_left(call(signed_in, shift, "list_orders").content.decode()) == OPS - 1


def test_resume_when_not_paused_is_refused(shift):
    with pytest.raises(errors.ShiftNotActive, match="^The shift is not paused; it is active.$"):
        lifecycle.resume_shift(shift)


def test_store_clock_does_not_move_with_wall_time(signed_in, shift):
    before = shift.calls.get().header
    lifecycle.pause_shift(shift, "coffee")
    backdate_pause(shift, 3 * 3600)
    lifecycle.resume_shift(shift)
    Shift.objects.filter(pk=shift.pk).update(started_at=shift.started_at - timedelta(hours=4))
    call(signed_in, shift, "store_status")
    assert shift.calls.order_by("-seq").first().header == before


def test_sweep_ends_only_shifts_past_their_deadline(db):
    due = lifecycle.start_shift(make_user("erin"), "counter-punch", 7, practice=True)
    running = lifecycle.start_shift(make_user("fred"), "counter-punch", 7, practice=True)
    lifecycle.pause_shift(due, "closed the laptop")
    Shift.objects.filter(pk=due.pk).update(deadline=timezone.now() - timedelta(seconds=5))
    assert ending.enforce_deadlines() == [due.pk]
    assert ending.enforce_deadlines() == []  # idempotent
    due.refresh_from_db()
    running.refresh_from_db()
    assert due.status == Shift.Status.ENDED and due.end_reason == "deadline"
    assert due.score_composite is not None and due.timeline
    assert due.pauses.get().ended_at is not None
    assert running.status == Shift.Status.ACTIVE


def test_wall_time_stops_at_the_deadline(db):
    shift = lifecycle.start_shift(make_user("gina"), "counter-punch", 7, practice=True)
    start = timezone.now() - timedelta(hours=13)
    Shift.objects.filter(pk=shift.pk).update(started_at=start, deadline=start + timedelta(hours=12))
    ending.enforce_deadlines()
    shift.refresh_from_db()
    assert shift.wall_seconds == 12 * 3600 and shift.active_seconds == 12 * 3600 and shift.paused_seconds == 0


def test_enforce_deadlines_command(db, capsys):
    shift = lifecycle.start_shift(make_user("hugo"), "counter-punch", 7, practice=True)
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    call_command("enforce_deadlines", "--json")
    assert json.loads(capsys.readouterr().out) == {"ended": [shift.pk]}
    call_command("enforce_deadlines")
    assert capsys.readouterr().out.strip() == "ended 0 shift(s) past their deadline"


def test_countdown_and_deadline_note_on_the_page(signed_in, shift):
    html = signed_in.get(f"/shifts/{shift.pk}/").content.decode()
    left = int(re.search(r'id="countdown" data-seconds-left="(\d+)"', html).group(1))
    assert 12 * 3600 - 60 <= left <= 12 * 3600
    assert "(wall clock, breaks included)" in html
    assert f'hx-get="/shifts/{shift.pk}/bar/" hx-trigger="every 60s"' in html


def test_the_polled_bar_reloads_the_page_once_the_shift_is_past_its_deadline(signed_in, shift):
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    response = signed_in.get(f"/shifts/{shift.pk}/bar/", **HX)
    assert response.status_code == 204 and response["HX-Redirect"] == f"/shifts/{shift.pk}/"
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE  # the poll only reloads the page, which offers the end


def test_the_live_state_of_a_shift_past_its_deadline_says_due_and_writes_nothing(shift):
    from console.consumers import shift_state

    assert shift_state(shift.pk)["due"] is False
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    state = shift_state(shift.pk)
    assert (state["due"], state["status"], state["seconds_left"]) == (True, "active", 0)
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE

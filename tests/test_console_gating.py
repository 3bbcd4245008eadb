"""The briefing must be acknowledged and the practice shift ended before scored shifts."""
import re

import pytest
from django.contrib.auth import get_user_model

from shifts import briefing, errors, lifecycle
from shifts.models import BriefingAcknowledgement, Shift

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("carol", password="pw-carol-123")


@pytest.fixture
def carol(client, user):
    client.force_login(user)
    return client


def flash(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_briefing_page_has_the_required_sections(carol):
    html = carol.get("/briefing/").content.decode()
    headings = re.findall(r"<h2>\d+\. ([^<]+)</h2>", html)
    assert headings == [
        "Operations and budgets", "Shipping deadlines and auto-shipments", "Returns and escalation",
        "Sourcing, purchase orders and lead times", "Cash and settlement", "Pricing",
        "How the score is computed", "Where to start: habits of a good operator",
        "The console, the clock and breaks",
    ]
    assert "Ship the soonest deadline first." in html
    assert f'name="version" value="{briefing.BRIEFING_VERSION}"' in html


def test_no_shift_starts_before_the_briefing(carol, user):
    practice = lifecycle.assign_shift(user, "counter-punch", 7, practice=True)
    response = carol.post(f"/shifts/{practice.pk}/start/", follow=True)
    assert flash(response) == ["Read and acknowledge the briefing before starting a shift."]
    practice.refresh_from_db()
    assert practice.status == Shift.Status.ASSIGNED and practice.calls.count() == 0


def test_the_service_refuses_too(user):
    practice = lifecycle.assign_shift(user, "counter-punch", 7, practice=True)
    with pytest.raises(errors.StartRefused, match="^Read and acknowledge the briefing before starting a shift.$"):
        lifecycle.begin_shift(practice)


def test_acknowledging_stores_time_and_version_and_assigns_practice(carol, user):
    response = carol.post("/briefing/", {"version": briefing.BRIEFING_VERSION}, follow=True)
    assert flash(response) == ["Briefing acknowledged. Your practice shift is unlocked."]
    ack = BriefingAcknowledgement.objects.get(user=user)
    assert ack.version == briefing.BRIEFING_VERSION and ack.acknowledged_at is not None
    practice = Shift.objects.get(participant=user)
    assert practice.is_practice and (practice.task_id, practice.seed) == briefing.PRACTICE_CELL
    # acknowledging again keeps the first time and does not add a second practice shift
    carol.post("/briefing/", {"version": briefing.BRIEFING_VERSION})
    assert BriefingAcknowledgement.objects.get(user=user).acknowledged_at == ack.acknowledged_at
    assert Shift.objects.filter(participant=user).count() == 1


def test_an_outdated_briefing_version_is_refused(carol, user):
    response = carol.post("/briefing/", {"version": "1999-01-01"}, follow=True)
    assert flash(response) == [briefing.STALE_VERSION]
    assert not BriefingAcknowledgement.objects.filter(user=user).exists()


def test_a_bug_while_acknowledging_is_raised_not_shown_as_a_refusal(carol, user, monkeypatch):
    def broken(user_or_id):
        raise ValueError("a bug in the practice lookup")

    monkeypatch.setattr(briefing, "practice_shifts", broken)
    with pytest.raises(ValueError, match="^a bug in the practice lookup$"):
        carol.post("/briefing/", {"version": briefing.BRIEFING_VERSION})


def test_scored_shift_locked_until_practice_ended(carol, user):
    carol.post("/briefing/", {"version": briefing.BRIEFING_VERSION})
    practice = Shift.objects.get(participant=user, is_practice=True)
    scored = lifecycle.assign_shift(user, "steady", 11)
    home = carol.get("/").content.decode()
    assert "Locked: Finish your practice shift before starting a scored shift." in home
    assert f"/shifts/{scored.pk}/start/" not in home

    response = carol.post(f"/shifts/{scored.pk}/start/", follow=True)
    assert flash(response) == ["Finish your practice shift before starting a scored shift."]
    scored.refresh_from_db()
    assert scored.status == Shift.Status.ASSIGNED

    carol.post(f"/shifts/{practice.pk}/start/")
    carol.post(f"/shifts/{practice.pk}/start/")  # a second click changes nothing
    assert carol.post(f"/shifts/{scored.pk}/start/").status_code == 302
    scored.refresh_from_db()
    assert scored.status == Shift.Status.ASSIGNED  # a started, unfinished practice is not enough

    carol.post(f"/shifts/{practice.pk}/end/")
    response = carol.post(f"/shifts/{scored.pk}/start/")
    assert response.status_code == 302 and response["Location"] == f"/shifts/{scored.pk}/"
    scored.refresh_from_db()
    assert scored.status == Shift.Status.ACTIVE


def _two_scored_and_the_first_started(carol, user) -> tuple[Shift, Shift]:
    """Briefing read, practice played, two scored shifts assigned and the first started."""
    carol.post("/briefing/", {"version": briefing.BRIEFING_VERSION})
    practice = Shift.objects.get(participant=user, is_practice=True)
    carol.post(f"/shifts/{practice.pk}/start/")
    carol.post(f"/shifts/{practice.pk}/end/")
    first, second = lifecycle.assign_shift(user, "steady", 11), lifecycle.assign_shift(user, "steady", 13)
    carol.post(f"/shifts/{first.pk}/start/")
    return first, second


def test_one_scored_shift_runs_at_a_time(carol, user):
    first, second = _two_scored_and_the_first_started(carol, user)
    lifecycle.pause_shift(Shift.objects.get(pk=first.pk), "lunch")  # a paused shift is still running
    refusal = "Finish Shift 1 before starting another scored shift: one scored shift runs at a time " \
              "(end it on its page, or it ends at its deadline)."
    assert f"Locked: {refusal}" in carol.get("/").content.decode()
    response = carol.post(f"/shifts/{second.pk}/start/", follow=True)
    assert flash(response) == [refusal]
    assert Shift.objects.get(pk=second.pk).status == Shift.Status.ASSIGNED

    carol.post(f"/shifts/{first.pk}/end/")
    carol.post(f"/shifts/{second.pk}/start/")
    assert Shift.objects.get(pk=second.pk).status == Shift.Status.ACTIVE


def test_a_shift_past_its_deadline_does_not_hold_the_next_one(carol, user):
    from datetime import timedelta

    from django.utils import timezone

    first, second = _two_scored_and_the_first_started(carol, user)
    Shift.objects.filter(pk=first.pk).update(deadline=timezone.now() - timedelta(minutes=1))  # not swept yet
    carol.post(f"/shifts/{second.pk}/start/")
    assert Shift.objects.get(pk=second.pk).status == Shift.Status.ACTIVE


def test_a_practice_past_its_deadline_does_not_keep_scored_shifts_locked(user):
    from datetime import timedelta

    from django.test import Client
    from django.utils import timezone

    from shifts import lifecycle
    from shifts.briefing import BRIEFING_VERSION, acknowledge_briefing

    acknowledge_briefing(user, BRIEFING_VERSION)
    practice = Shift.objects.get(participant=user, is_practice=True)
    lifecycle.begin_shift(practice)
    scored = lifecycle.assign_shift(user, "steady", 7)
    Shift.objects.filter(pk=practice.pk).update(deadline=timezone.now() - timedelta(seconds=1))  # not swept yet
    client = Client()
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "Locked:" not in html and f"/shifts/{scored.pk}/start/" in html
    assert Shift.objects.get(pk=practice.pk).status == Shift.Status.ACTIVE  # the page ended nothing

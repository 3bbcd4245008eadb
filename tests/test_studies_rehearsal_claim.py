"""A rehearsal attempt is played under a claim on it, so two deliveries of one rehearsal
running at once (a redelivered ``acks_late`` task) never play the same attempt: one that
another delivery is playing is skipped and the outcome says so, a lapsed claim is taken
over, and the claim is released however the play ends."""
from datetime import timedelta

import pytest
from django.utils import timezone
from test_studies_support import admin, coordinator, study  # noqa: F401

from shifts.lifecycle import begin_shift
from shifts.models import Shift, ShiftCall
from studies import assignment, bots, rehearsal
from studies.models import Attempt, AttemptStatus

SKIPPED = "1 skipped because another delivery of this rehearsal was playing them"


def _assigned(admin, study, rehearsal_id: str = "r-1") -> Attempt:  # noqa: F811
    """An attempt rehearsal ``rehearsal_id`` assigned but has not played to its end."""
    return assignment.assign_next(admin, study, [bots.add_bot(admin, study, "b")], include_bots=True,
                                  reason="rehearsal", rehearsal=rehearsal_id)


def _mid_shift(admin, study) -> Attempt:  # noqa: F811
    """A rehearsal attempt whose bot is playing its shift (started, one call made)."""
    attempt = _assigned(admin, study)
    bot = bots.Bot(attempt, bots.SKILLS["clerk"])
    bot.onboard()
    begin_shift(attempt.shift)
    bot.call("list_orders", page_size=3)
    return attempt


def _claim_of(attempt: Attempt) -> tuple[str, object]:
    return Attempt.objects.values_list("claim_token", "claimed_until").get(pk=attempt.pk)


def _lapse(attempt: Attempt) -> None:
    Attempt.objects.filter(pk=attempt.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))


def test_an_attempt_another_delivery_is_playing_is_skipped_and_the_outcome_says_so(
        client, study, admin, coordinator):  # noqa: F811
    attempt = _mid_shift(admin, study)
    other = bots.claim(attempt)  # the other delivery, playing it now
    calls = ShiftCall.objects.filter(shift=attempt.shift).count()
    assert rehearsal.run_rehearsal(study.pk, admin.pk, 1, "clerk", "r-1") == 0
    assert ShiftCall.objects.filter(shift=attempt.shift).count() == calls
    assert Shift.objects.get(pk=attempt.shift_id).status == Shift.Status.ACTIVE
    assert _claim_of(attempt)[0] == other.token  # still the other delivery's
    event = rehearsal.last_outcome(study)
    assert (event.action, event.reason, event.detail) == (
        "rehearsed", f"0 rehearsal attempts played by clerk bots; {SKIPPED}",
        {"rehearsal": "r-1", "played": 0, "skipped": 1})
    client.force_login(coordinator)
    assert f"finished: 0 rehearsal attempts played by clerk bots; {SKIPPED}.</p>" in client.get(
        f"/studies/{study.pk}/").content.decode()


def test_a_lapsed_claim_is_taken_over_and_the_attempt_played(study, admin):  # noqa: F811
    attempt = _mid_shift(admin, study)
    dead = bots.claim(attempt)  # a delivery whose worker died mid-play
    _lapse(attempt)
    assert rehearsal.run_rehearsal(study.pk, admin.pk, 1, "clerk", "r-1") == 1
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.SUBMITTED
    assert ShiftCall.objects.filter(shift=attempt.shift, tool="end_window").exists()
    assert rehearsal.last_outcome(study).reason == "1 rehearsal attempt played by clerk bots"
    with pytest.raises(bots.ClaimLost):
        bots.renew(dead)


def test_the_claim_is_released_after_a_play(study, admin):  # noqa: F811
    attempt = _assigned(admin, study)
    rehearsal.rehearse(admin, study, 1, "idle", "r-1")
    assert Attempt.objects.get(pk=attempt.pk).status == AttemptStatus.SUBMITTED
    assert _claim_of(attempt) == ("", None)


def test_the_claim_is_released_when_the_play_raises(study, admin, monkeypatch):  # noqa: F811
    held_while_playing = []

    def crash(bot):
        held_while_playing.append(_claim_of(bot.attempt)[0])
        raise bots.BotError("the console answered 500")

    monkeypatch.setattr(bots.Bot, "play", crash)
    with pytest.raises(bots.BotError):
        rehearsal.run_rehearsal(study.pk, admin.pk, 1, "idle", "r-1")
    attempt = Attempt.objects.get(study=study)
    assert held_while_playing[0] != "" and _claim_of(attempt) == ("", None)
    assert bots.claim(attempt) is not None


def test_a_second_claim_fails_while_the_first_holds(study, admin):  # noqa: F811
    attempt = _assigned(admin, study)
    first = bots.claim(attempt)
    assert first is not None and bots.claim(attempt) is None
    bots.renew(first)
    assert bots.claim(attempt) is None
    bots.release(first)
    assert bots.claim(attempt) is not None


def test_a_stale_holder_neither_renews_nor_releases_the_claim_that_took_over(study, admin):  # noqa: F811
    attempt = _assigned(admin, study)
    stale = bots.claim(attempt)
    _lapse(attempt)
    current = bots.claim(attempt)
    assert current is not None
    with pytest.raises(bots.ClaimLost):
        bots.renew(stale)
    bots.release(stale)
    assert _claim_of(attempt)[0] == current.token


def test_a_bot_whose_claim_is_taken_over_mid_play_stops_and_is_counted_as_skipped(
        study, admin, monkeypatch):  # noqa: F811
    attempt = _assigned(admin, study)
    onboard = bots.Bot.onboard
    taken_over = []

    def onboard_then_stall(bot):  # the worker stalls past the lease; a redelivery takes over
        onboard(bot)
        _lapse(bot.attempt)
        taken_over.append(bots.claim(bot.attempt))

    monkeypatch.setattr(bots.Bot, "onboard", onboard_then_stall)
    assert rehearsal.run_rehearsal(study.pk, admin.pk, 1, "clerk", "r-1") == 0
    assert Shift.objects.get(pk=attempt.shift_id).status == Shift.Status.ASSIGNED  # this bot did not start it
    assert _claim_of(attempt)[0] == taken_over[0].token
    assert rehearsal.last_outcome(study).reason == f"0 rehearsal attempts played by clerk bots; {SKIPPED}"


def test_a_delivery_that_skipped_a_claimed_attempt_comes_back_once_the_claim_can_have_lapsed(
        study, admin, monkeypatch):  # noqa: F811
    """A pool process killed mid-play sends its message straight back (reject_on_worker_lost),
    and the new delivery finds the dead one's claim still running (5 minutes): it used to skip
    the attempt and end, leaving it assigned for good.  On a worker it now comes back after the lease."""
    from celery.exceptions import Retry

    attempt = _mid_shift(admin, study)
    bots.claim(attempt)  # the dead delivery's claim
    asked = []

    def retry(**kwargs):
        asked.append(kwargs)
        return Retry("later")

    monkeypatch.setattr(rehearsal.run_rehearsal, "retry", retry)
    rehearsal.run_rehearsal.push_request(called_directly=False, is_eager=False, retries=0)
    try:
        with pytest.raises(Retry):
            rehearsal.run_rehearsal.run(study.pk, admin.pk, 1, "clerk", "r-1")
    finally:
        rehearsal.run_rehearsal.pop_request()
    assert asked and asked[0]["countdown"] > bots.LEASE.total_seconds()
    assert rehearsal.last_outcome(study).detail["skipped"] == 1  # this delivery's outcome is still audited

    _lapse(attempt)  # the retry, after the lease: it plays the attempt the dead delivery left
    rehearsal.run_rehearsal.push_request(called_directly=False, is_eager=False, retries=1)
    try:
        assert rehearsal.run_rehearsal.run(study.pk, admin.pk, 1, "clerk", "r-1") == 1
    finally:
        rehearsal.run_rehearsal.pop_request()
    assert Shift.objects.get(pk=attempt.shift_id).status == Shift.Status.ENDED


def test_a_come_back_that_finds_nothing_left_leaves_the_outcome_as_it_was(study, admin):  # noqa: F811
    attempt = _assigned(admin, study)
    rehearsal.run_rehearsal(study.pk, admin.pk, 1, "clerk", "r-1")  # the live delivery played it
    before = rehearsal.last_outcome(study)
    assert Attempt.objects.get(pk=attempt.pk).shift.status == Shift.Status.ENDED
    rehearsal.run_rehearsal.push_request(called_directly=False, is_eager=False, retries=1)
    try:
        assert rehearsal.run_rehearsal.run(study.pk, admin.pk, 1, "clerk", "r-1") == 0
    finally:
        rehearsal.run_rehearsal.pop_request()
    assert rehearsal.last_outcome(study) == before

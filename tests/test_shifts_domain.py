"""The shift domain: the models' move, the one replay at the end, events on commit,
and studies reading outcomes through the shift without writing on a page view."""
import uuid

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from shifts import cache, calls, ending, events, lifecycle
from shifts.models import Shift, ShiftCall

pytestmark = pytest.mark.django_db

BEFORE = [("shifts", None), ("console", "0002_pause_briefing_timeline"), ("studies", "0001_initial")]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_shift_stored_on_the_old_schema_is_found_after_the_move():
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("old-schema")
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state([node for node in BEFORE if node[1]]).apps
    OldShift, OldCall = old.get_model("console", "Shift"), old.get_model("console", "ShiftCall")
    line = ("2026-03-02 09:00 UTC | window 1 of 4 | operations left 11 of 12 | cash $1,234.50"
            " | net assets -$20.05 | rating 4.50")
    shift = OldShift.objects.create(participant_id=user.pk, task_id="counter-punch", seed=7, status="active")
    OldCall.objects.create(shift=shift, seq=1, call_id="a" * 12, tool="list_orders", arguments={},
                           result_text=line + "\n{}", header=line, reached_core=True)
    OldCall.objects.create(shift=shift, seq=2, call_id="b" * 12, tool="list_orders", arguments={"x": 1},
                           result_text="bad argument", header="", reached_core=False)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    moved = Shift.objects.get(pk=shift.pk)
    assert (moved.task_id, moved.seed, moved.status, moved.participant_id) == ("counter-punch", 7, "active", user.pk)
    first, second = moved.calls.order_by("seq")
    assert first.typed_header.line == line
    assert (first.typed_header.cash_cents, first.typed_header.net_assets_cents) == (123450, -2005)
    assert second.typed_header is None and second.result_text == "bad argument"


def _started(name="shifter"):
    from console_helpers import briefed_user

    return lifecycle.start_shift(briefed_user(name, password=False), "counter-punch", 7, practice=True)


def _count_replays(monkeypatch) -> list:
    replays = []
    real = cache.play_actions

    def counting(ep, actions, stop=False):
        replays.append(len(actions))
        return real(ep, actions, stop=stop)

    monkeypatch.setattr(cache, "play_actions", counting)
    return replays


def test_end_shift_settles_the_live_episode_without_replaying(monkeypatch, fresh_console_cache):
    shift = _started()
    calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
    replays = _count_replays(monkeypatch)
    ending.end_shift(shift, "done")
    assert replays == []
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED and shift.timeline[-1]["label"] == "settled"
    assert shift.score_composite is not None


def test_end_shift_after_a_restart_replays_once_and_grades_the_same(monkeypatch, fresh_console_cache):
    played = _started("a")
    twin = _started("b")
    for shift in (played, twin):
        calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
    ending.end_shift(played, "done")
    cache.clear_cache()  # a server restart: the next end rebuilds from the stored calls
    replays = _count_replays(monkeypatch)
    ending.end_shift(twin, "done")
    assert len(replays) == 1
    played.refresh_from_db()
    twin.refresh_from_db()
    assert (twin.score_composite, twin.score_components, twin.timeline) == \
        (played.score_composite, played.score_components, played.timeline)


def test_shift_events_are_sent_only_once_the_change_commits(monkeypatch, fresh_console_cache):
    shift = _started()
    sent = []
    monkeypatch.setattr(events, "_send", sent.append)
    with pytest.raises(RuntimeError), transaction.atomic():
        lifecycle.pause_shift(shift, "coffee")
        assert sent == []  # not before the commit
        raise RuntimeError("rolled back")
    assert sent == []
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE


def test_the_deadline_is_one_action_for_a_touched_shift_and_the_sweep(fresh_console_cache):
    from datetime import timedelta

    from django.utils import timezone

    touched, swept = _started("t"), _started("s")
    Shift.objects.filter(pk__in=[touched.pk, swept.pk]).update(deadline=timezone.now() - timedelta(seconds=1))
    assert ending.end_if_due(touched) is True
    assert ending.enforce_deadlines() == [swept.pk]
    assert ending.enforce_deadlines() == []
    for shift in (touched, swept):
        shift.refresh_from_db()
        assert (shift.status, shift.end_reason) == (Shift.Status.ENDED, ending.DEADLINE_REASON)
    assert ShiftCall.objects.filter(shift=touched).count() == 1  # the opening read only


def test_a_cache_behind_another_process_catches_up_without_a_full_replay(monkeypatch, fresh_console_cache):
    from environment.tools.format import store_header

    shift = _started("behind")
    calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
    stale = cache._cache.pop(shift.pk)  # this process's entry, set aside while "another process" works
    for _ in range(3):
        calls.call_tool(shift, "fulfill_order", {"order_id": "ORD-1"}, uuid.uuid4().hex)
    calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
    cache.evict(shift.pk)
    cache._cache[shift.pk] = stale  # back to the entry that missed four calls
    replays = _count_replays(monkeypatch)
    last = calls.call_tool(shift, "finance_summary", {}, uuid.uuid4().hex)
    assert replays == [4]  # only the four calls it missed, not the whole shift
    assert cache._cache[shift.pk] is stale and stale.applied == shift.calls.filter(reached_core=True).count()
    fresh = cache.replay_episode(shift)
    assert last.typed_header == store_header(fresh)
    assert stale.episode.ledger.to_jsonl() == fresh.ledger.to_jsonl()

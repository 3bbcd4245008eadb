"""The console's call path kept cheap without losing a guarantee.

One MCP client session per live shift, reused across calls and closed on eviction; results
byte for byte what a fresh session and the in-process core return; a bounded number of
queries per call whatever the shift's length; idempotent call ids; stale caches rebuilt.
"""
import threading
import uuid
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from console_helpers import OPS
from django.utils import timezone

from console import workspace
from mcp_client.client import SessionClosed, SyncEpisodeClient, episode_client
from mcp_client.server import build_server
from shifts import cache, calls, ending, errors, lifecycle
from shifts.models import Shift, ShiftCall

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")
TASK, SEED = "counter-punch", 7
HX = {"HTTP_HX_REQUEST": "true"}
# session, user, the shift (ownership), BEGIN (a savepoint under the test's transaction),
# the read of the shift and its calls' figures, the INSERT, COMMIT (release): seven,
# however long the shift is; on PostgreSQL the row lock is one statement more.
CALL_QUERIES = 7

SEQUENCE = [
    ("list_orders", {"page_size": 5}),
    ("set_price", {"product_id": "PRD-001", "price": "49.50"}),
    ("list_orders", {"page_size": "abc"}),  # refused by the core's strict validation
    ("set_price", {"product_id": "PRD-NOPE", "price": "10.00"}),  # refused by the core
    ("list_returns", {}),
    ("end_window", {}),
    ("store_status", {}),
    ("list_orders", {"page_size": 3}),
]


def post(client, shift, tool, call_id=None, **args):
    data = {"tool": tool, "call_id": call_id or uuid.uuid4().hex, **{f"arg_{k}": v for k, v in args.items()}}
    return client.post(f"/shifts/{shift.pk}/call/", data, **HX)


def worker_threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.name == "AnyIO worker thread"}


def test_one_session_serves_every_call_of_a_shift(signed_in, shift):
    live = cache._cache[shift.pk]
    session = live.session
    workers = set()
    for _ in range(4):
        assert post(signed_in, shift, "list_orders", page_size="2").status_code == 200
        assert cache._cache[shift.pk] is live and live.session is session and not session.closed
        workers |= worker_threads()
    # the server's worker thread for the core lives as long as the session, not one call
    assert len(workers) == 1


def test_results_are_byte_identical_to_a_fresh_session_and_to_the_core(shift):
    fresh_twin = cache.replay_episode(shift)  # the state after the opening read
    core_twin = cache.replay_episode(shift)
    server = build_server(lambda: fresh_twin)

    async def fresh_call(tool, arguments):
        async with episode_client(server) as client:
            return await client.call(tool, arguments)

    for tool, arguments in SEQUENCE:
        stored = calls.call_tool(shift, tool, arguments, uuid.uuid4().hex)
        expected = async_to_sync(fresh_call)(tool, arguments)
        assert (stored.is_error, stored.result_text) == expected, tool
        if stored.reached_core:
            result = core_twin.call(tool, arguments)
            core_text = result.text() if result.ok else \
                f"Error executing tool {tool}: {result.error['code']}: {result.error['message']}\n{result.text()}"
            assert stored.result_text == core_text, tool
    assert [c.reached_core for c in ShiftCall.objects.filter(shift=shift).order_by("seq")][1:] == [True] * 8
    assert cache._cache[shift.pk].episode.ledger.to_jsonl() == core_twin.ledger.to_jsonl()


def test_the_reply_is_built_from_memory_and_matches_what_is_stored(shift):
    for tool, arguments in SEQUENCE:
        done = workspace.perform_call(shift, tool, arguments, uuid.uuid4().hex)
        stored = workspace.shift_overview(shift)
        assert done.fresh and done.call.seq == stored.calls[-1].seq
        assert done.header == stored.header
        assert done.inbox == stored.inbox
        assert done.cached == stored.cached


def test_clearing_the_cache_closes_the_session_and_the_next_call_opens_one(signed_in, shift):
    post(signed_in, shift, "list_orders", page_size="2")
    old = cache._cache[shift.pk].session
    cache.clear_cache()
    assert old.closed and shift.pk not in cache._cache
    with pytest.raises(SessionClosed):
        old.call("store_status", {})
    assert post(signed_in, shift, "list_orders", page_size="2").status_code == 200
    new = cache._cache[shift.pk].session
    assert new is not old and not new.closed


def test_ending_the_shift_closes_its_session(signed_in, shift):
    session = cache._cache[shift.pk].session
    signed_in.post(f"/shifts/{shift.pk}/end/", **HX)
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED
    assert session.closed and shift.pk not in cache._cache


def test_a_cache_behind_another_process_catches_up_and_keeps_its_session(signed_in, shift):
    post(signed_in, shift, "list_orders", page_size="2")
    ours = cache._cache.pop(shift.pk)  # this process's cache, set aside
    post(signed_in, shift, "list_orders", page_size="2")  # "another process" replays and stores a call
    other = cache._cache.pop(shift.pk)
    other.session.close()
    cache._cache[shift.pk] = ours  # back in this process, one call behind the database
    html = post(signed_in, shift, "list_orders", page_size="2").content.decode()
    assert f'data-ops-left="{OPS - 3}"' in html  # three operations spent: continues from the stored calls
    assert not ours.session.closed and cache._cache[shift.pk] is ours  # the missed call applied to it
    assert cache._cache[shift.pk].applied == ShiftCall.objects.filter(shift=shift, reached_core=True).count()


def test_a_repeated_call_id_spends_one_operation_and_sends_nothing(signed_in, shift):
    first = post(signed_in, shift, "list_orders", call_id="same-call-0001", page_size="2").content.decode()
    applied = cache._cache[shift.pk].applied
    again = post(signed_in, shift, "list_orders", call_id="same-call-0001", page_size="2").content.decode()
    assert ShiftCall.objects.filter(shift=shift, call_id="same-call-0001").count() == 1
    assert cache._cache[shift.pk].applied == applied
    assert f'data-ops-left="{OPS - 1}"' in first and f'data-ops-left="{OPS - 1}"' in again
    assert 'hx-swap-oob="afterbegin:#history-list"' in first and "#history-list" not in again


def test_a_call_past_the_deadline_ends_the_shift_and_is_refused(shift):
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    with pytest.raises(errors.ShiftNotActive, match="^The shift is ended: it takes no tool calls.$"):
        calls.call_tool(shift, "list_orders", {}, uuid.uuid4().hex)
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED and shift.end_reason == ending.DEADLINE_REASON
    assert ShiftCall.objects.filter(shift=shift).count() == 1  # the opening read only


def test_a_call_to_an_ended_shift_is_refused_without_replaying_it(shift):
    ending.end_shift(shift, "ended by the participant")
    assert shift.pk not in cache._cache
    with pytest.raises(errors.ShiftNotActive, match="^The shift is ended: it takes no tool calls.$"):
        calls.call_tool(shift, "list_orders", {}, uuid.uuid4().hex)
    assert shift.pk not in cache._cache  # refused before any replay of its calls


def test_a_call_to_a_paused_shift_is_refused_without_replaying_it(shift):
    lifecycle.pause_shift(shift, "a break")
    cache.clear_cache()  # as in a process that has not served this shift yet
    with pytest.raises(errors.ShiftPaused):
        calls.call_tool(shift, "list_orders", {}, uuid.uuid4().hex)
    assert shift.pk not in cache._cache
    assert ShiftCall.objects.filter(shift=shift).count() == 1  # the opening read only


def test_a_shift_resumed_elsewhere_after_the_first_look_is_replayed_and_called(shift, monkeypatch):
    lifecycle.pause_shift(shift, "a break")
    cache.clear_cache()
    locked_read = calls._read_locked

    def resumed_first(*args, **kwargs):  # another process resumes it between the two reads
        Shift.objects.filter(pk=shift.pk).update(status=Shift.Status.ACTIVE)
        return locked_read(*args, **kwargs)

    monkeypatch.setattr(calls, "_read_locked", resumed_first)
    stored = calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
    assert stored.seq == 2 and not stored.is_error
    assert cache._cache[shift.pk].applied == 2  # the opening read replayed, this call applied


def test_a_tool_call_page_makes_a_bounded_number_of_queries(signed_in, shift, django_assert_max_num_queries):
    for _ in range(20):  # a longer history must not cost more queries
        post(signed_in, shift, "store_status")
    from django.db import connection

    with django_assert_max_num_queries(CALL_QUERIES + connection.features.has_select_for_update):
        response = post(signed_in, shift, "list_orders", page_size="2")
    assert response.status_code == 200 and f'data-ops-left="{OPS - 1}"' in response.content.decode()


def test_a_sync_session_closes_cleanly_and_twice(shift):
    episode = cache.replay_episode(shift)
    with SyncEpisodeClient(build_server(lambda: episode)) as session:
        outcome = session.call("store_status", {})
        assert not outcome.is_error and outcome.text == episode.call("store_status", {}).text()
    assert session.closed
    session.close()  # a second close does nothing


EXIT_SCRIPT = """
import threading
from environment.api import arm
from mcp_client.client import SyncEpisodeClient
from mcp_client.server import build_server
episode = arm("counter-punch", 7)
session = SyncEpisodeClient(build_server(lambda: episode))
session.call("list_orders", {"page_size": 2})
print(sorted((t.name, t.daemon) for t in threading.enumerate() if t is not threading.main_thread()))
"""


def test_an_open_session_does_not_hold_up_the_interpreters_exit():
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('AnyIO worker thread', True)]"

"""``manage.py bench_console``: its JSON shape and its clean-up (the figures are never asserted)."""
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

from benchmarks.realistic import BASELINE_REQUESTS
from shifts.ending import end_shift
from shifts.models import Shift

KEYS = {"participants", "calls_per_participant", "tool", "tool_page_median_ms", "noop_median_ms", "ratio",
        "tool_page_p90_ms", "noop_p90_ms", "errors", "wall_seconds"}
ADDED = {"tool_page_cpu_median_ms", "noop_cpu_median_ms", "cpu_ratio", "tool_calls_per_second",
         "single_tool_page_median_ms", "single_noop_median_ms", "single_ratio", "single_tool_page_cpu_median_ms",
         "single_noop_cpu_median_ms", "single_cpu_ratio", "single_tool_page_process_cpu_median_ms",
         "single_noop_process_cpu_median_ms", "single_process_cpu_ratio", "single_errors", "database_vendor"}


@pytest.mark.django_db(transaction=True)
def test_bench_console_prints_stable_json_and_cleans_up(capsys):
    # One participant: the test database is SQLite in shared-cache memory, whose table
    # locks do not wait; concurrency is for real databases (the command's own runs).
    call_command("bench_console", "--participants", "1", "--calls", "3", "--json")
    result = json.loads(capsys.readouterr().out)
    assert set(list(result)[:len(KEYS)]) == KEYS and set(result) == KEYS | ADDED  # stable keys first
    assert result["participants"] == 1 and result["errors"] == 0 and result["tool"] == "list_orders"
    assert result["tool_page_median_ms"] > 0 and result["noop_median_ms"] > 0
    assert result["ratio"] == pytest.approx(result["tool_page_median_ms"] / result["noop_median_ms"], rel=0.01)
    assert result["single_errors"] == 0 and result["database_vendor"] == connection.vendor
    # the handler's CPU time cannot exceed the wall time measured around the same request
    assert 0 < result["tool_page_cpu_median_ms"] <= result["tool_page_median_ms"]
    assert result["cpu_ratio"] == pytest.approx(result["tool_page_cpu_median_ms"] / result["noop_cpu_median_ms"],
                                                rel=0.01)
    assert result["tool_calls_per_second"] > 0
    assert not get_user_model().objects.filter(username__startswith="bench-").exists()
    assert not Shift.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_bench_console_measures_a_deployed_site_not_its_refusals(capsys, deployed_site):
    call_command("bench_console", "--participants", "1", "--calls", "2", "--json")
    result = json.loads(capsys.readouterr().out)
    assert result["errors"] == 0 and result["single_errors"] == 0


def test_bench_console_refuses_a_bad_participant_count(db):
    with pytest.raises(CommandError, match="^--participants must be between 1 and 200, not 0$"):
        call_command("bench_console", "--participants", "0")


def test_the_noop_view_is_not_on_the_site(client, db):
    assert client.get("/bench/noop").status_code == 404


def test_the_realistic_mode_refuses_sqlite_and_says_what_to_set(db):
    if connection.vendor == "postgresql":
        pytest.skip("this database is PostgreSQL: the refusal is for SQLite")
    with pytest.raises(CommandError, match="set DATABASE_URL to a PostgreSQL database of your own"):
        call_command("bench_console", "--realistic", "--participants", "2")


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_realistic_mode_serves_participants_with_think_time_and_loses_nothing(capsys):
    if connection.vendor != "postgresql":
        pytest.fail("the realistic mode needs PostgreSQL (make test-services sets DATABASE_URL)")
    call_command("bench_console", "--realistic", "--participants", "4", "--workers", "2", "--duration", "4",
                 "--think", "0.5", "--json")
    result = json.loads(capsys.readouterr().out)
    assert (result["mode"], result["participants"], result["workers"]) == ("realistic", 4, 2)
    assert result["calls"] > 4 and result["errors"] == 0 and result["lost_calls"] == 0
    assert result["shifts_over"] == 0
    assert result["p50_ms"] <= result["p95_ms"] <= result["max_ms"]
    assert result["server_cpu_ms_per_call"] > 0
    # every measured call is a call of the run, the warm-up ones excluded (benchmarks.server)
    assert 0 < result["solo_calls"] <= result["calls"] and result["server_cpu_ms_per_solo_call_median"] > 0
    # and the no-op baseline beside them, every one of its requests alone on its process
    assert result["solo_noops"] == BASELINE_REQUESTS and result["server_cpu_ms_per_solo_noop_median"] > 0
    assert result["solo_cpu_ratio"] == round(result["server_cpu_ms_per_solo_call_median"]
                                             / result["server_cpu_ms_per_solo_noop_median"], 1)
    assert 0 <= result["slow_call_seconds"] <= result["slow_calls"] <= result["calls"]
    assert result["driver_gc_max_ms"] >= 0
    assert not get_user_model().objects.filter(username__startswith="bench-").exists()


def test_a_call_to_an_ended_shift_reads_as_the_shift_over_not_an_error(signed_in, shift):
    from benchmarks.realistic import shift_over
    end_shift(shift, "ended by the participant")
    reply = signed_in.post(f"/shifts/{shift.pk}/call/", {"tool": "store_status", "call_id": "c" * 12},
                           HTTP_HX_REQUEST="true")
    assert shift_over(reply.status_code, reply.headers)
    refused = signed_in.post(f"/shifts/{shift.pk}/call/", {"tool": "store_status", "call_id": "bad"},
                             HTTP_HX_REQUEST="true")
    assert not shift_over(refused.status_code, refused.headers)  # 400: a bad call id is an error


def test_slow_calls_are_counted_with_the_seconds_they_were_sent_in():
    from benchmarks.realistic import slow_calls

    began_at = [0.1, 0.2, 1.5, 1.6, 1.7, 3.0, 7.9]
    latencies_ms = [20.0, 151.0, 400.0, 380.0, 150.0, 12.0, 900.0]  # 150 ms itself is not slow
    assert slow_calls(began_at, latencies_ms) == (4, 3)
    assert slow_calls(began_at, latencies_ms, bound_ms=1000.0) == (0, 0)
    with pytest.raises(ValueError):
        slow_calls(began_at, latencies_ms[:-1])  # one start per call


def test_the_drivers_own_collector_skips_what_was_set_up_and_times_each_pause():
    """The bench's latencies are the driving process's clocks: its own collections must not
    walk what it set up (a second-long pause counted as slow calls), and each is timed."""
    import gc

    from benchmarks.realistic import own_collector_frozen

    set_up = [[i] for i in range(1000)]  # objects the collector tracks, made before the run
    callbacks = list(gc.callbacks)
    with own_collector_frozen() as pauses:
        assert gc.get_freeze_count() >= len(set_up)
        gc.collect()
        assert len(pauses) == 1 and 0 <= pauses[0] < 60
    assert gc.get_freeze_count() == 0 and gc.callbacks == callbacks

"""The first slice of the participant console: shifts, tool calls through MCP, resume."""
import re
import statistics
import time
from datetime import timedelta

import pytest
from console_helpers import CSRF_VALUE, OPS, call, ops_left, without_tokens
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from environment.tools import REGISTRY
from shifts import cache, lifecycle
from shifts.briefing import PRACTICE_CELL
from shifts.models import Shift, ShiftCall

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")

TASK, SEED = "counter-punch", 7
HX = {"HTTP_HX_REQUEST": "true"}


def header_line(html: str) -> str:
    match = re.search(r'class="result-header"><span class="muted">Store after this call:</span> '
                      r'<code class="stamp">([^<]+)<', html)
    assert match, "no result header"
    return match.group(1)


def page(client, shift) -> str:
    response = client.get(f"/shifts/{shift.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_start_an_assigned_shift_from_home(signed_in, user):
    assigned = lifecycle.assign_shift(user, TASK, SEED, practice=True)
    home = signed_in.get("/").content.decode()
    assert f"/shifts/{assigned.pk}/start/" in home and "Start" in home
    response = signed_in.post(f"/shifts/{assigned.pk}/start/")
    assert response.status_code == 302 and response["Location"] == f"/shifts/{assigned.pk}/"
    assigned.refresh_from_db()
    assert assigned.status == Shift.Status.ACTIVE
    assert assigned.deadline - assigned.started_at == timedelta(hours=12)
    opening = assigned.calls.get()
    assert opening.tool == "store_status" and not opening.spent_operation
    assert ops_left(page(signed_in, assigned)) == OPS


def test_store_status_spends_nothing_and_list_orders_spends_one(signed_in, shift):
    assert ops_left(page(signed_in, shift)) == OPS
    response = call(signed_in, shift, "store_status")
    assert response.status_code == 200
    assert ops_left(response.content.decode()) == OPS
    response = call(signed_in, shift, "list_orders", page_size="5")
    html = response.content.decode()
    assert ops_left(html) == OPS - 1
    assert "&quot;rows&quot;" in html  # the JSON result, formatted
    # the next header (a free read) confirms it
    assert ops_left(call(signed_in, shift, "store_status").content.decode()) == OPS - 1
    # blank fields are omitted, numbers sent as numbers (as a browser posts only what it has)
    assert ShiftCall.objects.get(shift=shift, tool="list_orders").arguments == {"page_size": 5}


def test_same_call_id_twice_spends_one_operation(signed_in, shift):
    first = call(signed_in, shift, "list_orders", call_id="dup-call-0001", page_size="3")
    second = call(signed_in, shift, "list_orders", call_id="dup-call-0001", page_size="3")
    assert header_line(first.content.decode()) == header_line(second.content.decode())
    # the history gains one row, not two
    assert 'hx-swap-oob="afterbegin:#history-list"' in first.content.decode()
    assert "#history-list" not in second.content.decode()
    assert ShiftCall.objects.filter(shift=shift, call_id="dup-call-0001").count() == 1
    assert ops_left(call(signed_in, shift, "store_status").content.decode()) == OPS - 1
    # without htmx the form posts and redirects to the stored result (refresh-safe)
    third = call(signed_in, shift, "list_orders", call_id="dup-call-0001", htmx=False, page_size="3")
    assert third.status_code == 302 and third["Location"].endswith("?call=2")


def test_another_user_gets_404(client, shift, db):
    bob = get_user_model().objects.create_user("bob", password="pw-bob-123")
    client.force_login(bob)
    assert client.get(f"/shifts/{shift.pk}/").status_code == 404
    assert client.get(f"/shifts/{shift.pk}/calls/1/", **HX).status_code == 404
    assert call(client, shift, "list_orders").status_code == 404
    assert client.post(f"/shifts/{shift.pk}/end/").status_code == 404
    assert client.post(f"/shifts/{shift.pk}/start/").status_code == 404
    assert shift.calls.count() == 1
    assert f"/shifts/{shift.pk}/" not in client.get("/").content.decode()


def test_anonymous_is_sent_to_login(client, shift):
    response = client.get(f"/shifts/{shift.pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_resume_after_restart_continues_from_the_same_state(signed_in, shift):
    call(signed_in, shift, "list_orders", page_size="5")
    call(signed_in, shift, "set_price", product_id="PRD-001", price="49.50")
    call(signed_in, shift, "list_orders", page_size="abc")  # refused by the store: an operation, replayed
    call(signed_in, shift, "end_window")
    call(signed_in, shift, "list_returns")
    before = header_line(call(signed_in, shift, "store_status").content.decode())
    ledger_before = cache._cache[shift.pk].episode.ledger.to_jsonl()
    assert ShiftCall.objects.get(shift=shift, arguments__page_size="abc").reached_core

    cache.clear_cache()  # the server restarts
    after = header_line(call(signed_in, shift, "store_status").content.decode())
    assert after == before
    assert "window 2 of 14" in after and f"operations left {OPS - 1} of {OPS}" in after
    assert cache._cache[shift.pk].episode.ledger.to_jsonl() == ledger_before
    assert cache.replay_episode(shift).ledger.to_jsonl() == ledger_before
    # and the next operation continues the count
    assert ops_left(call(signed_in, shift, "list_orders").content.decode()) == OPS - 2


def test_stale_cache_from_another_process_is_rebuilt(signed_in, shift):
    call(signed_in, shift, "list_orders")
    live = cache._cache[shift.pk]
    live.records.pop()  # its last call unknown to it, though applied: the cache and the database disagree
    html = call(signed_in, shift, "store_status").content.decode()
    assert ops_left(html) == OPS - 1
    assert cache._cache[shift.pk] is not live


def test_a_refused_call_another_process_stored_joins_this_caches_record_without_a_replay(signed_in, shift):
    call(signed_in, shift, "list_orders")
    live = cache._cache[shift.pk]
    # another process stored a call the argument check refused (it never reached the store)
    last = shift.calls.order_by("-seq").first().seq
    ShiftCall.objects.create(shift=shift, seq=last + 1, call_id="other-process-1", tool="get_order", arguments={},
                             result_text="order_id: is required", is_error=True, reached_core=False)
    call(signed_in, shift, "store_status")
    assert cache._cache[shift.pk] is live  # caught up in place: the episode had nothing to apply
    assert [r.seq for r in live.records] == list(shift.calls.order_by("seq").values_list("seq", flat=True))
    assert [r.seq for r in live.records][-2:] == [last + 1, last + 2]


def test_a_cache_that_knows_a_call_not_stored_is_rebuilt_from_what_is_stored(signed_in, shift):
    call(signed_in, shift, "list_orders")
    live = cache._cache[shift.pk]
    last = live.last_seq
    # a call this process took for stored, though its transaction never committed
    live.records.append(cache.Record(last + 1, "get_order", {}, True, False, None, "", live.window))
    call(signed_in, shift, "store_status")
    assert cache._cache[shift.pk] is not live
    assert list(shift.calls.order_by("-seq").values_list("seq", "tool")[:2]) == [(last + 1, "store_status"),
                                                                                (last, "list_orders")]


def test_the_page_of_a_shift_past_its_deadline_writes_nothing(signed_in, shift):
    call(signed_in, shift, "list_returns")  # the inbox, with a refund form per open return
    call(signed_in, shift, "list_orders")  # a table with a ship action per row
    assert 'class="row-action"' in page(signed_in, shift) and 'class="refund-form"' in page(signed_in, shift)
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    html = page(signed_in, shift)
    assert 'class="row-action"' not in html and 'class="refund-form"' not in html  # no call offered
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE and shift.ended_at is None and shift.score_composite is None
    assert "Time is up" in html and 'id="tool-' not in html and 'id="countdown"' not in html
    # the page posts its end by itself, marked as the deadline's
    assert (f'hx-post="/shifts/{shift.pk}/end/" hx-trigger="load"' in html
            and '<input type="hidden" name="due" value="1">' in html)


def test_the_end_a_due_page_posts_settles_the_shift_at_its_deadline(signed_in, shift):
    call(signed_in, shift, "list_orders")
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    response = signed_in.post(f"/shifts/{shift.pk}/end/", {"due": "1"}, **HX)
    assert response.status_code == 204 and response["HX-Redirect"] == f"/shifts/{shift.pk}/"
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED and shift.end_reason == "deadline"
    assert shift.score_composite is not None and shift.passed is not None
    assert shift.calibration_source == "calibration file" and shift.calibration_hash.startswith("sha256:")
    html = page(signed_in, shift)
    assert "Shift ended" in html and 'id="tool-' not in html and "Time is up" not in html
    # a call on an ended shift is refused without spending anything
    response = call(signed_in, shift, "list_orders")
    assert response.status_code == 204 and response["HX-Redirect"] == f"/shifts/{shift.pk}/"
    assert shift.calls.count() == 2


def test_a_paused_shift_past_its_deadline_shows_time_is_up_without_resume(signed_in, shift):
    lifecycle.pause_shift(shift, "lunch")
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    html = page(signed_in, shift)
    assert "Time is up" in html and 'id="resume-button"' not in html and 'id="paused-notice"' not in html
    signed_in.post(f"/shifts/{shift.pk}/end/", {"due": "1"}, **HX)
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED and shift.end_reason == "deadline"
    assert shift.pauses.get().ended_at == shift.deadline  # the break ran until the deadline, not past it


def test_a_stale_due_page_does_not_end_a_shift_whose_deadline_was_moved(signed_in, shift):
    response = signed_in.post(f"/shifts/{shift.pk}/end/", {"due": "1"}, **HX)  # the deadline is hours away
    assert response.status_code == 204
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE and shift.end_reason == ""


def test_home_lists_a_shift_past_its_deadline_as_due_without_ending_it(signed_in, shift):
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    html = signed_in.get("/").content.decode()
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE
    row = html[html.index(f'id="shift-row-{shift.pk}"'):]
    row = row[:row.index("</tr>")]
    assert f'id="due-{shift.pk}">time is up<' in row and "See your score" in row and "Resume" not in row


def test_deadline_checked_by_a_call_too(signed_in, shift):
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    response = call(signed_in, shift, "list_orders", htmx=False)
    assert response.status_code == 302
    shift.refresh_from_db()
    assert shift.end_reason == "deadline" and shift.calls.count() == 1


def test_participant_ends_the_shift(signed_in, shift):
    response = signed_in.post(f"/shifts/{shift.pk}/end/", **HX)
    assert response.status_code == 204
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED and shift.end_reason == "ended by the participant"
    assert isinstance(shift.score_components["business"], str)  # Decimal kept exact as text
    html = page(signed_in, shift)
    assert "Composite score" in html


GONE = ("This shift&#x27;s store cannot be opened on this server: its task is not available here any more. "
        "What the shift recorded is kept; ask your study&#x27;s coordinator.")


def test_an_ended_shift_whose_task_was_removed_still_shows_its_score(signed_in, shift):
    call(signed_in, shift, "list_orders")
    signed_in.post(f"/shifts/{shift.pk}/end/", **HX)
    Shift.objects.filter(pk=shift.pk).update(task_id="retired-task")
    response = signed_in.get(f"/shifts/{shift.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'<p class="panel" id="shift-unavailable" role="alert">{GONE}</p>' in html
    assert f'id="composite">{Shift.objects.get(pk=shift.pk).score_composite:.3f}</span>' in html
    assert 'id="timeline-chart"' in html  # stored when it ended
    assert "retired-task" not in html


def test_an_open_shift_whose_task_was_removed_says_so_and_its_panels_reload_the_page(signed_in, shift):
    Shift.objects.filter(pk=shift.pk).update(task_id="retired-task")
    response = signed_in.get(f"/shifts/{shift.pk}/")
    assert response.status_code == 503 and GONE in response.content.decode()
    assert 'id="composite"' not in response.content.decode()
    bar = signed_in.get(f"/shifts/{shift.pk}/bar/", **HX)
    assert bar.status_code == 200 and bar["HX-Refresh"] == "true"


def test_a_call_or_end_of_an_open_shift_whose_task_was_removed_reloads_to_that_page_and_changes_nothing(
        signed_in, shift):
    Shift.objects.filter(pk=shift.pk).update(task_id="retired-task")
    cache.evict(shift.pk)  # as after a restart: the next call replays the store
    for response in (call(signed_in, shift, "list_orders"), signed_in.post(f"/shifts/{shift.pk}/end/", **HX)):
        assert response.status_code == 200 and response["HX-Refresh"] == "true"
    response = call(signed_in, shift, "list_orders", htmx=False)
    assert response.status_code == 503 and GONE in response.content.decode()
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE and shift.calls.count() == 1  # the opening read only


def test_an_assigned_shift_whose_task_was_removed_does_not_start(signed_in, user):
    assigned = lifecycle.assign_shift(user, TASK, SEED, practice=True)
    Shift.objects.filter(pk=assigned.pk).update(task_id="retired-task")
    response = signed_in.post(f"/shifts/{assigned.pk}/start/")
    assert response.status_code == 503 and GONE in response.content.decode()
    assigned.refresh_from_db()
    assert assigned.status == Shift.Status.ASSIGNED and assigned.deadline is None and not assigned.calls.exists()


def test_the_deadline_sweep_goes_on_past_a_shift_whose_task_was_removed(db, caplog):
    from console_helpers import briefed_user

    from shifts.ending import enforce_deadlines
    gone, kept = (lifecycle.start_shift(briefed_user(name, password=False), TASK, SEED, practice=True)
                  for name in ("ann", "bob"))
    Shift.objects.filter(pk=gone.pk).update(task_id="retired-task", deadline=timezone.now() - timedelta(minutes=2))
    Shift.objects.filter(pk=kept.pk).update(deadline=timezone.now() - timedelta(minutes=1))
    cache.evict(gone.pk)
    assert enforce_deadlines() == [kept.pk]
    assert Shift.objects.get(pk=gone.pk).status == Shift.Status.ACTIVE
    assert [r.getMessage().split(": ")[1] for r in caplog.records if r.name == "shifts.ending"] == [
        f"shift {gone.pk} not ended"]


def test_pages_do_not_leak_task_or_seed(signed_in, shift):
    call(signed_in, shift, "list_returns")
    call(signed_in, shift, "list_orders")
    pages = [page(signed_in, shift), signed_in.get("/").content.decode(),
             call(signed_in, shift, "store_status").content.decode(),
             signed_in.get(f"/shifts/{shift.pk}/calls/2/", **HX).content.decode()]
    signed_in.post(f"/shifts/{shift.pk}/end/")
    pages.append(page(signed_in, shift))
    assert len(CSRF_VALUE.findall(pages[0])) > 1  # the body's header and the forms
    for html in pages:
        text = without_tokens(html).lower()
        assert "counter-punch" not in text
        assert "seed" not in text
    assert "<title>Practice shift</title>" in pages[0]


def test_workspace_lists_all_29_tools_and_warns(signed_in, shift):
    html = page(signed_in, shift)
    forms = re.findall(r'<form id="tool-([a-z_]+)"', html)
    assert len(REGISTRY) == 29 and sorted(forms) == sorted(REGISTRY)
    end_window = re.search(r'<form id="tool-end_window"[^>]*>', html, re.S).group(0)
    assert "hx-confirm=" in end_window
    assert 'data-spends="1"' in end_window and "console/console.js" in html
    # selects for Literal choices, hints from field descriptions
    assert '<option value="awaiting_shipment" selected>' in html
    assert "Rows per page, at most 100." in html


def test_returns_inbox_shows_the_last_read_with_its_time(signed_in, shift):
    html = page(signed_in, shift)
    assert "Call <code>list_returns</code> to fill the inbox" in html
    html = call(signed_in, shift, "list_returns").content.decode()
    assert 'id="inbox" class="panel" data-urgent-hours="12" hx-swap-oob="true"' in html
    assert "as read at <b>2026-08-01 00:00 UTC</b>" in html and "RET-" in html
    # re-reading it (the page, the history) spends nothing
    assert ops_left(page(signed_in, shift)) == OPS - 1
    detail = signed_in.get(f"/shifts/{shift.pk}/calls/2/", **HX)
    assert detail.status_code == 200 and "list_returns" in detail.content.decode()
    assert ops_left(page(signed_in, shift)) == OPS - 1


def test_load_demo_creates_one_practice_shift(db):
    call_command("load_demo")
    call_command("load_demo")
    shifts = Shift.objects.filter(participant__username="participant", is_practice=True)
    assert shifts.count() == 1
    demo = shifts.get()
    assert (demo.task_id, demo.seed, demo.is_practice, demo.status) == (*PRACTICE_CELL, True, "assigned")


@pytest.mark.slow
def test_tool_call_latency_through_the_view(signed_in, shift):
    call(signed_in, shift, "store_status")  # warm
    timings = []
    for _ in range(15):
        started = time.perf_counter()
        response = call(signed_in, shift, "store_status")
        timings.append(time.perf_counter() - started)
        assert response.status_code == 200
    median_ms = statistics.median(timings) * 1000
    print(f"median store_status through the view: {median_ms:.1f} ms (measured, not asserted)")


def test_shift_ends_when_the_store_closes(signed_in, shift):
    for _ in range(13):
        assert call(signed_in, shift, "end_window").status_code == 200
    response = call(signed_in, shift, "end_window")  # the 14th window closes: horizon reached
    assert response.status_code == 204 and response["HX-Redirect"].startswith(f"/shifts/{shift.pk}/")
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED
    assert shift.end_reason == "store closed: horizon reached"
    assert shift.calls.last().header.endswith("| store closed")
    assert "Shift ended" in page(signed_in, shift)


def test_a_read_with_the_windows_last_operation_says_its_card_and_its_stamp_are_different_moments(signed_in, shift):
    while ops_left(page(signed_in, shift)) > 1:
        call(signed_in, shift, "list_orders")
    html = call(signed_in, shift, "finance_summary").content.decode()
    assert '<span class="tag read-at">as read at 2026-08-01 00:00 · window 1</span>' in html
    stamp = re.search(r'<p class="result-header"><span class="muted">Store after this call:</span> '
                      r'<code class="stamp">([^<]+)</code></p>', html)
    assert stamp and "window 2 of 14" in stamp.group(1), stamp


def test_a_read_made_with_the_windows_last_operation_is_labelled_with_its_own_window(signed_in, shift):
    """The reply carries the next window's header (the store moved on after the call), but the
    rows are as of the window the call was made in: the read tag, the inbox and the cached view
    say so, and the cached view is marked as from an earlier window."""
    while ops_left(page(signed_in, shift)) > 1:
        call(signed_in, shift, "list_orders")
    html = call(signed_in, shift, "list_returns").content.decode()
    assert '<span class="tag read-at">as read at 2026-08-01 00:00 · window 1</span>' in html
    assert "A new window started: this call moved the store to window 2 of 14 (2026-08-01 12:00 UTC)" in html
    assert "as read at <b>2026-08-01 00:00 UTC</b>, window 1" in html  # the inbox
    workspace = page(signed_in, shift)
    assert "2026-08-01 00:00 · W1 <small class=\"muted\">(earlier window)</small>" in workspace


def test_a_call_after_signing_out_sends_the_whole_page_to_sign_in_and_spends_nothing(signed_in, shift):
    """Signed out in another tab, a call from the open workspace used to follow the redirect and
    put the sign-in page inside the result panel (and, signed in there, land on the call URL).
    Now the page itself goes to the sign-in page, coming back to the workspace; nothing is spent."""
    before = shift.calls.count()
    signed_in.post("/logout/")
    workspace = f"/shifts/{shift.pk}/"
    headers = {**HX, "HTTP_HX_CURRENT_URL": f"http://testserver{workspace}?call=1"}
    response = signed_in.post(f"/shifts/{shift.pk}/call/", {"tool": "list_orders", "call_id": "a" * 16}, **headers)
    assert response.status_code == 200 and response["HX-Redirect"] == f"/login/?next={workspace}%3Fcall%3D1"
    assert b"Sign in" not in response.content
    for panel in ("panels/?after=0", "bar/", "calls/1/"):
        answer = signed_in.get(f"/shifts/{shift.pk}/{panel}", **headers)
        assert answer["HX-Redirect"].startswith("/login/?next="), panel
    assert shift.calls.count() == before
    plain = signed_in.get(workspace)  # without htmx: the usual redirect
    assert plain.status_code == 302 and plain["Location"] == f"/login/?next={workspace}"


def test_a_link_to_a_call_the_shift_does_not_have_says_so(signed_in, shift):
    """?call=999 used to show an empty result panel ("The result of your next call appears
    here") on a shift full of calls; it now says there is no such call and shows the latest."""
    response = signed_in.get(f"/shifts/{shift.pk}/?call=999", follow=True)
    html = response.content.decode()
    assert response.redirect_chain == [(f"/shifts/{shift.pk}/", 302)]
    assert "This shift has no call #999: here is its latest call." in html
    assert "The result of your next call appears here." not in html


def test_home_and_healthz_answer_head_for_uptime_checks(client, db):
    assert client.head("/").status_code == 200 and client.head("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405

"""The shift websocket: the header and countdown pushed to the participant's open pages."""
import json
import re
import uuid
from html import unescape

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from console_helpers import OPS, briefed_user
from django.conf import settings
from django.test import Client

from config.asgi import application
from console.consumers import REFUSED
from shifts import calls, lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_console_cache")]


def make_user(name):
    return briefed_user(name, password=False)


def session_headers(user) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    return [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()), (b"origin", b"http://testserver")]


def communicator(shift, headers):
    return WebsocketCommunicator(application, f"/ws/shifts/{shift.pk}/", headers=headers)


def test_owner_gets_the_state_on_connect():
    user = make_user("mona")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)

    headers = session_headers(user)

    async def scenario():
        ws = communicator(shift, headers)
        connected, _ = await ws.connect()
        assert connected
        state = await ws.receive_json_from(timeout=10)
        await ws.disconnect()
        return state

    state = async_to_sync(scenario)()
    assert state["type"] == "state" and state["status"] == "active"
    assert 12 * 3600 - 60 <= state["seconds_left"] <= 12 * 3600
    assert f'data-ops-left="{OPS}"' in state["header_html"]
    assert state["url"] == f"/shifts/{shift.pk}/"


def state_and_push_after(shift, headers, tool: str, arguments: dict) -> tuple[dict, dict]:
    """The state a tab receives on connecting, and what it is pushed after one tool call elsewhere."""

    async def scenario():
        ws = communicator(shift, headers)
        await ws.connect()
        first = await ws.receive_json_from(timeout=10)
        await sync_to_async(calls.call_tool)(shift, tool, arguments, uuid.uuid4().hex)
        pushed = await ws.receive_json_from(timeout=10)
        await ws.disconnect()
        return first, pushed

    return async_to_sync(scenario)()


def test_a_tool_call_pushes_the_new_header():
    user = make_user("nils")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)

    _first, pushed = state_and_push_after(shift, session_headers(user), "list_orders", {"page_size": 2})
    assert f'data-ops-left="{OPS - 1}"' in pushed["header_html"]


def test_pause_is_pushed_as_a_status_change():
    user = make_user("olga")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)

    headers = session_headers(user)

    async def scenario():
        ws = communicator(shift, headers)
        await ws.connect()
        await ws.receive_json_from(timeout=10)
        await sync_to_async(lifecycle.pause_shift)(shift, "lunch")
        pushed = await ws.receive_json_from(timeout=10)
        await ws.disconnect()
        return pushed

    assert async_to_sync(scenario)()["status"] == "paused"


def test_another_participant_is_refused():
    shift = lifecycle.start_shift(make_user("paul"), "counter-punch", 7, practice=True)
    intruder = make_user("quinn")

    headers = session_headers(intruder)

    async def scenario():
        ws = communicator(shift, headers)
        return await ws.connect()

    connected, code = async_to_sync(scenario)()
    assert not connected and code == REFUSED


def test_anonymous_is_refused():
    shift = lifecycle.start_shift(make_user("rita"), "counter-punch", 7, practice=True)

    async def scenario():
        ws = communicator(shift, [(b"origin", b"http://testserver")])
        return await ws.connect()

    connected, code = async_to_sync(scenario)()
    assert not connected and code == REFUSED


def test_a_foreign_origin_is_refused():
    user = make_user("sven")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    headers = [h for h in session_headers(user) if h[0] != b"origin"] + [(b"origin", b"http://evil.example")]

    async def scenario():
        ws = communicator(shift, headers)
        return await ws.connect()

    connected, _ = async_to_sync(scenario)()
    assert not connected


def test_a_push_names_the_newest_call_and_the_panels_bring_what_another_tab_missed():
    user = make_user("olga")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    first, pushed = state_and_push_after(shift, session_headers(user), "list_returns", {})
    assert pushed["last_seq"] == first["last_seq"] + 1
    client = Client()
    client.force_login(user)
    html = client.get(f"/shifts/{shift.pk}/panels/?after={first['last_seq']}", HTTP_HX_REQUEST="true").content.decode()
    # only the missed call's history row, the inbox filled by it, and the cached views
    assert f'id="call-{pushed["last_seq"]}"' in html and f'id="call-{first["last_seq"]}"' not in html
    assert 'hx-swap-oob="afterbegin:#history-list"' in html
    assert '<div id="inbox" class="panel" data-urgent-hours="12" hx-swap-oob="true">' in html and "Cached view: <code>list_returns</code>" in html
    assert 'id="cached-views"' in html and "cached-list_returns" in html
    nothing_new = client.get(f"/shifts/{shift.pk}/panels/?after={pushed['last_seq']}").content.decode()
    assert "afterbegin:#history-list" not in nothing_new
    assert client.get(f"/shifts/{shift.pk}/panels/?after=x").status_code == 400
    stranger = Client()
    stranger.force_login(make_user("pavel"))
    assert stranger.get(f"/shifts/{shift.pk}/panels/").status_code == 404


class SlowLayer:
    """A channel layer whose sends wait until the test lets them through (or fail)."""

    def __init__(self, fail: bool = False) -> None:
        import asyncio

        self.released, self.sent, self.fail = asyncio.Event(), [], fail

    async def group_send(self, group, message):
        await self.released.wait()
        if self.fail:
            raise ConnectionError("the channel layer is down")
        self.sent.append((group, message))


@pytest.mark.parametrize("fail", [False, True])
def test_a_request_thread_hands_the_event_to_the_servers_loop_without_waiting(monkeypatch, caplog, fail):
    """On a thread of the server's loop (sync_to_async), the event is sent by that loop and
    the request does not wait for it; a failed send is logged, not raised into the request."""
    import asyncio

    from shifts import events

    async def scenario():
        layer = SlowLayer(fail)
        monkeypatch.setattr(events, "get_channel_layer", lambda: layer)
        # returns while the send is still held: the thread did not wait for it
        await asyncio.wait_for(sync_to_async(events._send, thread_sensitive=False)(41, {"type": "shift.changed"}), timeout=10)
        assert layer.sent == []
        layer.released.set()
        for _ in range(500):
            if layer.sent or "a shift event was not sent" in caplog.text:
                break
            await asyncio.sleep(0.01)
        return layer.sent

    sent = asyncio.run(scenario())
    if fail:
        assert sent == [] and "a shift event was not sent" in caplog.text
    else:
        assert sent == [("shift-41", {"type": "shift.changed"})]


def test_a_page_that_went_away_ends_the_countdown_pushes_without_an_error_logged(monkeypatch, caplog):
    """Navigating away: the server refuses a tick's push (uvicorn raises ClientDisconnected
    on a send after the client left) before the disconnect reaches the consumer.  The tick
    stops quietly; nothing is logged as an error (was: 'Task exception was never retrieved')."""
    import asyncio
    import gc
    import logging

    from uvicorn.protocols.utils import ClientDisconnected

    from console.consumers import ShiftConsumer

    user = make_user("rhea")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    headers = session_headers(user)
    monkeypatch.setattr(ShiftConsumer, "tick_seconds", 0.01)
    client = {"gone": False}
    refused: list[str] = []

    async def server(scope, receive, send):
        """The ASGI server's side of the socket: a send after the client left is refused."""
        async def send_while_connected(message):
            if client["gone"]:
                refused.append(message["type"])
                raise ClientDisconnected()
            await send(message)

        await application(scope, receive, send_while_connected)

    async def scenario():
        ws = WebsocketCommunicator(server, f"/ws/shifts/{shift.pk}/", headers=headers)
        connected, _ = await ws.connect()
        assert connected
        await ws.receive_json_from(timeout=10)
        client["gone"] = True
        for _ in range(1000):  # until a tick has tried to push to the page that left
            if refused:
                break
            await asyncio.sleep(0.01)
        await ws.disconnect()

    with caplog.at_level(logging.ERROR):
        async_to_sync(scenario)()
        gc.collect()
    assert refused == ["websocket.send"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def reads_counted(monkeypatch) -> list[int]:
    """Count the consumer's full reads of the shift (the real read runs)."""
    from console import consumers

    reads, real = [], consumers.read_state

    def counted(shift_id):
        reads.append(shift_id)
        return real(shift_id)

    monkeypatch.setattr(consumers, "read_state", counted)
    return reads


def test_a_tool_calls_push_is_worked_out_without_reading_the_shift_and_says_what_a_read_says(monkeypatch):
    from console.consumers import shift_state

    user = make_user("tara")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    reads = reads_counted(monkeypatch)
    _first, pushed = state_and_push_after(shift, session_headers(user), "list_orders", {"page_size": 2})
    assert reads == [shift.pk]  # on connect only
    read = shift_state(shift.pk)
    clock = ("seconds_left", "active_seconds", "paused_seconds")
    assert {k: v for k, v in pushed.items() if k not in clock} == {k: v for k, v in read.items() if k not in clock}
    assert all(abs(pushed[k] - read[k]) <= 2 for k in clock)
    assert f'data-ops-left="{OPS - 1}"' in pushed["header_html"]


def test_a_push_for_a_call_that_did_not_reach_the_store_names_it_and_sends_no_header():
    from console.consumers import read_state, worked_out

    user = make_user("ugo")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
    known = read_state(shift.pk)
    read = dict(known.state)
    state = worked_out(known, read["last_seq"] + 1, None)
    assert state["last_seq"] == read["last_seq"] + 1 and "header_html" not in state  # the page keeps its own
    assert known.state == {**state, "header_html": read["header_html"]}  # kept for the next push
    older = worked_out(known, read["last_seq"], None)  # an older call's event says nothing of the store
    assert "last_seq" not in older and "header_html" not in older and older["status"] == "active"


def test_a_tick_never_pushes_a_header_older_than_the_page_may_show():
    from console.consumers import read_state, worked_out

    user = make_user("una")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    known = read_state(shift.pk)
    calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)  # its event never reaches this socket
    tick = worked_out(known)
    assert tick is not None and tick["status"] == "active" and tick["seconds_left"] > 0
    assert "header_html" not in tick and "last_seq" not in tick


def test_a_full_read_gives_the_header_of_the_newest_call_it_names(monkeypatch):
    from console.consumers import read_state

    user = make_user("uli")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
    known = read_state(shift.pk)
    assert known.state["last_seq"] == 2 and f'data-ops-left="{OPS - 1}"' in known.state["header_html"]
    # a call stored between the read of the newest seq and the read of the header lends it nothing
    from console import consumers
    from console.workspace import live_state as read_live

    def a_call_lands_first(shift, upto=None):
        calls.call_tool(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
        return read_live(shift, upto)

    monkeypatch.setattr(consumers, "live_state", a_call_lands_first)
    raced = read_state(shift.pk)
    assert raced.state["last_seq"] == 2 and f'data-ops-left="{OPS - 1}"' in raced.state["header_html"]
    from console.workspace import live_state

    as_of_opening = live_state(shift, upto=1).header  # a read that saw only the opening call
    assert as_of_opening is not None and as_of_opening.ops_left == OPS


def test_ticks_work_out_the_clock_and_read_the_shift_again_every_few(monkeypatch):
    import asyncio

    from console.consumers import ShiftConsumer

    user = make_user("vera")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    headers = session_headers(user)
    monkeypatch.setattr(ShiftConsumer, "tick_seconds", 0.01)
    reads = reads_counted(monkeypatch)

    async def scenario():
        ws = communicator(shift, headers)
        await ws.connect()
        states = [await ws.receive_json_from(timeout=10) for _ in range(1 + 2 * ShiftConsumer.reread_ticks)]
        await ws.disconnect()
        await asyncio.sleep(0)
        return states

    states = async_to_sync(scenario)()
    assert len(reads) >= 3  # on connect, then on every reread_ticks-th tick
    assert reads.count(shift.pk) < len(states)
    assert {s["status"] for s in states} == {"active"}


def test_a_tick_after_the_deadline_reads_the_shift_and_says_it_is_due():
    import datetime

    from django.utils import timezone

    from console.consumers import read_state, worked_out
    from shifts.models import Shift

    user = make_user("wim")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    known = read_state(shift.pk)
    assert worked_out(known) is not None and known.state["due"] is False
    Shift.objects.filter(pk=shift.pk).update(deadline=timezone.now() - datetime.timedelta(seconds=1))
    known.shift.deadline = timezone.now() - datetime.timedelta(seconds=1)
    assert worked_out(known) is None  # the consumer then reads the shift in full
    assert read_state(shift.pk).state["due"] is True


def test_one_event_per_shift_a_bare_one_wins_else_the_newest_call():
    from shifts.events import merged

    bare = {"type": "shift.changed"}
    call = lambda seq: {"type": "shift.changed", "seq": seq, "header": None}  # noqa: E731
    assert merged([(1, call(3)), (2, call(1)), (1, call(4)), (1, call(2))]) == [(1, call(4)), (2, call(1))]
    assert merged([(1, call(3)), (1, bare), (1, call(4))]) == [(1, bare)]


def test_two_calls_events_merged_keep_the_header_when_the_newer_did_not_reach_the_store():
    from shifts.events import merged

    header = {"ops_left": 11}
    reached, refused = {"type": "shift.changed", "seq": 3, "header": header}, {"type": "shift.changed", "seq": 4,
                                                                                 "header": None}
    assert merged([(1, reached), (1, refused)]) == [(1, {**refused, "header": header})]
    assert merged([(1, refused), (1, reached)]) == [(1, {**refused, "header": header})]
    newest = {"type": "shift.changed", "seq": 5, "header": {"ops_left": 10}}
    assert merged([(1, newest), (1, reached)]) == [(1, newest)]
    later = {"type": "shift.changed", "seq": 4, "header": {"ops_left": 10}}
    unreached = {"type": "shift.changed", "seq": 5, "header": None}
    for order in ([unreached, reached, later], [later, unreached, reached], [reached, later, unreached]):
        assert merged([(1, event) for event in order]) == [(1, {**unreached, "header": later["header"]})]


def test_the_panels_say_what_the_calls_made_elsewhere_did_to_rows():
    """A page whose result still lists a row another tab acted on is told, by row key, what
    was done to it (the page then marks the row and drops its actions)."""
    user = make_user("rhea")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    listed = calls.call_tool(shift, "list_orders", {}, uuid.uuid4().hex)
    order = next(row["order_id"] for row in json.loads(listed.result_text.split("\n", 1)[1])["rows"] if row["in_stock"])
    shipped = calls.call_tool(shift, "fulfill_order", {"order_id": order}, uuid.uuid4().hex)
    refused = calls.call_tool(shift, "fulfill_order", {"order_id": "O-nope"}, uuid.uuid4().hex)
    assert not shipped.is_error and refused.is_error
    client = Client()
    client.force_login(user)
    html = client.get(f"/shifts/{shift.pk}/panels/?after={listed.seq}", HTTP_HX_REQUEST="true").content.decode()
    holder = re.search(r'<div id="done-elsewhere" hidden hx-swap-oob="true" data-done="([^"]*)"></div>', html)
    assert holder, html
    # the refused call did nothing; a mark carries its call's number and the row actions it ends
    assert json.loads(unescape(holder.group(1))) == {
        order: {"done": f"shipped (#{shipped.seq})", "seq": shipped.seq, "tools": ["fulfill_order"]}}
    nothing_new = client.get(f"/shifts/{shift.pk}/panels/?after={refused.seq}").content.decode()
    assert "done-elsewhere" not in nothing_new
    page = client.get(f"/shifts/{shift.pk}/").content.decode()
    assert '<div id="done-elsewhere" hidden data-done="{}"></div>' in page  # the swap's target



def test_the_panels_read_the_refunds_texts_in_one_query_however_many():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    user = make_user("ravi")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    first = calls.call_tool(shift, "list_returns", {}, uuid.uuid4().hex)
    returns = [row["return_id"] for row in json.loads(first.result_text.split("\n", 1)[1])["rows"]]
    client = Client()
    client.force_login(user)

    def queries_after(n: int) -> int:
        calls.call_tool(shift, "refund_return", {"return_id": returns[n], "amount": "1.00"}, uuid.uuid4().hex)
        calls.call_tool(shift, "list_returns", {}, uuid.uuid4().hex)  # the inbox then reads no earlier refund
        with CaptureQueriesContext(connection) as seen:
            assert client.get(f"/shifts/{shift.pk}/panels/?after={first.seq}").status_code == 200
        return len(seen)

    queries_after(0)  # the first request also reads what a process remembers (the user)
    assert queries_after(1) == queries_after(2) == queries_after(3)

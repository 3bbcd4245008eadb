"""The shift websocket: the header and countdown pushed to the participant's open pages."""
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from console_helpers import briefed_user
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
    assert 'data-ops-left="12"' in state["header_html"]
    assert state["url"] == f"/shifts/{shift.pk}/"


def test_a_tool_call_pushes_the_new_header():
    user = make_user("nils")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)

    headers = session_headers(user)

    async def scenario():
        ws = communicator(shift, headers)
        await ws.connect()
        await ws.receive_json_from(timeout=10)
        await sync_to_async(calls.call_tool)(shift, "list_orders", {"page_size": 2}, uuid.uuid4().hex)
        pushed = await ws.receive_json_from(timeout=10)
        await ws.disconnect()
        return pushed

    pushed = async_to_sync(scenario)()
    assert 'data-ops-left="11"' in pushed["header_html"]


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

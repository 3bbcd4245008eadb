"""The console against a hostile visitor: its own URLconf offers no unthrottled sign-in,
and an open shift socket stops when the sign-in it was opened with ends."""
from importlib import import_module

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from console_helpers import briefed_user
from django.conf import settings
from django.test import Client
from django.urls import get_resolver

from config.asgi import application
from console.consumers import REFUSED
from console.signin import ThrottledLoginView
from shifts import lifecycle


def test_the_consoles_own_sign_in_route_is_the_throttled_one():
    route = next(p for p in get_resolver("console.urls").url_patterns if p.name == "login")
    assert route.callback.view_class is ThrottledLoginView


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_console_cache")
def test_a_shift_socket_whose_sign_in_was_ended_is_closed_instead_of_pushed_to():
    user = briefed_user("nadia", password=False)
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    client = Client()
    client.force_login(user)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={key}".encode()), (b"origin", b"http://testserver")]

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/shifts/{shift.pk}/", headers=headers)
        connected, _ = await ws.connect()
        await ws.receive_json_from(timeout=10)  # the state on connect
        store = import_module(settings.SESSION_ENGINE).SessionStore
        await sync_to_async(store(session_key=key).delete)()  # e.g. the invitation was revoked
        await ws.send_json_to({"type": "refresh"})
        closed = await ws.receive_output(timeout=10)
        await ws.disconnect()
        return connected, closed

    connected, closed = async_to_sync(scenario)()
    assert connected and closed == {"type": "websocket.close", "code": REFUSED}

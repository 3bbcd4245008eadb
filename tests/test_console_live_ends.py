"""A shift websocket's consumer ends when its socket does, even when the channel layer's
receive goes on after its first cancellation, as redis-py's does on Python 3.11 (its
``asyncio.wait_for`` drops a cancellation arriving as a command's write completes): the
site's layer receives through ``config.layers.ReceiveEndsWhenCancelled``.

Seen on a deployment: a participant's invitation was revoked while their shift page was
open; the page's retries were refused (403), one refused socket's consumer waited for its
cancelled receive for good, and at SIGTERM uvicorn waited on it ("Waiting for background
tasks to complete") until killed."""
import asyncio

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import InMemoryChannelLayer
from channels.testing import WebsocketCommunicator
from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer
from django.conf import settings
from django.test import Client
from django.utils import timezone
from test_studies_support import admin, study  # noqa: F401

from config.asgi import application
from config.layers import ReceiveEndsWhenCancelled, RedisChannelLayer
from console.consumers import REFUSED
from shifts import lifecycle
from shifts.briefing import BRIEFING_VERSION
from shifts.models import BriefingAcknowledgement
from studies import participants

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_console_cache")]

ORIGIN = (b"origin", b"http://testserver")


class Stubborn(InMemoryChannelLayer):
    """The in-memory layer, whose receive, cancelled once, goes on receiving (as channels_redis's
    goes on asking Redis when redis-py dropped the cancellation); a second one ends it."""

    swallowed = 0

    async def receive(self, channel):
        try:
            return await super().receive(channel)
        except asyncio.CancelledError:
            Stubborn.swallowed += 1
        return await super().receive(channel)


class StubbornLayer(ReceiveEndsWhenCancelled, Stubborn):
    """The stubborn layer as the site's Redis layer is made: its receive ends when cancelled."""


def test_the_sites_redis_layer_receives_so():
    assert RedisChannelLayer.__mro__.index(ReceiveEndsWhenCancelled) < RedisChannelLayer.__mro__.index(
        ChannelsRedisLayer)


class SwallowsOne:
    """A receive that goes on after its first cancellation and ends at its second."""

    task: asyncio.Task | None = None

    async def receive(self, channel):
        SwallowsOne.task = asyncio.current_task()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass
        await asyncio.sleep(3600)


class SwallowsOneLayer(ReceiveEndsWhenCancelled, SwallowsOne):
    pass


def test_a_receive_cancelled_twice_still_ends_its_inner_receive():
    """Seen in CI: a refused socket's test closed its event loop, which cancels every task once
    and waits for them all; the layer's receive was cancelled again while it waited for the
    inner receive to end, gave up waiting, and the inner receive (its cancellation dropped) held
    the loop for good."""

    async def scenario():
        outer = asyncio.ensure_future(SwallowsOneLayer().receive("c"))
        await asyncio.sleep(0.01)
        outer.cancel()
        await asyncio.sleep(0.05)  # the inner receive was cancelled once and went on
        outer.cancel()  # and the outer again, as a closing loop does
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(outer, timeout=5)
        return SwallowsOne.task.done()

    assert asyncio.run(scenario())


@pytest.fixture
def stubborn_layer(settings):
    Stubborn.swallowed = 0
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.StubbornLayer"}}
    yield
    assert Stubborn.swallowed, "the layer's receive was never cancelled: the scenario did not happen"


async def ends_after_disconnect(ws: WebsocketCommunicator, code: int) -> None:
    """What uvicorn does once the socket is closed: tell the application, which must then end."""
    await ws.send_input({"type": "websocket.disconnect", "code": code})
    ended, _ = await asyncio.wait({ws.future}, timeout=3)
    await ws.wait()  # (cancels the application if it is still running)
    assert ended, "the consumer did not end: it waits for its cancelled channel-layer receive"


@pytest.mark.usefixtures("stubborn_layer")
def test_a_refused_socket_ends():
    shift = lifecycle.start_shift(_briefed("tess"), "counter-punch", 7, practice=True)

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/shifts/{shift.pk}/", headers=[ORIGIN])
        connected, code = await ws.connect()
        assert not connected and code == REFUSED
        await ends_after_disconnect(ws, 1006)

    async_to_sync(scenario)()


@pytest.mark.usefixtures("stubborn_layer")
def test_the_open_page_of_a_revoked_invitation_is_closed_and_its_consumer_ends(study, admin):  # noqa: F811
    participant = participants.add_participant(admin, study, "A")
    issued = participants.invite(admin, participant)
    browser = Client()
    browser.post(f"/studies/join/{issued.token}/")  # signs in: the session is bound to the link
    participant.refresh_from_db()
    _acknowledge(participant.user)
    shift = lifecycle.start_shift(participant.user, "counter-punch", 7, practice=True)
    cookie = browser.cookies[settings.SESSION_COOKIE_NAME].value
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()), ORIGIN]

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/shifts/{shift.pk}/", headers=headers)
        connected, _ = await ws.connect()
        assert connected
        assert (await ws.receive_json_from(timeout=10))["type"] == "state"
        await sync_to_async(participants.revoke)(admin, issued.invitation, "sent to the wrong address")
        await ws.send_json_to({"type": "refresh"})  # a push: it finds the sign-in gone
        closed = await ws.receive_output(timeout=10)
        assert closed["type"] == "websocket.close" and closed["code"] == REFUSED
        await ends_after_disconnect(ws, REFUSED)

    async_to_sync(scenario)()


def _acknowledge(user) -> None:
    BriefingAcknowledgement.objects.create(user=user, version=BRIEFING_VERSION, acknowledged_at=timezone.now())


def _briefed(name: str):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(name)
    _acknowledge(user)
    return user

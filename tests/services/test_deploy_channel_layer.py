"""The site's channel layer on a real Redis keeps a quiet receive waiting: a shift page's or
the monitor's websocket waits in ``receive`` for the next event, and an event that comes
after more than one blocking pop (channels_redis's ``brpop_timeout``, 5 s) of silence still
arrives.  With redis-py 8's default socket timeout (5 s, the same as the pop), the read gave
up first: the receive raised ``redis.exceptions.TimeoutError`` and every page's socket
dropped after 5 s of quiet."""
from __future__ import annotations

import asyncio
import os

import pytest
from serverprocs import endpoint

pytestmark = pytest.mark.services


def test_a_receive_outlasts_a_quiet_spell_longer_than_a_blocking_pop(require_service, skip_or_fail):
    if not os.environ.get("REDIS_URL"):
        skip_or_fail("REDIS_URL is not set: the site's Redis channel layer is not configured")
    require_service("Redis", *endpoint("REDIS_URL", "127.0.0.1", 6379))
    from channels.layers import get_channel_layer

    from config.layers import RedisChannelLayer

    layer = get_channel_layer()
    assert isinstance(layer, RedisChannelLayer)

    async def scenario() -> dict:
        channel = await layer.new_channel()
        waiting = asyncio.ensure_future(layer.receive(channel))
        # Longer than a blocking pop, so the receive goes through at least one whole BZPOPMIN
        # that times out on the server, as a page's socket does between two tool calls.
        await asyncio.sleep(layer.brpop_timeout + 2)
        assert not waiting.done() or waiting.exception() is None, repr(waiting.exception())
        await layer.send(channel, {"type": "shift.changed", "seq": 7})
        return await asyncio.wait_for(waiting, 30)

    message = asyncio.run(scenario())
    assert message == {"type": "shift.changed", "seq": 7}

"""The site's Redis channel layer (config.layers) sends to a group what channels_redis sends.

Against a real Redis (marked ``services``): members of a group, a process-specific
channel among them, receive the message; an empty group is a no-op; a full channel
drops the message as channels_redis does; expired messages are dropped before a send.
"""
import asyncio
import uuid

import pytest
from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer

from config.layers import RedisChannelLayer

pytestmark = pytest.mark.services

REDIS = "redis://127.0.0.1:6379/9"


@pytest.fixture
def redis_up(require_service):
    require_service("Redis", "127.0.0.1", 6379)


def layers(**options):
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    return (RedisChannelLayer(hosts=[REDIS], prefix=prefix, **options),
            ChannelsRedisLayer(hosts=[REDIS], prefix=prefix + "-theirs", **options))


async def deliveries(layer, count: int = 2):
    specific, plain = await layer.new_channel(), "shift-listener"
    for channel in (specific, plain):
        await layer.group_add("shift-7", channel)
    await layer.group_send("shift-7", {"type": "shift.changed", "n": 1})
    got = [await asyncio.wait_for(layer.receive(channel), 5) for channel in (specific, plain)]
    await layer.group_send("shift-empty", {"type": "shift.changed"})  # nobody: nothing happens
    await layer.flush()
    await layer.close_pools()
    return got


def test_group_members_receive_what_channels_redis_delivers(redis_up):
    ours, theirs = layers()
    assert asyncio.run(deliveries(ours)) == asyncio.run(deliveries(theirs)) == [
        {"type": "shift.changed", "n": 1}, {"type": "shift.changed", "n": 1}]


async def full_channel(layer):
    await layer.group_add("g", "listener")
    for n in range(3):
        await layer.group_send("g", {"type": "shift.changed", "n": n})
    got = [await asyncio.wait_for(layer.receive("listener"), 5)]
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive("listener"), 0.3)
    await layer.flush()
    await layer.close_pools()
    return got


def test_a_full_channel_drops_the_message_as_channels_redis_does(redis_up):
    ours, theirs = layers(capacity=1)
    assert asyncio.run(full_channel(ours)) == asyncio.run(full_channel(theirs)) == [{"type": "shift.changed", "n": 0}]


async def expired_then_sent(layer):
    await layer.group_add("g", "listener")
    await layer.group_send("g", {"type": "shift.changed", "n": 0})
    await asyncio.sleep(2.2)  # past the one-second expiry: the first message is dropped at the next send
    await layer.group_send("g", {"type": "shift.changed", "n": 1})
    got = [await asyncio.wait_for(layer.receive("listener"), 5)]
    await layer.flush()
    await layer.close_pools()
    return got


def test_expired_messages_are_dropped_before_a_send(redis_up):
    ours, theirs = layers(expiry=1, capacity=1)
    assert asyncio.run(expired_then_sent(ours)) == asyncio.run(expired_then_sent(theirs)) == [
        {"type": "shift.changed", "n": 1}]

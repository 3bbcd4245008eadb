"""The site's Redis channel layer: channels_redis's, with a group send of fewer round trips.

Every tool call tells its shift's group that the shift changed (:mod:`shifts.events`).
channels_redis's ``group_send`` makes two round trips to Redis to find the group's
members (drop the expired ones, then list the rest), and two more per Redis server of
members (drop each member's expired messages, then add the message by a Lua script).
On the event loop of a server process that was about a third of a millisecond of CPU
per call.  Here the first two go in one pipelined round trip, and a group with nobody
in it (no page of the shift open) ends there; the expired messages are dropped inside
the same Lua script that adds the new one, so a group with members costs one round
trip more per Redis server.  What is stored, where, with which expiry and capacity, is
channels_redis's own (its key, hashing, message and capacity helpers are used as they are).

Its connections read with a socket timeout longer than the blocking pop a receive waits
in (``brpop_timeout``, 5 s): redis-py 8 reads with a 5 s socket timeout by default, so
a page's websocket that heard nothing for 5 s lost the race between Redis answering
BZPOPMIN's timeout and the client giving up on the read; the receive raised
``redis.exceptions.TimeoutError``, the consumer died and the page's socket dropped
(1006) every 5 s of quiet, the monitor's for 10 s more.  A timeout the URL gives
(``?socket_timeout=...``) still wins.

A receive ends when it is cancelled (:class:`ReceiveEndsWhenCancelled`): channels ends a
consumer by cancelling its receive and waiting for it, and redis-py sends each command
through ``asyncio.wait_for``, which on Python 3.11 drops a cancellation that arrives as
the command's write completes.  channels_redis's receive then went on asking Redis for a
message every 5 s, for good: a refused websocket (a page retrying after its sign-in was
revoked) cancels its receive while the first commands are sent, and uvicorn's shutdown
then waited on that consumer ("Waiting for background tasks to complete") until killed.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer
from channels_redis.utils import create_pool

logger = logging.getLogger(__name__)

# channels_redis's group send script, with each channel's expired messages dropped first
# (the pipelined ZREMRANGEBYSCORE channels_redis sends before it).
GROUP_SEND = """
local over_capacity = 0
local current_time = ARGV[#ARGV - 2]
local expiry = ARGV[#ARGV - 1]
local cutoff = ARGV[#ARGV]
for i=1,#KEYS do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, cutoff)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + #KEYS]) then
        redis.call('ZADD', KEYS[i], current_time, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return over_capacity
"""


# Seconds between cancellations of a receive that did not end.
RECANCEL_SECONDS = 0.2


class ReceiveEndsWhenCancelled:
    """A channel layer whose ``receive``, once cancelled, is cancelled again every
    :data:`RECANCEL_SECONDS` until it has ended (see the module); then the cancellation
    goes on.  A further cancellation meanwhile does not stop that: ``asyncio.run`` closing
    its loop cancels every task, this one and its receive alike, and then waits for them all,
    so a receive left running there would hold the loop for good.  Mixed in before the layer
    class."""

    async def receive(self, channel: str) -> dict[str, Any]:
        task = asyncio.ensure_future(super().receive(channel))  # type: ignore[misc]
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            while not task.done():
                task.cancel()
                try:
                    await asyncio.wait({task}, timeout=RECANCEL_SECONDS)
                except asyncio.CancelledError:
                    pass  # cancelled again meanwhile (an event loop closing cancels every task): end the receive first
            if not task.cancelled():
                task.exception()  # retrieved: a message that came after the consumer stopped goes nowhere
            raise
        return task.result()


class RedisChannelLayer(ReceiveEndsWhenCancelled, ChannelsRedisLayer):
    """channels_redis's layer with :meth:`group_send` in fewer round trips, reads that
    outlast a receive's blocking pop, and a receive that ends when cancelled (see the module)."""

    # Seconds a connection waits for a reply: a blocking pop's wait and then some.
    SOCKET_TIMEOUT_MARGIN = 10

    def create_pool(self, index: int) -> Any:
        host = dict(self.hosts[index])
        host.setdefault("socket_timeout", self.brpop_timeout + self.SOCKET_TIMEOUT_MARGIN)
        return create_pool(host)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert self.require_valid_group_name(group), "Group name not valid"
        key = self._group_key(group)
        connection = self.connection(self.consistent_hash(group))
        pipe = connection.pipeline(transaction=False)
        pipe.zremrangebyscore(key, min=0, max=int(time.time()) - self.group_expiry)
        pipe.zrange(key, 0, -1)
        _expired, members = await pipe.execute()
        if not members:
            return
        channel_names = [member.decode("utf8") for member in members]
        by_connection, messages, capacities = self._map_channel_keys_to_connection(channel_names, message)
        for index, keys in by_connection.items():
            now = time.time()
            args = ([messages[k] for k in keys] + [capacities[k] for k in keys]
                    + [now, self.expiry, int(now) - int(self.expiry)])
            over = await self.connection(index).eval(GROUP_SEND, len(keys), *keys, *args)
            if over > 0:
                logger.info("%s of %s channels over capacity in group %s", over, len(channel_names), group)

"""Discord shards spread over the fleet: each shard connected by exactly one worker.

Shard `i` of `count` is the lease `discord:shard:<count>:<i>`; a worker connects only the shards whose
lease it holds. Every `rebalance_s` the keeper checks its leases (a lost one is disconnected), works
out its fair share (`ceil(count / live workers)`), lets go of shards above it (the worker that joined
takes them) and takes free ones up to it. A dead worker's leases end with its database connection, so
its shards move on the next round.

IDENTIFY is rate limited per bucket (`shard_id % max_concurrency`, one per `identify_interval_s`, 5 s
at Discord): `identify_slot` holds the bucket's lease `discord:identify:<bucket>` across the fleet for
that long, and a local lock keeps two shards of this worker apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable

from gateway.errors import StoreError
from gateway.platforms.fleet import Fleet, FleetTimings

logger = logging.getLogger(__name__)

IDENTIFY_POLL_S = 0.1


def shard_lease(count: int, shard_id: int) -> str:
    return f"discord:shard:{count}:{shard_id}"


def shard_of(guild_id: int | None, count: int) -> int:
    """Discord's rule: a guild's events arrive on shard `(guild_id >> 22) % count`; DMs on shard 0."""
    return 0 if guild_id is None else (guild_id >> 22) % count


class ShardKeeper:
    """Holds this worker's share of the shards; `connect`/`disconnect`/`alive` act on one shard."""

    def __init__(
        self,
        fleet: Fleet,
        timings: FleetTimings,
        *,
        count: int,
        max_concurrency: int,
        identify_interval_s: float,
        connect: Callable[[int], Awaitable[None]],
        disconnect: Callable[[int], Awaitable[None]],
        alive: Callable[[int], bool],
    ) -> None:
        self._fleet = fleet
        self._timings = timings
        self.count = count
        self._max_concurrency = max(1, max_concurrency)
        self._identify_interval_s = identify_interval_s
        self._connect = connect
        self._disconnect = disconnect
        self._alive = alive
        self.owned: set[int] = set()
        self._buckets: dict[int, asyncio.Lock] = {}
        self._task: asyncio.Task[None] | None = None
        self._slot_ends: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """The first round now (a connection failure here fails the start), then one every `rebalance_s`."""
        await self._round(starting=True)
        if not self.owned:
            logger.info("discord: standing by; every shard of %d is connected by another worker", self.count)
        self._task = asyncio.create_task(self._loop(), name="discord:shards")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for shard_id in sorted(self.owned):
            await self._let_go(shard_id)
        for end in list(self._slot_ends):
            end.cancel()

    async def identify_slot(self, shard_id: int | None) -> None:
        """Wait for this shard's IDENTIFY bucket to be free across the fleet, then hold it a while."""
        bucket = (shard_id or 0) % self._max_concurrency
        lock = self._buckets.setdefault(bucket, asyncio.Lock())
        await lock.acquire()
        name = f"discord:identify:{bucket}"
        try:
            while True:  # another worker's identify window: a short poll, not worth a notification
                if await self._fleet.try_take(name):
                    break
                await asyncio.sleep(IDENTIFY_POLL_S)
        except StoreError as exc:  # the database is away: this worker's own pacing still holds
            logger.warning("discord: identify bucket %d not coordinated (%s)", bucket, exc)
        end = asyncio.create_task(self._end_slot(name, lock), name=f"discord:identify-{bucket}")
        self._slot_ends.add(end)
        end.add_done_callback(self._slot_ends.discard)

    async def _end_slot(self, name: str, lock: asyncio.Lock) -> None:
        try:
            await asyncio.sleep(self._identify_interval_s)
            with contextlib.suppress(StoreError):
                await self._fleet.release(name)
        finally:
            lock.release()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._timings.rebalance_s)
            try:
                await self._round()
            except StoreError as exc:
                logger.warning("discord: shard leases not checked (%s); keeping %s", exc, sorted(self.owned))

    async def _round(self, *, starting: bool = False) -> None:
        lost_names = await self._fleet.check()
        lost = {s for s in self.owned if shard_lease(self.count, s) in lost_names}
        for shard_id in sorted(lost):
            logger.warning("discord: shard %d was taken by another worker; disconnecting it", shard_id)
            await self._let_go(shard_id)
        for shard_id in sorted(s for s in self.owned if not self._alive(s)):
            logger.warning("discord: shard %d lost its connection; handing it back", shard_id)
            await self._let_go(shard_id)
        share = math.ceil(self.count / max(1, await self._fleet.live_workers()))
        while len(self.owned) > share:
            surplus = max(self.owned)
            logger.info("discord: letting shard %d go to another worker (fair share %d)", surplus, share)
            await self._let_go(surplus)
        for shard_id in range(self.count):
            if len(self.owned) >= share:
                break
            if shard_id in self.owned or not await self._fleet.try_take(shard_lease(self.count, shard_id)):
                continue
            self.owned.add(shard_id)
            try:
                await self._connect(shard_id)
            except Exception as exc:
                await self._let_go(shard_id)
                if starting:
                    raise
                logger.error("discord: shard %d could not connect (%s); retrying later", shard_id, exc)
                continue
            logger.info(
                "discord: this worker (%s) connected shard %d of %d", self._fleet.worker, shard_id, self.count
            )

    async def _let_go(self, shard_id: int) -> None:
        self.owned.discard(shard_id)
        try:
            await self._disconnect(shard_id)
        finally:
            with contextlib.suppress(StoreError):
                await self._fleet.release(shard_lease(self.count, shard_id))

"""Per-chat locks: one turn per chat, within a process and across workers sharing Postgres."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from gateway.errors import ChatLockTimeout
from gateway.store import ChatLocks, Store


class Timeline:
    """Records (start, end) of each critical section to measure overlap."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []

    async def work(self, locks: ChatLocks, chat_pk: int, seconds: float) -> None:
        async with locks.hold(chat_pk):
            start = time.monotonic()
            await asyncio.sleep(seconds)
            self.spans.append((start, time.monotonic()))

    def overlapped(self) -> bool:
        spans = sorted(self.spans)
        return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))


async def test_one_holder_per_chat_in_process(store: Store) -> None:
    locks = ChatLocks(store)
    same, other = Timeline(), Timeline()
    await asyncio.gather(*(same.work(locks, 1, 0.05) for _ in range(4)), other.work(locks, 2, 0.05))
    assert not same.overlapped()
    assert locks.held_keys() == []  # unused entries are cleaned up
    await locks.close()


async def test_timeout_raises_chat_lock_timeout(store: Store) -> None:
    locks = ChatLocks(store, timeout=0.1)
    async with locks.hold(5):
        with pytest.raises(ChatLockTimeout):
            async with locks.hold(5):
                pass
    async with locks.hold(5):  # released and usable again
        pass
    await locks.close()


@pytest.mark.postgres
async def test_two_workers_never_hold_the_same_chat_at_once(pg_url: str) -> None:
    worker_a, worker_b = await Store.open(pg_url), await Store.open(pg_url)
    locks_a, locks_b = ChatLocks(worker_a), ChatLocks(worker_b)
    try:
        same = Timeline()
        await asyncio.gather(
            *(same.work(locks_a, 7, 0.1) for _ in range(3)), *(same.work(locks_b, 7, 0.1) for _ in range(3))
        )
        assert len(same.spans) == 6
        assert not same.overlapped()

        different = Timeline()
        started = time.monotonic()
        await asyncio.gather(different.work(locks_a, 8, 0.3), different.work(locks_b, 9, 0.3))
        assert different.overlapped()
        assert time.monotonic() - started < 0.55
    finally:
        await locks_a.close()
        await locks_b.close()
        await worker_a.close()
        await worker_b.close()


@pytest.mark.postgres
async def test_other_worker_times_out_while_chat_is_held(pg_url: str) -> None:
    worker_a, worker_b = await Store.open(pg_url), await Store.open(pg_url)
    locks_a, locks_b = ChatLocks(worker_a), ChatLocks(worker_b, timeout=0.2)
    try:
        async with locks_a.hold(11):
            started = time.monotonic()
            with pytest.raises(ChatLockTimeout):
                async with locks_b.hold(11):
                    pass
            assert time.monotonic() - started < 1.0
        async with locks_b.hold(11):  # free once the first worker let go
            pass
    finally:
        await locks_a.close()
        await locks_b.close()
        await worker_a.close()
        await worker_b.close()

"""Ingress ordering and durability shared by the platform adapters.

`ChatLanes` runs work one item at a time per chat, in the order it was submitted, while different
chats run concurrently: a chat's messages reach the store in platform order and one slow chat never
holds up another. `hand_over` calls the gateway's handler until it returns, which means the message
is stored (or spooled, or deliberately not kept): only then may an adapter acknowledge the update.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from gateway.platforms.base import IncomingMessage, MessageHandler

logger = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_DELAYS_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Waits between attempts to hand a message over; the last one repeats."""


class ChatLanes:
    """One FIFO lane per key; `submit` returns the task that runs the work when its turn comes."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._tails: dict[Hashable, asyncio.Task[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def submit(self, key: Hashable, work: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
        previous = self._tails.get(key)
        task: asyncio.Task[T] = asyncio.create_task(_after(previous, work), name=f"{self._name}:{key}")
        self._tails[key] = task
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._finished(key, t))
        return task

    def _finished(self, key: Hashable, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if self._tails.get(key) is task:
            del self._tails[key]

    async def drain(self, wait_s: float) -> int:
        """Wait up to `wait_s` for submitted work, then cancel the rest; returns how many were cancelled."""
        if not self._tasks:
            return 0
        _, pending = await asyncio.wait(set(self._tasks), timeout=wait_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        return len(pending)


async def _after(previous: asyncio.Task[Any] | None, work: Callable[[], Awaitable[T]]) -> T:
    if previous is not None:
        # Wait for the chat's previous item however it ended (asyncio.wait never raises its error).
        await asyncio.wait({previous})
    return await work()


async def hand_over(
    handler: MessageHandler,
    msg: IncomingMessage,
    *,
    platform: str,
    give_up_after_s: float | None = None,
    delays: tuple[float, ...] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Call `handler` until it returns (the message is safe); retry with back-off while it raises.

    Returns False when `give_up_after_s` passed first (the caller must then not acknowledge the
    update, so the platform delivers it again). With no limit it retries until cancelled.
    """
    delays = delays or RETRY_DELAYS_S
    started = clock()
    attempt = 0
    while True:
        try:
            await handler(msg)
            if attempt:
                logger.info(
                    "%s: message %s in chat %s stored after %d failed attempt(s)",
                    platform,
                    msg.platform_message_id,
                    msg.chat.chat_id,
                    attempt,
                )
            return True
        except Exception:
            delay = delays[min(attempt, len(delays) - 1)]
            attempt += 1
            logger.exception(
                "%s: message %s in chat %s could not be stored (attempt %d); not acknowledged",
                platform,
                msg.platform_message_id,
                msg.chat.chat_id,
                attempt,
            )
            if give_up_after_s is not None and clock() - started + delay > give_up_after_s:
                return False
            await asyncio.sleep(delay)

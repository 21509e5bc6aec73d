"""One turn per chat at a time: an asyncio lock per chat in this process, plus on Postgres a
transaction-level advisory lock held on a dedicated connection, so other worker processes wait too.

The advisory key is the pair (LOCK_NAMESPACE, chat_pk); the namespace keeps chat locks apart from
other advisory locks in the same database (e.g. scheduled jobs). The lock is released when the holding
transaction ends, so a crashed worker can never leave a chat locked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.errors import ChatLockTimeout
from gateway.store.db import create_engine, translate_errors
from gateway.store.repository import Store

logger = logging.getLogger(__name__)

LOCK_NAMESPACE = 0x6777  # "gw"
LOCK_NOT_AVAILABLE = "55P03"  # SQLSTATE raised when lock_timeout expires


@dataclass
class _Slot:
    lock: asyncio.Lock
    users: int = 0


class ChatLocks:
    """Per-chat mutual exclusion across tasks and, on Postgres, across processes."""

    def __init__(self, store: Store, *, timeout: float | None = 600.0, pool_size: int = 5) -> None:
        self._store = store
        self._timeout = timeout
        self._pool_size = pool_size
        self._slots: dict[int, _Slot] = {}
        self._engine: AsyncEngine | None = None
        self._connections = asyncio.Semaphore(pool_size * 2)
        """Advisory holders queue here (FIFO, bounded by the lock deadline) rather than time out in the
        lock pool: a thousand chats starting turns at once must wait their turn, not fail."""

    def held_keys(self) -> list[int]:
        """Chats with a holder or waiters in this process (for tests and diagnostics)."""
        return sorted(self._slots)

    @asynccontextmanager
    async def hold(self, chat_pk: int) -> AsyncIterator[None]:
        """Hold the chat for the duration of the block; raise ChatLockTimeout after `timeout` seconds."""
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        slot = self._slots.setdefault(chat_pk, _Slot(asyncio.Lock()))
        slot.users += 1
        try:
            try:
                await asyncio.wait_for(slot.lock.acquire(), timeout=self._remaining(deadline))
            except TimeoutError:
                raise ChatLockTimeout(f"chat {chat_pk} is busy with another turn") from None
            try:
                if self._store.dialect == "postgresql":
                    async with self._advisory(chat_pk, deadline):
                        yield
                else:
                    yield
            finally:
                slot.lock.release()
        finally:
            slot.users -= 1
            if slot.users == 0:
                del self._slots[chat_pk]

    @staticmethod
    def _remaining(deadline: float | None) -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def _lock_engine(self) -> AsyncEngine:
        # A separate small pool: a held lock pins its connection for the whole turn, and must not
        # starve the store's own pool.
        if self._engine is None:
            url = self._store.engine.url.render_as_string(hide_password=False)
            self._engine = create_engine(url, pool_size=self._pool_size, max_overflow=self._pool_size)
        return self._engine

    @asynccontextmanager
    async def _advisory(self, chat_pk: int, deadline: float | None) -> AsyncIterator[None]:
        try:
            await asyncio.wait_for(self._connections.acquire(), timeout=self._remaining(deadline))
        except TimeoutError:
            raise ChatLockTimeout(f"chat {chat_pk}: no lock connection free in time") from None
        try:
            async with self._advisory_on_connection(chat_pk, deadline):
                yield
        finally:
            self._connections.release()

    @asynccontextmanager
    async def _advisory_on_connection(self, chat_pk: int, deadline: float | None) -> AsyncIterator[None]:
        with translate_errors("chat lock"):
            conn = await self._lock_engine().connect()
        try:
            with translate_errors("chat lock"):
                await conn.begin()
                remaining = self._remaining(deadline)
                if remaining is not None:
                    ms = max(1, int(remaining * 1000))
                    await conn.execute(text(f"SET LOCAL lock_timeout = {ms}"))
                try:
                    await conn.execute(
                        text("SELECT pg_advisory_xact_lock(:ns, :key)"),
                        {"ns": LOCK_NAMESPACE, "key": chat_pk},
                    )
                except DBAPIError as exc:
                    if getattr(exc.orig, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                        raise ChatLockTimeout(f"chat {chat_pk} is held by another worker") from None
                    raise
            logger.debug("advisory lock taken for chat %s", chat_pk)
            yield
        finally:
            # Ending the transaction releases the advisory lock.
            with translate_errors("chat lock release"):
                await conn.rollback()
                await conn.close()

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

"""One turn per chat at a time: an asyncio lock per chat in this process, plus on Postgres a
session-level advisory lock taken on one connection this process keeps for all its chat locks, so other
worker processes wait too without a connection pinned per running turn.

The advisory key is the pair (LOCK_NAMESPACE, chat_pk); the namespace keeps chat locks apart from
other advisory locks in the same database (e.g. scheduled jobs). A worker that dies closes its lock
connection, which releases every lock it held, so a crashed worker can never leave a chat locked.
Another worker's lock is waited for by retrying `pg_try_advisory_lock` with a growing pause.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.errors import ChatLockTimeout
from gateway.store.db import StoreBase, create_engine, translate_errors

logger = logging.getLogger(__name__)

LOCK_NAMESPACE = 0x6777  # "gw"
RETRY_FIRST_S = 0.01
RETRY_MAX_S = 0.5
"""Pauses between attempts on a chat another worker holds (doubling from the first to the max)."""

TRY_LOCK = text("SELECT pg_try_advisory_lock(:ns, :key)")
UNLOCK = text("SELECT pg_advisory_unlock(:ns, :key)")


@dataclass
class _Slot:
    lock: asyncio.Lock
    users: int = 0


class ChatLocks:
    """Per-chat mutual exclusion across tasks and, on Postgres, across processes."""

    def __init__(self, store: StoreBase, *, timeout: float | None = 600.0) -> None:
        self._store = store
        self._timeout = timeout
        self._slots: dict[int, _Slot] = {}
        self._engine: AsyncEngine | None = None
        self._conn: AsyncConnection | None = None
        self._conn_lock = asyncio.Lock()
        """One statement at a time on the shared lock connection (each is one short round trip)."""

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
        # Its own one-connection engine: the lock connection lives as long as the process holds locks
        # and must not take a connection from the store's pool.
        if self._engine is None:
            url = self._store.engine.url.render_as_string(hide_password=False)
            self._engine = create_engine(url, pool_size=1, max_overflow=0)
        return self._engine

    async def _call(self, statement: TextClause, chat_pk: int, operation: str) -> bool:
        """Run one lock statement on the shared connection (opened on first use, dropped on error)."""
        async with self._conn_lock:
            with translate_errors(operation):
                try:
                    if self._conn is None:
                        conn = await self._lock_engine().connect()
                        self._conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                    params = {"ns": LOCK_NAMESPACE, "key": chat_pk}
                    result = await self._conn.execute(statement, params)
                    return bool(result.scalar())
                except BaseException:
                    await self._drop_connection()
                    raise

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # Closing the session releases whatever it still held in the database.
            try:
                await conn.invalidate()
            finally:
                await conn.close()

    @asynccontextmanager
    async def _advisory(self, chat_pk: int, deadline: float | None) -> AsyncIterator[None]:
        pause = RETRY_FIRST_S
        while not await self._call(TRY_LOCK, chat_pk, "chat lock"):
            remaining = self._remaining(deadline)
            if remaining is not None and remaining <= 0.0:
                raise ChatLockTimeout(f"chat {chat_pk} is held by another worker")
            await asyncio.sleep(pause if remaining is None else min(pause, remaining))
            pause = min(pause * 2, RETRY_MAX_S)
        logger.debug("advisory lock taken for chat %s", chat_pk)
        try:
            yield
        finally:
            if not await self._call(UNLOCK, chat_pk, "chat lock release"):
                logger.warning("advisory lock of chat %s was lost before its release", chat_pk)

    async def close(self) -> None:
        async with self._conn_lock:
            await self._drop_connection()
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

"""When the keep-alive job looks at a session's prompt cache: `sessions.cache_look_at`, kept with the
cache state.

Every write of a session's cache state also sets the time its earliest refresh window opens
(`agent.caching.keepalive.next_look`), so the job's scan reads only the sessions due now, on the partial
index ix_sessions_cache_look, however many chats are active. A look that changes nothing moves the time
on itself (`set_cache_look`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.caching.keepalive import next_look
from agent.caching.plan import CacheState
from gateway.store.db import StoreBase
from gateway.store.records import SessionRecord
from gateway.store.rows import chats, sessions, to_session


def cache_values(cache_state: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The session columns a cache state write sets: the state and when it next needs a look."""
    return {"cache_state": cache_state, "cache_look_at": next_look(CacheState.from_json(cache_state), now)}


async def save_cache_state(
    conn: AsyncConnection, session_pk: int, cache_state: dict[str, Any], *, now: datetime
) -> None:
    await conn.execute(
        update(sessions).where(sessions.c.id == session_pk).values(**cache_values(cache_state, now))
    )


async def looks_due(conn: AsyncConnection, *, now: datetime, limit: int) -> list[tuple[SessionRecord, str]]:
    """Active sessions whose cache needs a look at `now`, with their chat's kind, longest due first."""
    query = (
        select(sessions, chats.c.kind.label("chat_kind"))
        .join(chats, chats.c.id == sessions.c.chat_pk)
        .where(sessions.c.active, sessions.c.cache_look_at <= now)
        .order_by(sessions.c.cache_look_at)
        .limit(limit)
    )
    return [(to_session(row), str(row.chat_kind)) for row in (await conn.execute(query)).all()]


async def earliest_look(conn: AsyncConnection) -> datetime | None:
    """The earliest look any active session waits for (None: no session has a cache entry to keep)."""
    query = select(func.min(sessions.c.cache_look_at)).where(sessions.c.active)
    value: datetime | None = (await conn.execute(query)).scalar_one()
    return value


class CacheLookMethods(StoreBase):
    """Mixed into `Store`: the keep-alive job's scan and its next look, one transaction each."""

    async def cache_looks_due(self, now: datetime, *, limit: int = 500) -> list[tuple[SessionRecord, str]]:
        """Active sessions (with their chat's kind) whose prompt cache the keep-alive job should look at
        now, longest due first (`looks_due`)."""
        async with self._tx("cache_looks_due") as conn:
            return await looks_due(conn, now=now, limit=limit)

    async def set_cache_look(self, session_pk: int, at: datetime | None) -> None:
        """When the keep-alive job next looks at the session (after a look that saved no cache state)."""
        async with self._tx("set_cache_look") as conn:
            await conn.execute(update(sessions).where(sessions.c.id == session_pk).values(cache_look_at=at))

    async def earliest_cache_look(self) -> datetime | None:
        """The earliest look any active session waits for."""
        async with self._tx("earliest_cache_look") as conn:
            return await earliest_look(conn)

"""Queries behind the scheduled jobs: idle-session candidates, archive retention, the daily usage rollup.

Each function takes an open connection; `Store` wraps them in one transaction each.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import cast

from sqlalchemy import Date, Table, and_, delete, func, literal, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.db import StoreBase
from gateway.store.messages.media import delete_unreferenced_in
from gateway.store.records import SessionRecord
from gateway.store.rows import compactions, llm_calls, messages, sessions, to_session
from gateway.store.tables import UsageDaily

usage_daily = cast(Table, UsageDaily.__table__)

DELETE_BATCH = 5_000
"""Archived rows deleted per statement, so retention never holds a long lock on a busy table."""


async def idle_sessions(
    conn: AsyncConnection, *, idle_since: datetime, min_tokens: int, limit: int
) -> list[SessionRecord]:
    """Active sessions with no message since `idle_since`, at least `min_tokens` of context, and a
    message stored after the last scheduled compaction attempt (so a session is tried once per idle spell).

    The range scan runs on the partial index ix_sessions_idle (active sessions by last activity).
    """
    tokens = func.coalesce(
        sessions.c.last_prompt_tokens + sessions.c.tokens_since_call, sessions.c.active_tokens
    )
    last_scheduled = (
        select(func.max(compactions.c.created_at))
        .where(compactions.c.session_pk == sessions.c.id, compactions.c.trigger == "scheduled")
        .scalar_subquery()
    )
    query = (
        select(sessions)
        .where(
            sessions.c.active,
            sessions.c.last_activity_at < idle_since,
            tokens >= min_tokens,
            or_(last_scheduled.is_(None), last_scheduled < sessions.c.last_activity_at),
        )
        .order_by(sessions.c.last_activity_at)
        .limit(limit)
    )
    return [to_session(row) for row in (await conn.execute(query)).all()]


async def delete_archived_before(conn: AsyncConnection, cutoff: datetime) -> int:
    """Delete up to DELETE_BATCH archived messages created before `cutoff` (and a batch of media left
    unreferenced and unused since then); returns how many messages."""
    ids = (
        select(messages.c.id)
        .where(messages.c.state == "archived", messages.c.created_at < cutoff)
        .limit(DELETE_BATCH)
        .scalar_subquery()
    )
    result = await conn.execute(delete(messages).where(messages.c.id.in_(ids)))
    # Media no remaining message refers to, unused for as long, go with them (links cascade).
    await delete_unreferenced_in(conn, cutoff)
    return int(result.rowcount or 0)


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


ROLLED_UP = (
    "calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "updated_at",
)
"""The `usage_daily` columns a roll-up writes again for a (day, chat, model) already there."""


async def rollup_day(conn: AsyncConnection, day: date, *, now: datetime, dialect: str) -> int:
    """Upsert `usage_daily` for one UTC day from `llm_calls` (idempotent); returns the rows written.

    One `INSERT ... SELECT ... ON CONFLICT` in the database: the day's totals never travel through
    Python, so the statement's size does not grow with the number of chats (a VALUES list of every
    chat's totals passed Postgres's 32,767 bind parameters at about 3,300 chats a day)."""
    start, end = day_bounds(day)
    totals = (
        select(
            literal(day, Date).label("day"),
            llm_calls.c.chat_pk,
            llm_calls.c.model,
            func.count().label("calls"),
            func.coalesce(func.sum(llm_calls.c.input_tokens), 0).label("input_tokens"),
            func.coalesce(func.sum(llm_calls.c.output_tokens), 0).label("output_tokens"),
            func.coalesce(func.sum(llm_calls.c.cache_read_tokens), 0).label("cache_read_tokens"),
            func.coalesce(func.sum(llm_calls.c.cache_creation_tokens), 0).label("cache_write_tokens"),
            func.coalesce(func.sum(llm_calls.c.cost_usd), 0.0).label("cost_usd"),
            literal(now, usage_daily.c.updated_at.type).label("updated_at"),
        )
        .where(and_(llm_calls.c.created_at >= start, llm_calls.c.created_at < end))
        .group_by(llm_calls.c.chat_pk, llm_calls.c.model)
    )
    insert = pg_insert(usage_daily) if dialect == "postgresql" else sqlite_insert(usage_daily)
    stmt = insert.from_select(["day", "chat_pk", "model", *ROLLED_UP], totals)
    upsert = stmt.on_conflict_do_update(
        index_elements=["day", "chat_pk", "model"], set_={name: stmt.excluded[name] for name in ROLLED_UP}
    )
    result = await conn.execute(upsert)
    return max(result.rowcount, 0)


@dataclass(frozen=True, slots=True)
class DailyUsage:
    day: date
    chat_pk: int
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float


async def daily_usage(conn: AsyncConnection, day: date) -> list[DailyUsage]:
    rows = await conn.execute(
        select(usage_daily)
        .where(usage_daily.c.day == day)
        .order_by(usage_daily.c.chat_pk, usage_daily.c.model)
    )
    return [
        DailyUsage(
            day=r.day,
            chat_pk=r.chat_pk,
            model=r.model,
            calls=r.calls,
            input_tokens=r.input_tokens,
            output_tokens=r.output_tokens,
            cache_read_tokens=r.cache_read_tokens,
            cache_write_tokens=r.cache_write_tokens,
            cost_usd=float(r.cost_usd),
        )
        for r in rows
    ]


class JobMethods(StoreBase):
    """Mixed into `Store`: the queries above, one transaction each."""

    async def idle_sessions(
        self, *, idle_since: datetime, min_tokens: int, limit: int = 100
    ) -> list[SessionRecord]:
        """Active sessions idle since `idle_since` with at least `min_tokens` of context, oldest first."""
        async with self._tx("idle_sessions") as conn:
            return await idle_sessions(conn, idle_since=idle_since, min_tokens=min_tokens, limit=limit)

    async def delete_archived_before(self, cutoff: datetime) -> int:
        """Delete one batch of archived messages older than `cutoff` (never active or summary rows)."""
        async with self._tx("delete_archived_before") as conn:
            return await delete_archived_before(conn, cutoff)

    async def rollup_usage_day(self, day: date) -> int:
        """Recompute `usage_daily` rows for one UTC day from the usage log; returns the rows written."""
        async with self._tx("rollup_usage_day") as conn:
            return await rollup_day(conn, day, now=self.now(), dialect=self.dialect)

    async def daily_usage(self, day: date) -> list[DailyUsage]:
        async with self._tx("daily_usage") as conn:
            return await daily_usage(conn, day)

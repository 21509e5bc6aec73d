"""Reading what the store has recorded, for the scheduled jobs and for `/stats`: what a chat spent, idle
sessions, old archived rows, the daily usage roll-up, per-chat and global statistics and the prompt
cache's waste. The queries live in `jobs`, `stats` and `cache_waste`; `Store` mixes these methods in.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import date, datetime
from typing import TYPE_CHECKING

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.caching.waste import CacheWaste
from gateway.store import cache_looks as _looks
from gateway.store import cache_waste as _cache_waste
from gateway.store import job_queries as _jobs
from gateway.store import stats as _stats
from gateway.store.call_outcomes import CallOutcomes, call_outcomes
from gateway.store.records import ChatStats, GlobalStats, SessionRecord
from gateway.store.rows import llm_calls, sessions


class ReportingMethods:
    """Mixed into `Store`, which provides the transaction, the clock and the dialect."""

    if TYPE_CHECKING:
        dialect: str

        def _tx(self, operation: str) -> AbstractAsyncContextManager[AsyncConnection]: ...

        def now(self) -> datetime: ...

    async def cost_since(self, chat_pk: int, since: datetime) -> float:
        async with self._tx("cost_since") as conn:
            total = (
                await conn.execute(
                    select(func.coalesce(func.sum(llm_calls.c.cost_usd), 0.0)).where(
                        llm_calls.c.chat_pk == chat_pk, llm_calls.c.created_at >= since
                    )
                )
            ).scalar_one()
        return float(total)

    async def idle_sessions(
        self, *, idle_since: datetime, min_tokens: int, limit: int = 100
    ) -> list[SessionRecord]:
        """Active sessions idle since `idle_since` with at least `min_tokens` of context, oldest first."""
        async with self._tx("idle_sessions") as conn:
            return await _jobs.idle_sessions(conn, idle_since=idle_since, min_tokens=min_tokens, limit=limit)

    async def cache_looks_due(self, now: datetime, *, limit: int = 500) -> list[tuple[SessionRecord, str]]:
        """Active sessions (with their chat's kind) whose prompt cache the keep-alive job should look at
        now, longest due first (`gateway.store.cache_looks`)."""
        async with self._tx("cache_looks_due") as conn:
            return await _looks.looks_due(conn, now=now, limit=limit)

    async def set_cache_look(self, session_pk: int, at: datetime | None) -> None:
        """When the keep-alive job next looks at the session (after a look that saved no cache state)."""
        async with self._tx("set_cache_look") as conn:
            await conn.execute(update(sessions).where(sessions.c.id == session_pk).values(cache_look_at=at))

    async def earliest_cache_look(self) -> datetime | None:
        """The earliest look any active session waits for."""
        async with self._tx("earliest_cache_look") as conn:
            return await _looks.earliest_look(conn)

    async def delete_archived_before(self, cutoff: datetime) -> int:
        """Delete one batch of archived messages older than `cutoff` (never active or summary rows)."""
        async with self._tx("delete_archived_before") as conn:
            return await _jobs.delete_archived_before(conn, cutoff)

    async def rollup_usage_day(self, day: date) -> int:
        """Recompute `usage_daily` rows for one UTC day from the usage log; returns the rows written."""
        async with self._tx("rollup_usage_day") as conn:
            return await _jobs.rollup_day(conn, day, now=self.now(), dialect=self.dialect)

    async def daily_usage(self, day: date) -> list[_jobs.DailyUsage]:
        async with self._tx("daily_usage") as conn:
            return await _jobs.daily_usage(conn, day)

    async def chat_stats(self, chat_pk: int, *, recent_calls: int = 10) -> ChatStats:
        async with self._tx("chat_stats") as conn:
            return await _stats.chat_stats(conn, chat_pk, recent_calls=recent_calls)

    async def global_stats(self, *, top: int = 5) -> GlobalStats:
        async with self._tx("global_stats") as conn:
            return await _stats.global_stats(conn, top=top)

    async def call_outcomes(self, chat_pk: int | None = None) -> CallOutcomes:
        """Refusals by category and thinking blocks the API dropped, for one chat (None: every chat)."""
        async with self._tx("call_outcomes") as conn:
            return await call_outcomes(conn, chat_pk=chat_pk)

    async def cache_waste(self, chat_pk: int | None = None) -> CacheWaste:
        """The prompt cache's waste for one chat (None: every chat), as of now."""
        async with self._tx("cache_waste") as conn:
            return await _cache_waste.cache_waste(conn, chat_pk=chat_pk, now=self.now())

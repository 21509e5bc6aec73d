"""Reading what the store has recorded, for `/stats` and the budget: what a chat spent, per-chat and
global statistics, what the model declined and the prompt cache's waste. The queries live in `stats`,
`call_outcomes` and `cache_waste`; `Store` mixes these methods in.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

from agent.caching.waste import CacheWaste
from gateway.store.db import StoreBase
from gateway.store.records import ChatStats, GlobalStats
from gateway.store.reports import cache_waste as _cache_waste
from gateway.store.reports import stats as _stats
from gateway.store.reports.call_outcomes import CallOutcomes, call_outcomes
from gateway.store.rows import llm_calls


class ReportingMethods(StoreBase):
    """Mixed into `Store`; `StoreBase` provides the transaction, the dialect's insert and the clock."""

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

"""The prompt cache's waste for `/stats`: the reply and keep-alive calls of one chat, or of every chat,
session by session, through `agent.caching.waste` (the computation is pure; this module only reads the
rows)."""

from __future__ import annotations

from datetime import datetime
from itertools import groupby
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.caching.waste import CacheCall, CacheWaste, session_waste
from gateway.store.rows import llm_calls


def _call(row: Any) -> CacheCall:
    ttl = row.cache_ttl if row.cache_ttl in ("5m", "1h") else None
    return CacheCall(
        at=row.created_at.timestamp(),
        model=row.model,
        input_tokens=int(row.input_tokens),
        cache_read_tokens=int(row.cache_read_tokens),
        cache_write_tokens=int(row.cache_creation_tokens),
        ttl=ttl,
        refresh=row.purpose == "keepalive",
    )


async def cache_waste(conn: AsyncConnection, *, chat_pk: int | None, now: datetime) -> CacheWaste:
    """Waste of the reply calls of `chat_pk` (None: every chat), judged as of `now`."""
    statement = (
        select(
            llm_calls.c.session_pk,
            llm_calls.c.created_at,
            llm_calls.c.model,
            llm_calls.c.input_tokens,
            llm_calls.c.cache_read_tokens,
            llm_calls.c.cache_creation_tokens,
            llm_calls.c.cache_ttl,
            llm_calls.c.purpose,
        )
        .where(llm_calls.c.purpose.in_(("reply", "keepalive")))
        .order_by(llm_calls.c.session_pk, llm_calls.c.created_at, llm_calls.c.id)
    )
    if chat_pk is not None:
        statement = statement.where(llm_calls.c.chat_pk == chat_pk)
    rows = (await conn.execute(statement)).all()
    total = CacheWaste()
    for _, session_rows in groupby(rows, key=lambda r: r.session_pk):
        total += session_waste((_call(r) for r in session_rows), now=now.timestamp())
    return total

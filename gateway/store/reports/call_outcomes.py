"""What the model declined, what the API dropped and what it looked up, for `/stats`: refusals by
category, the thinking blocks the API's prefix check dropped, and the web searches and fetches its own
tools ran, for one chat or every chat."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.rows import llm_calls


@dataclass(frozen=True, slots=True)
class CallOutcomes:
    refusals: dict[str, int] = field(default_factory=dict)
    """Category -> how many replies the model declined."""
    thinking_dropped: int = 0
    """Thinking blocks the API dropped because their prefix had changed (each one a binding the gateway
    got wrong: it leaves such blocks out itself)."""
    web_searches: int = 0
    web_fetches: int = 0


async def call_outcomes(conn: AsyncConnection, *, chat_pk: int | None) -> CallOutcomes:
    scope = [llm_calls.c.chat_pk == chat_pk] if chat_pk is not None else []
    refusals = await conn.execute(
        select(llm_calls.c.refusal, func.count())
        .where(llm_calls.c.refusal.is_not(None), *scope)
        .group_by(llm_calls.c.refusal)
    )
    sums = (
        await conn.execute(
            select(
                func.coalesce(func.sum(llm_calls.c.thinking_dropped), 0),
                func.coalesce(func.sum(llm_calls.c.web_searches), 0),
                func.coalesce(func.sum(llm_calls.c.web_fetches), 0),
            ).where(*scope)
        )
    ).one()
    return CallOutcomes(
        refusals={str(c): int(n) for c, n in refusals},
        thinking_dropped=int(sums[0]),
        web_searches=int(sums[1]),
        web_fetches=int(sums[2]),
    )

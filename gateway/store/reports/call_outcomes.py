"""What the model declined and what the API dropped, for `/stats`: refusals by category and the thinking
blocks the API's prefix check dropped, for one chat or every chat."""

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


async def call_outcomes(conn: AsyncConnection, *, chat_pk: int | None) -> CallOutcomes:
    scope = [llm_calls.c.chat_pk == chat_pk] if chat_pk is not None else []
    refusals = await conn.execute(
        select(llm_calls.c.refusal, func.count())
        .where(llm_calls.c.refusal.is_not(None), *scope)
        .group_by(llm_calls.c.refusal)
    )
    dropped = (
        await conn.execute(select(func.coalesce(func.sum(llm_calls.c.thinking_dropped), 0)).where(*scope))
    ).scalar_one()
    return CallOutcomes(refusals={str(c): int(n) for c, n in refusals}, thinking_dropped=int(dropped))

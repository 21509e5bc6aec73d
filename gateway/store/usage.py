"""Recording LLM usage: the llm_calls row and, for replies, the session's hygiene reference.

After a 'reply' call the session remembers the API-reported prompt size and the last message that
request included; hygiene then needs only that number plus the estimates of messages stored since.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.records import CallRecord
from gateway.store.rows import llm_calls, messages, sessions
from gateway.store.window import WINDOW_STATES


async def record_call(
    conn: AsyncConnection,
    session_pk: int,
    chat_pk: int,
    call: CallRecord,
    *,
    now: datetime,
    last_message_id: int | None,
    engine_state: dict[str, Any] | None,
) -> None:
    await conn.execute(
        llm_calls.insert().values(
            chat_pk=chat_pk,
            session_pk=session_pk,
            model=call.model,
            purpose=call.purpose,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            cache_creation_tokens=call.cache_creation_tokens,
            cache_read_tokens=call.cache_read_tokens,
            latency_ms=call.latency_ms,
            cost_usd=float(call.cost_usd),
            cache_ttl=call.cache_ttl,
            created_at=now,
        )
    )
    if call.purpose != "reply":
        if engine_state is not None:
            await conn.execute(
                update(sessions).where(sessions.c.id == session_pk).values(engine_state=engine_state)
            )
        return
    # Lock the session row before counting what arrived since the call: a message being stored right
    # now adds its tokens to tokens_since_call in its own transaction; counted after its commit, or
    # added after this one, it is never lost (an absolute value computed first would overwrite it).
    await conn.execute(select(sessions.c.id).where(sessions.c.id == session_pk).with_for_update())
    since = 0
    if last_message_id is not None:
        # Messages stored after the one the call ended with (they arrived during the turn).
        since = (
            await conn.execute(
                select(func.coalesce(func.sum(messages.c.token_estimate), 0)).where(
                    messages.c.session_pk == session_pk,
                    messages.c.state.in_(WINDOW_STATES),
                    messages.c.id > last_message_id,
                )
            )
        ).scalar_one()
    values: dict[str, Any] = {
        "last_prompt_tokens": call.prompt_tokens,
        "last_call_message_id": last_message_id,
        "last_call_at": now,
        "tokens_since_call": int(since),
    }
    if engine_state is not None:
        values["engine_state"] = engine_state
    await conn.execute(update(sessions).where(sessions.c.id == session_pk).values(**values))

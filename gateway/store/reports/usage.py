"""Recording LLM usage: the llm_calls row and, for replies, the session's hygiene reference.

After a 'reply' call the session remembers the API-reported prompt size and the last message that
request included; hygiene then needs only that number plus the estimates of messages stored since.
`Store` mixes in `UsageMethods`: a call's usage, a keep-alive refresh with the cache state it leaves,
or that cache state alone, each in one transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.cache.looks import save_cache_state
from gateway.store.db import StoreBase
from gateway.store.messages.window import WINDOW_STATES
from gateway.store.records import CallRecord
from gateway.store.rows import llm_calls, messages, sessions


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
            refusal=call.refusal,
            thinking_dropped=call.thinking_dropped,
            web_searches=call.web_searches,
            web_fetches=call.web_fetches,
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


class UsageMethods(StoreBase):
    """Mixed into `Store`; `StoreBase` provides the transaction, the dialect's insert and the clock."""

    async def record_call(
        self,
        session_pk: int,
        chat_pk: int,
        call: CallRecord,
        *,
        last_message_id: int | None = None,
        engine_state: dict[str, Any] | None = None,
    ) -> None:
        """Insert the usage row; a 'reply' call also becomes the session's reference for hygiene."""
        async with self._tx("record_call") as conn:
            await record_call(
                conn,
                session_pk,
                chat_pk,
                call,
                now=self.now(),
                last_message_id=last_message_id,
                engine_state=engine_state,
            )

    async def save_cache_state(self, session_pk: int, cache_state: dict[str, Any]) -> None:
        """The session's cache state alone (a keep-alive decision that sent nothing)."""
        async with self._tx("save_cache_state") as conn:
            await save_cache_state(conn, session_pk, cache_state, now=self.now())

    async def record_refresh(
        self, session_pk: int, chat_pk: int, call: CallRecord, cache_state: dict[str, Any]
    ) -> None:
        """A keep-alive refresh of the session's prompt cache: its usage row and the cache state after it,
        in one transaction (the session's hygiene reference is a reply's and stays as it is)."""
        async with self._tx("record_refresh") as conn:
            await record_call(
                conn, session_pk, chat_pk, call, now=self.now(), last_message_id=None, engine_state=None
            )
            await save_cache_state(conn, session_pk, cache_state, now=self.now())

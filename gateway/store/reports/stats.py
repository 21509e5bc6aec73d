"""Read-only aggregates for `/stats`: one chat in detail, or all chats at a glance."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import StoreError
from gateway.store.records import BusyChat, ChatStats, GlobalStats, UsageTotals
from gateway.store.rows import (
    AnySelect,
    chats,
    compactions,
    llm_calls,
    messages,
    sessions,
    to_compaction,
    to_session,
)


def _usage_columns(source: Any) -> AnySelect:
    return select(
        func.count(),
        func.coalesce(func.sum(source.c.input_tokens), 0),
        func.coalesce(func.sum(source.c.output_tokens), 0),
        func.coalesce(func.sum(source.c.cache_creation_tokens), 0),
        func.coalesce(func.sum(source.c.cache_read_tokens), 0),
        func.coalesce(func.sum(source.c.cost_usd), 0.0),
    )


async def _usage(conn: AsyncConnection, statement: AnySelect) -> UsageTotals:
    row = (await conn.execute(statement)).one()
    return UsageTotals(
        calls=int(row[0]),
        input_tokens=int(row[1]),
        output_tokens=int(row[2]),
        cache_creation_tokens=int(row[3]),
        cache_read_tokens=int(row[4]),
        cost_usd=float(row[5]),
    )


async def chat_stats(conn: AsyncConnection, chat_pk: int, *, recent_calls: int) -> ChatStats:
    session = (
        await conn.execute(select(sessions).where(sessions.c.chat_pk == chat_pk, sessions.c.active))
    ).one_or_none()
    if session is None:
        raise StoreError(f"chat {chat_pk} has no active session")
    archived = (
        await conn.execute(
            select(func.count()).where(messages.c.chat_pk == chat_pk, messages.c.state == "archived")
        )
    ).scalar_one()
    total = await _usage(conn, _usage_columns(llm_calls).where(llm_calls.c.chat_pk == chat_pk))
    recent = (
        select(llm_calls)
        .where(llm_calls.c.chat_pk == chat_pk)
        .order_by(llm_calls.c.created_at.desc(), llm_calls.c.id.desc())
        .limit(recent_calls)
        .subquery()
    )
    recent_usage = await _usage(conn, _usage_columns(recent))
    by_kind = await conn.execute(
        select(compactions.c.trigger, compactions.c.outcome, func.count())
        .where(compactions.c.chat_pk == chat_pk)
        .group_by(compactions.c.trigger, compactions.c.outcome)
    )
    last = (
        await conn.execute(
            select(compactions)
            .where(compactions.c.chat_pk == chat_pk)
            .order_by(compactions.c.id.desc())
            .limit(1)
        )
    ).one_or_none()
    return ChatStats(
        chat_pk=chat_pk,
        session_pk=session.id,
        active_messages=session.active_message_count,
        archived_messages=int(archived),
        active_tokens=session.active_tokens,
        last_prompt_tokens=session.last_prompt_tokens,
        tokens_since_call=session.tokens_since_call,
        context_tokens=to_session(session).context_tokens(),
        engine_state=dict(session.engine_state or {}),
        usage_total=total,
        usage_recent=recent_usage,
        compactions={(r.trigger, r.outcome): int(r[2]) for r in by_kind},
        last_compaction=to_compaction(last) if last is not None else None,
    )


async def global_stats(conn: AsyncConnection, *, top: int) -> GlobalStats:
    async def count(statement: AnySelect) -> int:
        return int((await conn.execute(statement)).scalar_one())

    usage = await _usage(conn, _usage_columns(llm_calls))
    per_chat = select(messages.c.chat_pk, func.count().label("n")).group_by(messages.c.chat_pk).subquery()
    cost = (
        select(llm_calls.c.chat_pk, func.sum(llm_calls.c.cost_usd).label("cost"))
        .group_by(llm_calls.c.chat_pk)
        .subquery()
    )
    busiest = await conn.execute(
        select(
            chats.c.id,
            chats.c.platform,
            chats.c.chat_id,
            chats.c.title,
            per_chat.c.n,
            func.coalesce(cost.c.cost, 0.0),
        )
        .join(per_chat, per_chat.c.chat_pk == chats.c.id)
        .outerjoin(cost, cost.c.chat_pk == chats.c.id)
        .order_by(per_chat.c.n.desc(), chats.c.id)
        .limit(top)
    )
    return GlobalStats(
        chats=await count(select(func.count()).select_from(chats)),
        sessions=await count(select(func.count()).select_from(sessions)),
        messages=await count(select(func.count()).select_from(messages)),
        archived_messages=await count(select(func.count()).where(messages.c.state == "archived")),
        compactions=await count(select(func.count()).select_from(compactions)),
        usage=usage,
        busiest=[
            BusyChat(
                chat_pk=r[0],
                platform=r[1],
                chat_id=r[2],
                title=r[3],
                messages=int(r[4]),
                cost_usd=float(r[5]),
            )
            for r in busiest
        ],
    )

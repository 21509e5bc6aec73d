"""Drill-down: the stored messages behind a compaction summary, page by page, oldest first.

A compaction archives the messages it removes (`messages.archived_by`) and records its summary's id
(`compactions.summary_message_id`). A later compaction of the same session folds the earlier summary
into its own, so a summary stands for every message archived in its session by that compaction and
the ones before it. Tool results and the earlier summaries themselves are left out.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from agent.tools.recall_types import Excerpt, OriginalsPage
from gateway.store.rows import compactions, messages, sessions
from gateway.store.search.hits import chat_sessions

PAGE_SIZE = 20
CLIP_CHARS = 600


async def current_summary_id(conn: AsyncConnection, chat_pk: int) -> int | None:
    """The summary message in the chat's current window, if there is one."""
    return (
        await conn.execute(
            select(messages.c.id)
            .join(sessions, sessions.c.id == messages.c.session_pk)
            .where(sessions.c.chat_pk == chat_pk, sessions.c.active, messages.c.state == "summary")
            .order_by(messages.c.seq.desc(), messages.c.id.desc())
            .limit(1)
        )
    ).scalar_one_or_none()


def _clip(row: Any, clip: int) -> Excerpt:
    text = row.text if len(row.text) <= clip else row.text[:clip].rstrip() + "…"
    return Excerpt(
        message_id=row.id,
        role=row.role,
        author_name=row.author_name,
        created_at=row.created_at,
        text=text,
        offset=0,
        total_chars=len(row.text),
    )


async def summary_originals(
    conn: AsyncConnection,
    chat_pk: int,
    summary_id: int | None,
    *,
    page: int = 1,
    page_size: int = PAGE_SIZE,
    after: datetime | None = None,
    before: datetime | None = None,
    clip: int = CLIP_CHARS,
) -> OriginalsPage | None:
    """One page of what summary `summary_id` (default: the current one) replaced; None when the chat
    has no such summary in effect."""
    if summary_id is None:
        summary_id = await current_summary_id(conn, chat_pk)
        if summary_id is None:
            return None
    target = (
        await conn.execute(
            select(compactions.c.id, compactions.c.session_pk).where(
                compactions.c.chat_pk == chat_pk,
                compactions.c.summary_message_id == summary_id,
                ~compactions.c.undone,
            )
        )
    ).one_or_none()
    if target is None:
        return None
    chain = (
        await conn.execute(
            select(compactions.c.id, compactions.c.summary_message_id).where(
                compactions.c.session_pk == target.session_pk,
                compactions.c.id <= target.id,
                ~compactions.c.undone,
                compactions.c.outcome != "aborted",
            )
        )
    ).all()
    summaries = [int(c.summary_message_id) for c in chain if c.summary_message_id is not None]
    conditions = [
        messages.c.session_pk == target.session_pk,
        messages.c.state == "archived",
        messages.c.archived_by.in_([int(c.id) for c in chain]),
        messages.c.id.not_in(summaries),
        messages.c.author_id.is_distinct_from("tool"),
        messages.c.text != "",
    ]
    if after is not None:
        conditions.append(messages.c.created_at >= after)
    if before is not None:
        conditions.append(messages.c.created_at < before)
    where = and_(*conditions)
    total = int((await conn.execute(select(func.count()).select_from(messages).where(where))).scalar_one())
    pages = max(1, math.ceil(total / page_size))
    rows = await conn.execute(
        select(
            messages.c.id,
            messages.c.role,
            messages.c.author_name,
            messages.c.created_at,
            messages.c.text,
        )
        .where(where)
        .order_by(messages.c.seq, messages.c.id)
        .offset((page - 1) * page_size)
        .limit(page_size)
    )
    infos = await chat_sessions(conn, chat_pk)
    return OriginalsPage(
        summary_id=summary_id,
        session=infos[target.session_pk],
        page=page,
        pages=pages,
        total=total,
        parts=sum(1 for c in chain if c.summary_message_id is not None),
        messages=[_clip(r, clip) for r in rows],
    )

"""Appending messages to a session: row values, the session's counters, and where rows sort.

Every append (a platform message on the hot path, a turn's replies and tool results) updates the
session's counters with `counter_values`; a turn's messages go right after the messages they answer,
at seqs from `gateway.store.messages.window.seqs_between` (as a compaction's summary does). Each
function takes an open connection; `Store` owns the transactions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import StoreError
from gateway.store.messages.window import SEQ_STEP, seqs_between
from gateway.store.records import AppendResult, NewMessage, StoredMessage
from gateway.store.rows import clean_json, clean_text, messages, sessions, to_message

AUTHOR_NAME_MAX = 256
"""Length of `messages.author_name`."""

InsertFn = Callable[[Any], Any]


class RedeliveredDuringAppend(Exception):
    """Another transaction stored the same platform message first; retry to return its row."""


def counter_values(count: Any, tokens: Any, now: Any) -> dict[str, Any]:
    """The session-row update for `count` new messages weighing `tokens` (values or bind parameters)."""
    return {
        "next_seq": sessions.c.next_seq + SEQ_STEP * count,
        "active_message_count": sessions.c.active_message_count + count,
        "active_tokens": sessions.c.active_tokens + tokens,
        "tokens_since_call": sessions.c.tokens_since_call + tokens,
        "last_activity_at": now,
    }


def message_values(session_pk: int, chat_pk: int, seq: int, m: NewMessage, now: datetime) -> dict[str, Any]:
    if m.role not in ("user", "assistant"):
        raise StoreError(f"message role must be 'user' or 'assistant', got {m.role!r}")
    return {
        "session_pk": session_pk,
        "chat_pk": chat_pk,
        "seq": seq,
        "role": m.role,
        "content": clean_json(m.content),
        "text": clean_text(m.text),
        "author_id": m.author_id,
        # Bounded to the column (a platform may send longer names than it documents).
        "author_name": clean_text(m.author_name)[:AUTHOR_NAME_MAX] if m.author_name else m.author_name,
        "platform_message_id": m.platform_message_id,
        "token_estimate": max(0, m.token_estimate),
        "state": "active",
        "pruned": False,
        "needs_reply": m.needs_reply,
        "replied": False,
        "created_at": m.created_at or now,
    }


async def _placement(conn: AsyncConnection, session_pk: int, after_id: int, count: int) -> list[int] | None:
    """Seqs for `count` rows right after message `after_id`, or None when nothing follows it."""
    after_seq = (
        await conn.execute(
            select(messages.c.seq).where(messages.c.id == after_id, messages.c.session_pk == session_pk)
        )
    ).scalar_one_or_none()
    if after_seq is None:
        raise StoreError(f"message {after_id} is not in session {session_pk}")
    next_seq = (
        await conn.execute(
            select(func.min(messages.c.seq)).where(
                messages.c.session_pk == session_pk, messages.c.seq > after_seq
            )
        )
    ).scalar_one_or_none()
    if next_seq is None:
        return None
    return await seqs_between(conn, session_pk, int(after_seq), int(next_seq), count)


async def _existing(
    conn: AsyncConnection, chat_pk: int, batch: Sequence[NewMessage]
) -> dict[str | None, StoredMessage]:
    ids = [m.platform_message_id for m in batch if m.platform_message_id is not None]
    if not ids:
        return {}
    rows = await conn.execute(
        select(messages).where(messages.c.chat_pk == chat_pk, messages.c.platform_message_id.in_(ids))
    )
    return {row.platform_message_id: to_message(row) for row in rows}


async def append_batch(
    conn: AsyncConnection,
    insert: InsertFn,
    session_pk: int,
    batch: Sequence[NewMessage],
    *,
    after_id: int | None,
    now: datetime,
) -> list[AppendResult]:
    """Store `batch` in order (after message `after_id` when given) and count it on the session row.

    Raises RedeliveredDuringAppend when a platform message id was stored concurrently (retry).
    """
    chat_pk = (
        await conn.execute(select(sessions.c.chat_pk).where(sessions.c.id == session_pk))
    ).scalar_one_or_none()
    if chat_pk is None:
        raise StoreError(f"no session with id {session_pk}")
    existing = await _existing(conn, chat_pk, batch)
    fresh = [m for m in batch if m.platform_message_id not in existing]
    seq = 0
    if fresh:
        tokens = sum(max(0, m.token_estimate) for m in fresh)
        bumped = await conn.execute(
            update(sessions)
            .where(sessions.c.id == session_pk)
            .values(**counter_values(len(fresh), tokens, now))
            .returning(sessions.c.next_seq)
        )
        seq = int(bumped.scalar_one()) - SEQ_STEP * len(fresh)
    placed = await _placement(conn, session_pk, after_id, len(fresh)) if after_id and fresh else None
    results: list[AppendResult] = []
    for m in batch:
        if m.platform_message_id in existing:
            results.append(AppendResult(existing[m.platform_message_id], created=False))
            continue
        row_seq = placed.pop(0) if placed else seq
        row = (
            await conn.execute(
                insert(messages)
                .values(**message_values(session_pk, chat_pk, row_seq, m, now))
                .on_conflict_do_nothing()
                .returning(*messages.c)
            )
        ).one_or_none()
        if row is None:
            raise RedeliveredDuringAppend
        results.append(AppendResult(to_message(row), created=True))
        seq += SEQ_STEP
    return results

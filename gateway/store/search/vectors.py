"""Stored embeddings: which messages still need one, saving them, and reading a chat's back.

Only messages of the full-text index get a vector (what people and the assistant said), so semantic
and keyword ranking cover the same messages. A vector is float32, unit length, one per message; a
message embedded by another model counts as not embedded yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, exists, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.rows import messages
from gateway.store.search.scope import Scope, dates_sql, window_ids_sql
from gateway.store.tables import MessageVector

message_vectors = cast(Table, MessageVector.__table__)


@dataclass(frozen=True, slots=True)
class PendingText:
    message_id: int
    chat_pk: int
    text: str


@dataclass(frozen=True, slots=True)
class NewVector:
    message_id: int
    chat_pk: int
    vector: bytes
    """float32 values, little-endian, unit length."""
    dims: int


def _indexed_sql(dialect: str, id_column: str) -> str:
    """SQL true when the message `id_column` is in the full-text index."""
    if dialect == "postgresql":
        return f"EXISTS (SELECT 1 FROM search_docs d WHERE d.message_id = {id_column})"  # noqa: S608
    return f"EXISTS (SELECT 1 FROM search_words w WHERE w.rowid = {id_column})"  # noqa: S608


async def pending(
    conn: AsyncConnection, dialect: str, *, after_id: int, model: str, limit: int, max_chars: int
) -> list[PendingText]:
    """Indexed messages after `after_id` with no vector from `model`, oldest first."""
    embedded = exists().where(message_vectors.c.message_id == messages.c.id, message_vectors.c.model == model)
    rows = await conn.execute(
        select(messages.c.id, messages.c.chat_pk, func.substr(messages.c.text, 1, max_chars).label("text"))
        .where(messages.c.id > after_id, text(_indexed_sql(dialect, "messages.id")), ~embedded)
        .order_by(messages.c.id)
        .limit(limit)
    )
    return [PendingText(r.id, r.chat_pk, r.text) for r in rows]


async def last_message_id(conn: AsyncConnection) -> int:
    return int((await conn.execute(select(func.coalesce(func.max(messages.c.id), 0)))).scalar_one())


async def last_embedded_id(conn: AsyncConnection, model: str) -> int | None:
    value = (
        await conn.execute(
            select(func.max(message_vectors.c.message_id)).where(message_vectors.c.model == model)
        )
    ).scalar_one_or_none()
    return None if value is None else int(value)


async def save(
    conn: AsyncConnection, insert: Any, model: str, items: Sequence[NewVector], now: datetime
) -> None:
    """Insert or replace the vectors; rows whose message was deleted meanwhile are skipped."""
    if not items:
        return
    ids = [v.message_id for v in items]
    alive = set((await conn.execute(select(messages.c.id).where(messages.c.id.in_(ids)))).scalars())
    values = [
        {
            "message_id": v.message_id,
            "chat_pk": v.chat_pk,
            "model": model,
            "dims": v.dims,
            "vector": v.vector,
            "created_at": now,
        }
        for v in items
        if v.message_id in alive
    ]
    if not values:
        return
    statement = insert(message_vectors)
    statement = statement.on_conflict_do_update(
        index_elements=["message_id"],
        set_={
            "model": statement.excluded.model,
            "dims": statement.excluded.dims,
            "vector": statement.excluded.vector,
            "created_at": statement.excluded.created_at,
        },
    )
    await conn.execute(statement, values)


async def chat_vectors(
    conn: AsyncConnection, chat_pk: int, *, model: str, after_id: int, limit: int
) -> list[tuple[int, float, bytes]]:
    """(message id, its time as POSIX seconds, vector) of the chat's messages after `after_id`, in id
    order (the time lets the semantic side keep to a query's dates before it ranks)."""
    rows = await conn.execute(
        select(message_vectors.c.message_id, messages.c.created_at, message_vectors.c.vector)
        .join(messages, messages.c.id == message_vectors.c.message_id)
        .where(
            message_vectors.c.chat_pk == chat_pk,
            message_vectors.c.message_id > after_id,
            message_vectors.c.model == model,
        )
        .order_by(message_vectors.c.message_id)
        .limit(limit)
    )
    return [(int(r.message_id), r.created_at.timestamp(), bytes(r.vector)) for r in rows]


async def backlog(conn: AsyncConnection, dialect: str, *, after_id: int, scope: Scope | None = None) -> int:
    """Indexed messages after `after_id` (the embedding worker's watermark) not embedded yet; with a
    `scope`, only those a recall search in it could return."""
    where = f"m.id > :after_id AND {_indexed_sql(dialect, 'm.id')}"
    params: dict[str, Any] = {"after_id": after_id}
    binds: list[Any] = []
    if scope is not None:
        dates, binds = dates_sql("m.created_at", scope.after, scope.before)
        where += f" AND m.chat_pk = :chat AND m.id NOT IN ({window_ids_sql()}){dates}"
        params.update({"chat": scope.chat_pk, "shown_below": scope.shown_below})
    statement = text(f"SELECT count(*) FROM messages m WHERE {where}").bindparams(*binds)  # noqa: S608 - constants
    return int((await conn.execute(statement, params)).scalar_one())


async def questions_to_bot(conn: AsyncConnection, ids: Sequence[int]) -> set[int]:
    """Which of `ids` are questions people asked the bot (addressed to it, ending in a question mark)."""
    if not ids:
        return set()
    asked = func.rtrim(messages.c.text)
    rows = await conn.execute(
        select(messages.c.id).where(
            messages.c.id.in_(list(ids)),
            messages.c.needs_reply.is_(True),
            messages.c.role == "user",
            asked.like("%?") | asked.like("%？"),
        )
    )
    return {int(i) for i in rows.scalars()}

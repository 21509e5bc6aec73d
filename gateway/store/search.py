"""Search in one chat's archive: what compactions removed from the window, never another chat's rows.

Matching is case-insensitive on every word of the query (LIKE on lower(text)); SQLite's own lower()
only folds ASCII, so `gateway.store.db` replaces it with Python's on each connection.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.records import ArchiveHit, Role
from gateway.store.rows import messages

MAX_WORDS = 8
EXCERPT_CHARS = 240


def _like_pattern(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def excerpt(text: str, words: list[str], width: int = EXCERPT_CHARS) -> str:
    """About `width` characters of `text` around the first matching word, with ellipses where cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    hits = [i for i in (lowered.find(w) for w in words) if i >= 0]
    centre = min(hits) if hits else 0
    start = max(0, min(centre - width // 3, len(flat) - width))
    end = start + width
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


async def search_archive(conn: AsyncConnection, chat_pk: int, query: str, *, limit: int) -> list[ArchiveHit]:
    words = [w for w in query.lower().split() if w][:MAX_WORDS]
    if not words or limit <= 0:
        return []
    statement = select(
        messages.c.id, messages.c.role, messages.c.author_name, messages.c.created_at, messages.c.text
    ).where(messages.c.chat_pk == chat_pk, messages.c.state == "archived")
    for word in words:
        statement = statement.where(func.lower(messages.c.text).like(_like_pattern(word), escape="\\"))
    rows = await conn.execute(statement.order_by(messages.c.id.desc()).limit(limit))
    return [
        ArchiveHit(
            message_id=row.id,
            role=cast(Role, row.role),
            author_name=row.author_name,
            created_at=row.created_at,
            excerpt=excerpt(row.text, words),
        )
        for row in rows
    ]

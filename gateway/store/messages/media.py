"""Media storage: content-addressed per chat, read back only within the chat that owns it.

`put` is idempotent on (chat, sha256): a redelivered update or the same screenshot sent twice stores
the bytes once (and marks them used again). Messages refer to media through `message_media`, written in
the message's own transaction (`hotpath.store_incoming`), so a stored message never lacks its links.
Retention deletes media that no remaining message refers to and that nobody used within the retention
period (a row re-sent a moment ago is never deleted under the message about to link it).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, delete, exists, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.store.db import translate_errors
from gateway.store.messages.window import mark_pruned, recount
from gateway.store.rows import sessions
from gateway.store.tables import Media, MessageMedia

media = cast(Table, Media.__table__)
message_media = cast(Table, MessageMedia.__table__)

FILENAME_MAX = 256
DELETE_BATCH = 500


@dataclass(frozen=True, slots=True)
class NewMedia:
    kind: str
    """"image", "document" or "audio" (a voice note: never sent to the model, its transcript is)."""
    media_type: str
    data: bytes
    tokens: int
    width: int | None = None
    height: int | None = None
    pages: int | None = None
    filename: str | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True, slots=True)
class MediaInfo:
    """A stored item without its bytes."""

    id: int
    chat_pk: int
    sha256: str
    kind: str
    media_type: str
    byte_size: int
    width: int | None
    height: int | None
    pages: int | None
    tokens: int
    filename: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class MediaItem:
    info: MediaInfo
    data: bytes


_INFO_COLUMNS = [c for c in media.c if c.name not in ("data", "last_used_at")]


def _info(row: Any) -> MediaInfo:
    return MediaInfo(
        id=row.id,
        chat_pk=row.chat_pk,
        sha256=row.sha256,
        kind=row.kind,
        media_type=row.media_type,
        byte_size=row.byte_size,
        width=row.width,
        height=row.height,
        pages=row.pages,
        tokens=row.tokens,
        filename=row.filename,
        created_at=row.created_at,
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


class MediaStore:
    """Async access to the `media` table; every method is one transaction."""

    def __init__(self, engine: AsyncEngine, *, clock: Callable[[], datetime] = _utc_now) -> None:
        self._engine = engine
        self._clock = clock
        self._insert = pg_insert if engine.dialect.name == "postgresql" else sqlite_insert

    @asynccontextmanager
    async def _tx(self, operation: str) -> AsyncIterator[AsyncConnection]:
        with translate_errors(operation):
            async with self._engine.begin() as conn:
                yield conn

    async def put(self, chat_pk: int, item: NewMedia) -> MediaInfo:
        """Store `item` for the chat unless the same bytes are already there; the stored row either way."""
        now = self._clock()
        digest = item.sha256
        filename = item.filename[:FILENAME_MAX] if item.filename else None
        async with self._tx("put_media") as conn:
            stmt = self._insert(media).values(
                chat_pk=chat_pk,
                sha256=digest,
                kind=item.kind,
                media_type=item.media_type,
                data=item.data,
                byte_size=len(item.data),
                width=item.width,
                height=item.height,
                pages=item.pages,
                tokens=item.tokens,
                filename=filename,
                created_at=now,
                last_used_at=now,
            )
            # DO UPDATE (not NOTHING) marks a known row used now: retention only deletes rows unused for
            # the whole retention period, so it cannot take one before the message that links it lands.
            stmt = stmt.on_conflict_do_update(
                index_elements=["chat_pk", "sha256"], set_={"last_used_at": now}
            )
            row = (await conn.execute(stmt.returning(*_INFO_COLUMNS))).one()
            return _info(row)

    async def get(self, chat_pk: int, media_id: int) -> MediaItem | None:
        """One item with its bytes, only if it belongs to `chat_pk`."""
        async with self._tx("get_media") as conn:
            row = (
                await conn.execute(select(media).where(media.c.id == media_id, media.c.chat_pk == chat_pk))
            ).one_or_none()
        return None if row is None else MediaItem(_info(row), bytes(row.data))

    async def info(self, chat_pk: int, media_id: int) -> MediaInfo | None:
        """One item's description (no bytes), only if it belongs to `chat_pk`."""
        async with self._tx("media_info") as conn:
            row = (
                await conn.execute(
                    select(*_INFO_COLUMNS).where(media.c.id == media_id, media.c.chat_pk == chat_pk)
                )
            ).one_or_none()
        return None if row is None else _info(row)

    async def get_many(self, chat_pk: int, media_ids: Sequence[int]) -> dict[int, MediaItem]:
        """Items by id (those of other chats, or deleted, are simply absent)."""
        if not media_ids:
            return {}
        async with self._tx("get_media") as conn:
            rows = await conn.execute(
                select(media).where(media.c.chat_pk == chat_pk, media.c.id.in_(sorted(set(media_ids))))
            )
            return {row.id: MediaItem(_info(row), bytes(row.data)) for row in rows}

    async def get_by_ids(self, media_ids: Sequence[int]) -> dict[int, MediaItem]:
        """Items by id whatever their chat: only for rendering references a chat's own messages hold."""
        if not media_ids:
            return {}
        async with self._tx("get_media") as conn:
            rows = await conn.execute(select(media).where(media.c.id.in_(sorted(set(media_ids)))))
            return {row.id: MediaItem(_info(row), bytes(row.data)) for row in rows}

    async def for_message(self, message_id: int) -> list[MediaInfo]:
        """The media a stored message carries, in order."""
        async with self._tx("media_for_message") as conn:
            rows = await conn.execute(
                select(*_INFO_COLUMNS)
                .join(message_media, message_media.c.media_id == media.c.id)
                .where(message_media.c.message_id == message_id)
                .order_by(message_media.c.position)
            )
            return [_info(row) for row in rows]

    async def ids(self, chat_pk: int) -> set[int]:
        """Ids of every item the chat holds."""
        async with self._tx("media_ids") as conn:
            rows = await conn.execute(select(media.c.id).where(media.c.chat_pk == chat_pk))
            return {int(row.id) for row in rows}

    async def count(self, chat_pk: int) -> int:
        async with self._tx("count_media") as conn:
            query = select(func.count()).select_from(media).where(media.c.chat_pk == chat_pk)
            total = await conn.scalar(query)
            return int(total or 0)

    async def delete_unreferenced(self, unused_since: datetime) -> int:
        """Delete up to DELETE_BATCH media no message refers to and unused since `unused_since`."""
        return await delete_unreferenced(self._engine, unused_since)

    async def demote(self, session_pk: int, message_ids: Sequence[int]) -> list[int]:
        """Stop sending the media of these window rows as images (they stay stored and viewable)."""
        async with self._tx("demote_media") as conn:
            return await demote_in(conn, session_pk, message_ids)

    async def touch(self, media_ids: Sequence[int]) -> None:
        """Mark media as used now (e.g. when a tool shows one again)."""
        if not media_ids:
            return
        async with self._tx("touch_media") as conn:
            await conn.execute(
                update(media).where(media.c.id.in_(list(media_ids))).values(last_used_at=self._clock())
            )


async def delete_unreferenced(engine: AsyncEngine, unused_since: datetime) -> int:
    with translate_errors("delete_unreferenced_media"):
        async with engine.begin() as conn:
            return await delete_unreferenced_in(conn, unused_since)


async def delete_unreferenced_in(conn: AsyncConnection, unused_since: datetime) -> int:
    """One batch of orphan deletion inside an open transaction; returns how many rows went."""
    linked = exists().where(message_media.c.media_id == media.c.id)
    ids = (
        select(media.c.id)
        .where(~linked, media.c.last_used_at < unused_since)
        .limit(DELETE_BATCH)
        .scalar_subquery()
    )
    result = await conn.execute(delete(media).where(media.c.id.in_(ids), ~linked))
    return int(result.rowcount or 0)


async def demote_in(conn: AsyncConnection, session_pk: int, message_ids: Sequence[int]) -> list[int]:
    """Mark window rows so their media no longer travel with requests; the session's window estimate
    follows (a pruned row weighs its short stand-in). Returns the ids that changed."""
    changed = await mark_pruned(conn, session_pk, message_ids)
    if changed:
        _, tokens = await recount(conn, session_pk)
        await conn.execute(update(sessions).where(sessions.c.id == session_pk).values(active_tokens=tokens))
    return changed


def link_rows(message_id: int, media_ids: Sequence[int]) -> list[dict[str, int]]:
    """`message_media` rows for a message's media, in order."""
    return [{"message_id": message_id, "position": i, "media_id": m} for i, m in enumerate(media_ids)]

"""The session repository: chats, sessions and their messages. Every public method is one transaction.

Race safety comes from the database, not from Python: chats and active sessions are created with
INSERT .. ON CONFLICT DO NOTHING followed by a SELECT, and appends serialise on the session row through
`UPDATE sessions SET next_seq = next_seq + step .. RETURNING`. Driver errors leave as
`DatabaseUnavailableError` (cannot reach the database) or `StoreError` (the database refused).
`Store` mixes in the methods kept next to their queries, each on `StoreBase` (`db`): pins (`pins/`),
model usage (`reports/usage`), cache looks (`cache/`), compactions (`compaction/`), reply deliveries
(`deliveries/`), recall (`search/recall_store`), the jobs' queries (`jobs/`), reports (`reports/`) and
transcripts (`messages/transcripts`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.errors import StoreError
from gateway.store.cache.looks import CacheLookMethods, save_cache_state
from gateway.store.compaction.apply import CompactionMethods
from gateway.store.db import Clock, create_engine, dialect_of, utc_now
from gateway.store.deliveries.reply_parts import DeliveryMethods, DeliveryRecord, NewReply, insert_reply
from gateway.store.jobs.queries import JobMethods
from gateway.store.messages import appends as _appends
from gateway.store.messages import incoming as _hot
from gateway.store.messages import receipts as _receipts
from gateway.store.messages.transcripts import TranscriptMethods
from gateway.store.messages.window import SEQ_STEP, window_query
from gateway.store.pins.chat_pins import PinMethods
from gateway.store.records import (
    AppendResult,
    CallRecord,
    ChatRecord,
    CompactionApply,
    CompactionRecord,
    NewMessage,
    NewSummary,
    PromptPins,
    SessionRecord,
    StoredMessage,
    TurnSnapshot,
)
from gateway.store.reminders.ledger import ReminderMethods
from gateway.store.reports.reporting import ReportingMethods
from gateway.store.reports.usage import UsageMethods
from gateway.store.rows import (
    chats,
    clean_text,
    messages,
    sessions,
    to_chat,
    to_message,
    to_session,
)
from gateway.store.search.recall_store import RecallMethods

__all__ = [
    "AppendResult",
    "CallRecord",
    "ChatRecord",
    "CompactionApply",
    "CompactionRecord",
    "NewMessage",
    "NewSummary",
    "SessionRecord",
    "Store",
    "StoredMessage",
]

logger = logging.getLogger(__name__)


class Store(
    PinMethods,
    UsageMethods,
    CompactionMethods,
    RecallMethods,
    DeliveryMethods,
    ReportingMethods,
    JobMethods,
    CacheLookMethods,
    TranscriptMethods,
    ReminderMethods,
):
    """Async access to chats, sessions, messages, compactions and LLM usage."""

    def __init__(self, engine: AsyncEngine, *, clock: Clock = utc_now) -> None:
        super().__init__(engine, clock=clock)
        self.on_stored: Callable[[str, int], None] | None = None
        """Called after a commit with (role, count) of newly stored messages (for metrics)."""
        self._chats: dict[tuple[str, str, str], ChatRecord] = {}
        """Chat rows by (platform, chat_id, thread_id): they never change but for their title."""

    @classmethod
    async def open(
        cls, database_url: str, *, pool_size: int = 5, max_overflow: int = 10, clock: Clock = utc_now
    ) -> Store:
        """Create the engine and check that the database answers (raises DatabaseUnavailableError)."""
        engine = create_engine(database_url, pool_size=pool_size, max_overflow=max_overflow)
        store = cls(engine, clock=clock)
        try:
            await store.ping()
        except BaseException:
            await engine.dispose()
            raise
        logger.info("store opened (%s)", dialect_of(database_url))
        return store

    async def close(self) -> None:
        await self._engine.dispose()

    async def ping(self) -> None:
        async with self._tx("ping") as conn:
            await conn.execute(text("SELECT 1"))

    async def claim_command(self, chat_pk: int, platform_message_id: str) -> bool:
        """True the first time a command update is seen in the chat; False for a redelivery."""
        async with self._tx("claim_command") as conn:
            return await _receipts.claim(conn, self._insert, chat_pk, platform_message_id, self.now())

    # Chats and sessions -------------------------------------------------------------------------

    async def get_or_create_chat(
        self, platform: str, chat_id: str, thread_id: str | None = None, *, kind: str, title: str | None
    ) -> ChatRecord:
        """The chat row for (platform, chat_id, thread_id); concurrent callers get the same row."""
        thread = thread_id or ""
        async with self._tx("get_or_create_chat") as conn:
            await conn.execute(
                self._insert(chats)
                .values(
                    platform=platform,
                    chat_id=chat_id,
                    thread_id=thread,
                    kind=kind,
                    title=clean_text(title) if title else title,
                    created_at=self.now(),
                )
                .on_conflict_do_nothing()
            )
            row = (
                await conn.execute(
                    select(chats).where(
                        chats.c.platform == platform, chats.c.chat_id == chat_id, chats.c.thread_id == thread
                    )
                )
            ).one()
            if title and row.title != title:
                await conn.execute(update(chats).where(chats.c.id == row.id).values(title=clean_text(title)))
                row = (await conn.execute(select(chats).where(chats.c.id == row.id))).one()
            return to_chat(row)

    async def chat_for(
        self, platform: str, chat_id: str, thread_id: str | None = None, *, kind: str, title: str | None
    ) -> ChatRecord:
        """`get_or_create_chat` answered from this process's memory while the title is unchanged."""
        key = (platform, chat_id, thread_id or "")
        cached = self._chats.get(key)
        if cached is not None and (not title or cached.title == title):
            return cached
        chat = await self.get_or_create_chat(platform, chat_id, thread_id, kind=kind, title=title)
        if len(self._chats) >= _hot.CHAT_CACHE_MAX:
            self._chats.clear()
        self._chats[key] = chat
        return chat

    async def get_chat(self, chat_pk: int) -> ChatRecord | None:
        async with self._tx("get_chat") as conn:
            row = (await conn.execute(select(chats).where(chats.c.id == chat_pk))).one_or_none()
        return None if row is None else to_chat(row)

    def _new_session_values(self, chat_pk: int) -> dict[str, Any]:
        return {
            "chat_pk": chat_pk,
            "active": True,
            "created_at": self.now(),
            "next_seq": SEQ_STEP,
            "active_message_count": 0,
            "active_tokens": 0,
            "tokens_since_call": 0,
            "compaction_count": 0,
            "engine_state": {},
            "cache_state": {},
        }

    async def active_session(self, chat_pk: int) -> SessionRecord:
        """The chat's active session, created if there is none (race-safe)."""
        async with self._tx("active_session") as conn:
            query = select(sessions).where(sessions.c.chat_pk == chat_pk, sessions.c.active)
            row = (await conn.execute(query)).one_or_none()
            if row is None:
                await conn.execute(
                    self._insert(sessions)
                    .values(**self._new_session_values(chat_pk))
                    .on_conflict_do_nothing(index_elements=["chat_pk"], index_where=sessions.c.active)
                )
                row = (await conn.execute(query)).one()
            return to_session(row)

    async def store_incoming(self, chat_pk: int, message: NewMessage) -> tuple[SessionRecord, AppendResult]:
        """Append one message to the chat's active session (created if there is none) in one transaction.

        A platform message id the chat already holds changes nothing and returns the stored row.
        """
        try:
            async with self._tx("store_incoming") as conn:
                session, row = await _hot.store_incoming(
                    conn,
                    self._insert,
                    chat_pk,
                    lambda session_pk, seq: _appends.message_values(
                        session_pk, chat_pk, seq, message, self.now()
                    ),
                    message,
                    new_session=self._new_session_values(chat_pk),
                    now=self.now(),
                )
        except _hot.DuplicateDelivery as duplicate:
            async with self._tx("store_incoming") as conn:
                existing = await _hot.stored_duplicate(conn, chat_pk, message.platform_message_id)
                session_row = await _hot.active_session_row(
                    conn, self._insert, chat_pk, self._new_session_values(chat_pk)
                )
            if existing is None:
                raise StoreError(
                    f"message {message.platform_message_id} conflicted but is not stored"
                ) from duplicate
            return to_session(session_row), AppendResult(existing, created=False)
        if self.on_stored is not None:
            self.on_stored(message.role, 1)
        return session, AppendResult(row, created=True)

    async def turn_snapshot(self, chat_pk: int) -> TurnSnapshot:
        """The active session and its window rows, in one transaction."""
        async with self._tx("turn_snapshot") as conn:
            return await _hot.turn_snapshot(conn, self._insert, chat_pk, self._new_session_values(chat_pk))

    async def new_session(self, chat_pk: int) -> SessionRecord:
        """End the chat's active session (kept, inactive) and start a fresh one."""
        async with self._tx("new_session") as conn:
            # Lock the chat row so two concurrent `/new` commands run one after the other.
            await conn.execute(select(chats.c.id).where(chats.c.id == chat_pk).with_for_update())
            await conn.execute(
                update(sessions)
                .where(sessions.c.chat_pk == chat_pk, sessions.c.active)
                .values(active=False, ended_at=self.now())
            )
            row = (
                await conn.execute(
                    sessions.insert().values(**self._new_session_values(chat_pk)).returning(*sessions.c)
                )
            ).one()
            return to_session(row)

    async def get_session(self, session_pk: int) -> SessionRecord:
        async with self._tx("get_session") as conn:
            row = (await conn.execute(select(sessions).where(sessions.c.id == session_pk))).one_or_none()
        if row is None:
            raise StoreError(f"no session with id {session_pk}")
        return to_session(row)

    # Messages -----------------------------------------------------------------------------------

    async def append_messages(
        self, session_pk: int, batch: Sequence[NewMessage], *, after_id: int | None = None
    ) -> list[AppendResult]:
        """Store several messages of one session in order, in one transaction with the counters.

        With `after_id`, the batch is placed right after that message even if newer messages exist (a
        turn's reply goes after the messages it answered, before those that arrived while it ran).
        """
        if not batch:
            return []
        try:
            results = await self._append(session_pk, batch, after_id)
        except _appends.RedeliveredDuringAppend:
            logger.debug("concurrent redelivery in session %s; retrying append", session_pk)
            results = await self._append(session_pk, batch, after_id)
        if self.on_stored is not None:
            for role in ("user", "assistant"):
                created = sum(1 for r in results if r.created and r.message.role == role)
                if created:
                    self.on_stored(role, created)
        return results

    async def _append(
        self, session_pk: int, batch: Sequence[NewMessage], after_id: int | None
    ) -> list[AppendResult]:
        async with self._tx("append_messages") as conn:
            return await _appends.append_batch(
                conn, self._insert, session_pk, batch, after_id=after_id, now=self.now()
            )

    async def freeze_prompt_pins(self, session_pk: int, pins: Sequence[str]) -> None:
        """From now until its prefix is rewritten (a compaction), the session's system prompt carries
        `pins`; later changes are told in notes (`tell_pins`)."""
        frozen = PromptPins(tuple(pins), tuple(pins)).to_json()
        async with self._tx("freeze_prompt_pins") as conn:
            await conn.execute(update(sessions).where(sessions.c.id == session_pk).values(prompt_pins=frozen))

    async def tell_pins(
        self, session_pk: int, note: NewMessage, *, after_id: int | None, pins: PromptPins
    ) -> list[AppendResult]:
        """Append the note telling the model the chat's pins changed, and remember what it was told, in
        one transaction."""
        async with self._tx("tell_pins") as conn:
            results = await _appends.append_batch(
                conn, self._insert, session_pk, [note], after_id=after_id, now=self.now()
            )
            await conn.execute(
                update(sessions).where(sessions.c.id == session_pk).values(prompt_pins=pins.to_json())
            )
        return results

    async def load_window(self, session_pk: int) -> list[StoredMessage]:
        """The session's active and summary rows in order (archived rows are not read)."""
        async with self._tx("load_window") as conn:
            return [to_message(row) for row in await conn.execute(window_query(session_pk))]

    async def get_message(self, chat_pk: int, message_id: int) -> StoredMessage | None:
        """One message by id, only if it belongs to this chat (any state; for the recall tool)."""
        async with self._tx("get_message") as conn:
            row = (
                await conn.execute(
                    select(messages).where(messages.c.id == message_id, messages.c.chat_pk == chat_pk)
                )
            ).one_or_none()
        return None if row is None else to_message(row)

    async def original_message(self, chat_pk: int, platform_message_id: str) -> StoredMessage | None:
        """The stored message with this platform id in this chat, in any session and any state
        (active, archived by a compaction, or from before `/new`); for one of the bot's own platform
        messages, the stored reply it carried (its delivery record); never another chat's."""
        async with self._tx("original_message") as conn:
            row = (
                await conn.execute(
                    select(messages)
                    .where(
                        messages.c.chat_pk == chat_pk, messages.c.platform_message_id == platform_message_id
                    )
                    .order_by(messages.c.id.desc())
                    .limit(1)
                )
            ).one_or_none()
        if row is not None:
            return to_message(row)
        return await self.reply_for_platform_message(chat_pk, platform_message_id)

    async def mark_replied(self, message_ids: Sequence[int]) -> None:
        if not message_ids:
            return
        async with self._tx("mark_replied") as conn:
            await conn.execute(update(messages).where(messages.c.id.in_(message_ids)).values(replied=True))

    async def finish_turn(
        self,
        session_pk: int,
        replied_ids: Sequence[int],
        cache_state: dict[str, Any],
        *,
        reply: NewReply | None = None,
    ) -> list[DeliveryRecord]:
        """End a turn in one transaction: its messages are answered, the reply's parts recorded for
        delivery and the session's cache state saved."""
        async with self._tx("finish_turn") as conn:
            records = await insert_reply(conn, reply, self.now()) if reply is not None else []
            if replied_ids:
                await conn.execute(
                    update(messages).where(messages.c.id.in_(replied_ids)).values(replied=True)
                )
            await save_cache_state(conn, session_pk, cache_state, now=self.now())
        return records

    async def unanswered(self, max_age: timedelta | None = None) -> list[StoredMessage]:
        """User messages that asked for a reply and never got one, oldest first (crash recovery)."""
        query = select(messages).where(messages.c.needs_reply, ~messages.c.replied, messages.c.role == "user")
        if max_age is not None:
            query = query.where(messages.c.created_at >= self.now() - max_age)
        async with self._tx("unanswered") as conn:
            rows = await conn.execute(query.order_by(messages.c.created_at, messages.c.id))
            return [to_message(row) for row in rows]

"""The per-message queries, folded into as few round trips as possible.

`store_incoming` finds (or creates) the chat's active session and appends one message in one
transaction; `turn_snapshot` reads everything a turn starts from (session row and window rows) in
one. Both stay O(1) in archived history: they touch the session row and the window index only.
Each function takes an open connection; `Store` owns the transactions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Row, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.messages.appends import counter_values
from gateway.store.messages.media import link_rows, message_media
from gateway.store.messages.window import SEQ_STEP, WINDOW_STATES
from gateway.store.pins.chat_pins import pin_texts
from gateway.store.records import NewMessage, SessionRecord, StoredMessage, TurnSnapshot
from gateway.store.rows import messages, sessions, to_message, to_session

CHAT_CACHE_MAX = 100_000
"""Chat rows `Store.chat_for` keeps in memory per process (the cache starts over when full)."""

InsertFn = Callable[[Any], Any]
"""The dialect's `insert` (ON CONFLICT support differs between Postgres and SQLite)."""


# Built once: constructing a statement and its cache key costs more CPU than running it.
_BUMP = (
    update(sessions)
    .where(sessions.c.chat_pk == bindparam("b_chat_pk"), sessions.c.active)
    .values(**counter_values(1, bindparam("b_tokens"), bindparam("b_now")))
    .returning(*sessions.c)
)
_ACTIVE_SESSION = select(sessions).where(sessions.c.chat_pk == bindparam("b_chat_pk"), sessions.c.active)
_ACTIVE_SESSION_SHARED = _ACTIVE_SESSION.with_for_update(read=True)
"""The session row under a share lock (Postgres `FOR SHARE`): a message being stored waits for the reader
to finish, and a message already counted in the row is committed before the reader goes on."""
_WINDOW = (
    select(messages)
    .where(messages.c.session_pk == bindparam("b_session_pk"), messages.c.state.in_(WINDOW_STATES))
    .order_by(messages.c.seq, messages.c.id)
)
_inserts: dict[InsertFn, Any] = {}


def _insert_message(insert: InsertFn) -> Any:
    stmt = _inserts.get(insert)
    if stmt is None:
        stmt = _inserts[insert] = insert(messages).on_conflict_do_nothing().returning(*messages.c)
    return stmt


class DuplicateDelivery(Exception):
    """The platform message is already stored in this chat: the transaction must roll back."""


async def _ensure_session(
    conn: AsyncConnection, insert: InsertFn, chat_pk: int, new_values: dict[str, Any]
) -> None:
    await conn.execute(
        insert(sessions)
        .values(**new_values)
        .on_conflict_do_nothing(index_elements=["chat_pk"], index_where=sessions.c.active)
    )


async def store_incoming(
    conn: AsyncConnection,
    insert: InsertFn,
    chat_pk: int,
    values: Callable[[int, int], dict[str, Any]],
    message: NewMessage,
    *,
    new_session: dict[str, Any],
    now: Any,
) -> tuple[SessionRecord, StoredMessage]:
    """Bump the active session's counters (creating it if needed) and insert the message.

    `values(session_pk, seq)` gives the message row. Raises DuplicateDelivery when the chat already
    holds the platform message id (the caller rolls back, so the counters stay as they were).
    """
    bump = {"b_chat_pk": chat_pk, "b_tokens": max(0, message.token_estimate), "b_now": now}
    row = (await conn.execute(_BUMP, bump)).one_or_none()
    if row is None:
        await _ensure_session(conn, insert, chat_pk, new_session)
        row = (await conn.execute(_BUMP, bump)).one()
    session = to_session(row)
    row_values = values(session.id, int(row.next_seq) - SEQ_STEP)
    inserted = (await conn.execute(_insert_message(insert), row_values)).one_or_none()
    if inserted is None:
        raise DuplicateDelivery(message.platform_message_id)
    if message.media_ids:
        await conn.execute(message_media.insert(), link_rows(inserted.id, message.media_ids))
    return session, to_message(inserted)


async def stored_duplicate(
    conn: AsyncConnection, chat_pk: int, platform_message_id: str | None
) -> StoredMessage | None:
    """The row a redelivered platform message already has in this chat."""
    row = (
        await conn.execute(
            select(messages).where(
                messages.c.chat_pk == chat_pk, messages.c.platform_message_id == platform_message_id
            )
        )
    ).one_or_none()
    return None if row is None else to_message(row)


async def active_session_row(
    conn: AsyncConnection,
    insert: InsertFn,
    chat_pk: int,
    new_session: dict[str, Any],
    *,
    shared: bool = False,
) -> Row[Any]:
    """The chat's active session row (created if needed); `shared` holds a share lock on it until the
    transaction ends."""
    params = {"b_chat_pk": chat_pk}
    statement = _ACTIVE_SESSION_SHARED if shared else _ACTIVE_SESSION
    row = (await conn.execute(statement, params)).one_or_none()
    if row is None:
        await _ensure_session(conn, insert, chat_pk, new_session)
        row = (await conn.execute(statement, params)).one()
    return row


async def turn_snapshot(
    conn: AsyncConnection, insert: InsertFn, chat_pk: int, new_session: dict[str, Any]
) -> TurnSnapshot:
    """The active session (created if needed) and its window rows, consistent with each other: the
    session row is read under a share lock, so its counters (tokens since the last call) count exactly
    the messages the window query then returns. Without it, on Postgres a message committed between the
    two reads was in the rows but not in the counters."""
    row = await active_session_row(conn, insert, chat_pk, new_session, shared=True)
    rows = [to_message(r) for r in await conn.execute(_WINDOW, {"b_session_pk": row.id})]
    return TurnSnapshot(session=to_session(row), rows=rows, pins=await pin_texts(conn, chat_pk))

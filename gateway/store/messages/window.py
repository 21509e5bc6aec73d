"""The active window of a session: which rows it holds, how they are ordered, what they weigh.

Ordering: rows sort by (seq, id). Appends take `seq` from the session's `next_seq` in steps of
`SEQ_STEP`, leaving gaps so a compaction's summary row can be given a seq strictly between the last
kept head row and the first kept tail row (the midpoint). Only if a gap is used up (many compactions at
the same boundary) are the tail rows shifted up by one step, inside the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import case, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import StoreError
from gateway.store.rows import AnySelect, messages, sessions

SEQ_STEP = 1024
WINDOW_STATES = ("active", "summary")
PRUNED_TOKEN_ESTIMATE = 20
"""What a pruned tool output weighs in the window (the short placeholder replaces it)."""


def window_query(session_pk: int) -> AnySelect:
    """Active and summary rows of one session in window order; served by ix_messages_window."""
    return (
        select(messages)
        .where(messages.c.session_pk == session_pk, messages.c.state.in_(WINDOW_STATES))
        .order_by(messages.c.seq, messages.c.id)
    )


async def recount(conn: AsyncConnection, session_pk: int) -> tuple[int, int]:
    """(message count, token estimate) of the window, with pruned rows at their placeholder weight."""
    # Two-argument min() is SQLite's scalar minimum; Postgres calls it least().
    smaller = func.least if conn.dialect.name == "postgresql" else func.min
    weight = case(
        (messages.c.pruned, smaller(messages.c.token_estimate, PRUNED_TOKEN_ESTIMATE)),
        else_=messages.c.token_estimate,
    )
    row = (
        await conn.execute(
            select(func.count(), func.coalesce(func.sum(weight), 0)).where(
                messages.c.session_pk == session_pk, messages.c.state.in_(WINDOW_STATES)
            )
        )
    ).one()
    return int(row[0]), int(row[1])


async def seq_before(conn: AsyncConnection, session_pk: int, tail_id: int) -> int:
    """A seq that sorts after every window row before `tail_id` and before `tail_id` itself."""
    tail = (
        await conn.execute(
            select(messages.c.seq).where(
                messages.c.id == tail_id,
                messages.c.session_pk == session_pk,
                messages.c.state.in_(WINDOW_STATES),
            )
        )
    ).one_or_none()
    if tail is None:
        raise StoreError(f"message {tail_id} is not in the window of session {session_pk}")
    tail_seq = int(tail.seq)
    before = (
        await conn.execute(
            select(func.max(messages.c.seq)).where(
                messages.c.session_pk == session_pk,
                messages.c.state.in_(WINDOW_STATES),
                tuple_(messages.c.seq, messages.c.id) < tuple_(tail_seq, tail_id),
            )
        )
    ).scalar_one()
    prev_seq = tail_seq - SEQ_STEP if before is None else int(before)
    (seq,) = await seqs_between(conn, session_pk, prev_seq, tail_seq, 1)
    return seq


async def seqs_between(conn: AsyncConnection, session_pk: int, low: int, high: int, count: int) -> list[int]:
    """`count` seqs strictly between `low` and `high`, evenly spread. When the gap is used up, every row
    from `high` on (any state) moves up first, with the session's `next_seq`."""
    if high - low <= count:
        shift = SEQ_STEP * (count + 1)
        await conn.execute(
            update(messages)
            .where(messages.c.session_pk == session_pk, messages.c.seq >= high)
            .values(seq=messages.c.seq + shift)
        )
        await conn.execute(
            update(sessions).where(sessions.c.id == session_pk).values(next_seq=sessions.c.next_seq + shift)
        )
        high += shift
    gap = high - low
    return [low + (gap * (k + 1)) // (count + 1) for k in range(count)]


async def mark_pruned(conn: AsyncConnection, session_pk: int, message_ids: Sequence[int]) -> list[int]:
    """Mark window rows `pruned` (old tool output cleared, old media no longer attached); returns the
    ids that changed. The row stays whole in the database; requests show a short stand-in."""
    if not message_ids:
        return []
    result = await conn.execute(
        update(messages)
        .where(
            messages.c.id.in_(sorted(set(message_ids))),
            messages.c.session_pk == session_pk,
            messages.c.state.in_(WINDOW_STATES),
            ~messages.c.pruned,
        )
        .values(pruned=True)
        .returning(messages.c.id)
    )
    return sorted(int(i) for i in result.scalars())

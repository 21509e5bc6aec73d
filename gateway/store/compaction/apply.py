"""Applying and undoing a compaction inside one transaction.

Apply: insert the compaction row, archive the removed rows (state 'archived', archived_by), mark newly
pruned rows, insert the summary row between head and tail, recount the window into the session row.
Undo reverses the latest compaction still in effect, using what its row remembered. The functions run
in the caller's transaction; `Store` mixes in `CompactionMethods`, which opens one for each.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import Row, case, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.errors import NothingToUndoError, StoreError
from gateway.store.db import StoreBase
from gateway.store.messages.window import SEQ_STEP, WINDOW_STATES, mark_pruned, recount, seq_before
from gateway.store.records import OUTCOMES, TRIGGERS, CompactionApply, CompactionRecord, Outcome, Trigger
from gateway.store.rows import clean_json, clean_text, compactions, messages, sessions, to_compaction

logger = logging.getLogger(__name__)


def _check_kind(trigger: str, outcome: str) -> None:
    if trigger not in TRIGGERS:
        raise StoreError(f"compaction trigger must be one of {sorted(TRIGGERS)}, got {trigger!r}")
    if outcome not in OUTCOMES:
        raise StoreError(f"compaction outcome must be one of {sorted(OUTCOMES)}, got {outcome!r}")


async def _lock_session(conn: AsyncConnection, session_pk: int) -> Row[Any]:
    row = (
        await conn.execute(select(sessions).where(sessions.c.id == session_pk).with_for_update())
    ).one_or_none()
    if row is None:
        raise StoreError(f"no session with id {session_pk}")
    return row


async def _insert_compaction(conn: AsyncConnection, values: dict[str, Any]) -> int:
    return int(
        (await conn.execute(compactions.insert().values(**values).returning(compactions.c.id))).scalar_one()
    )


async def _fetch(conn: AsyncConnection, compaction_id: int) -> CompactionRecord:
    row = (await conn.execute(select(compactions).where(compactions.c.id == compaction_id))).one()
    return to_compaction(row)


async def apply(
    conn: AsyncConnection, session_pk: int, change: CompactionApply, now: datetime
) -> CompactionRecord:
    _check_kind(change.trigger, change.outcome)
    if change.outcome == "aborted":
        raise StoreError("an aborted compaction changes nothing; use record_compaction_attempt")
    session = await _lock_session(conn, session_pk)
    removed = sorted(set(change.removed_ids))
    compaction_id = await _insert_compaction(conn, _compaction_values(session, change, now, len(removed)))
    await _archive(conn, session_pk, compaction_id, removed)
    pruned = await mark_pruned(conn, session_pk, change.pruned_ids)
    summary_id = await _insert_summary(conn, session, change, now)
    count, tokens = await _recount_session(conn, session, change)
    await conn.execute(
        update(compactions)
        .where(compactions.c.id == compaction_id)
        .values(summary_message_id=summary_id, pruned_ids=pruned)
    )
    logger.info(
        "compaction %s of session %s: %s, archived %d, pruned %d, window %d messages / %d tokens",
        compaction_id,
        session_pk,
        change.outcome,
        len(removed),
        len(pruned),
        count,
        tokens,
    )
    return await _fetch(conn, compaction_id)


def _compaction_values(
    session: Row[Any], change: CompactionApply, now: datetime, archived: int
) -> dict[str, Any]:
    return {
        "session_pk": session.id,
        "chat_pk": session.chat_pk,
        "trigger": change.trigger,
        "outcome": change.outcome,
        "reason": clean_text(change.reason),
        "tokens_before": change.tokens_before,
        "tokens_after": change.tokens_after,
        "messages_before": change.messages_before,
        "messages_after": change.messages_after,
        "summarizer_model": change.summarizer_model,
        "duration_ms": change.duration_ms,
        "error": clean_text(change.error) if change.error else change.error,
        "created_at": now,
        "undone": False,
        "archived_count": archived,
        "prev_engine_state": dict(session.engine_state or {}),
        "prev_rolling_summary": session.rolling_summary,
        "prev_active_tokens": session.active_tokens,
        "pruned_ids": [],
    }


async def _archive(conn: AsyncConnection, session_pk: int, compaction_id: int, removed: list[int]) -> None:
    if not removed:
        return
    archived = await conn.execute(
        update(messages)
        .where(
            messages.c.id.in_(removed),
            messages.c.session_pk == session_pk,
            messages.c.state.in_(WINDOW_STATES),
        )
        .values(state="archived", archived_by=compaction_id)
    )
    if archived.rowcount != len(removed):
        # The plan was made on a window that has changed since (e.g. another compaction ran).
        raise StoreError(
            f"compaction of session {session_pk}: {len(removed) - archived.rowcount} of "
            f"{len(removed)} messages are no longer in the window"
        )


async def _insert_summary(
    conn: AsyncConnection, session: Row[Any], change: CompactionApply, now: datetime
) -> int | None:
    """The summary row, sorted just before the first kept tail message (or after everything)."""
    if change.summary is None:
        return None
    if change.insert_summary_before_id is not None:
        seq = await seq_before(conn, session.id, change.insert_summary_before_id)
    else:
        bumped = await conn.execute(
            update(sessions)
            .where(sessions.c.id == session.id)
            .values(next_seq=sessions.c.next_seq + SEQ_STEP)
            .returning(sessions.c.next_seq)
        )
        seq = int(bumped.scalar_one()) - SEQ_STEP
    inserted = await conn.execute(
        messages.insert()
        .values(
            session_pk=session.id,
            chat_pk=session.chat_pk,
            seq=seq,
            role=change.summary.role,
            content=clean_json(change.summary.content),
            text=clean_text(change.summary.text),
            token_estimate=max(0, change.summary.token_estimate),
            state="summary",
            pruned=False,
            needs_reply=False,
            replied=False,
            created_at=now,
        )
        .returning(messages.c.id)
    )
    return int(inserted.scalar_one())


async def _recount_session(
    conn: AsyncConnection, session: Row[Any], change: CompactionApply
) -> tuple[int, int]:
    """Recount the window into the session row; until the next call reports a size, estimates rule."""
    count, tokens = await recount(conn, session.id)
    if change.rolling_summary is not None:
        rolling = change.rolling_summary
    elif change.summary is not None:
        rolling = change.summary.text
    else:
        rolling = session.rolling_summary
    await conn.execute(
        update(sessions)
        .where(sessions.c.id == session.id)
        .values(
            active_message_count=count,
            active_tokens=tokens,
            last_prompt_tokens=None,
            tokens_since_call=0,
            compaction_count=sessions.c.compaction_count + 1,
            rolling_summary=clean_text(rolling) if rolling else rolling,
            prompt_pins=None,  # the prefix is rewritten: the prompt takes the chat's pins again
            engine_state=change.engine_state if change.engine_state is not None else session.engine_state,
        )
    )
    return count, tokens


async def record_attempt(
    conn: AsyncConnection,
    session_pk: int,
    *,
    now: datetime,
    trigger: str,
    outcome: str,
    reason: str,
    tokens_before: int,
    messages_before: int,
    summarizer_model: str | None,
    duration_ms: int,
    error: str | None,
    engine_state: dict[str, Any] | None,
) -> CompactionRecord:
    _check_kind(trigger, outcome)
    session = await _lock_session(conn, session_pk)
    compaction_id = await _insert_compaction(
        conn,
        {
            "session_pk": session_pk,
            "chat_pk": session.chat_pk,
            "trigger": trigger,
            "outcome": outcome,
            "reason": clean_text(reason),
            "tokens_before": tokens_before,
            "tokens_after": tokens_before,
            "messages_before": messages_before,
            "messages_after": messages_before,
            "summary_message_id": None,
            "summarizer_model": summarizer_model,
            "duration_ms": duration_ms,
            "error": clean_text(error) if error else error,
            "created_at": now,
            "undone": False,
            "archived_count": 0,
            "prev_engine_state": dict(session.engine_state or {}),
            "prev_rolling_summary": session.rolling_summary,
            "prev_active_tokens": session.active_tokens,
            "pruned_ids": [],
        },
    )
    if engine_state is not None:
        await conn.execute(
            update(sessions).where(sessions.c.id == session_pk).values(engine_state=engine_state)
        )
    return await _fetch(conn, compaction_id)


async def undo_last(conn: AsyncConnection, session_pk: int) -> CompactionRecord:
    session = await _lock_session(conn, session_pk)
    rows = await conn.execute(
        select(compactions)
        .where(
            compactions.c.session_pk == session_pk,
            ~compactions.c.undone,
            compactions.c.outcome != "aborted",
        )
        .order_by(compactions.c.id.desc())
    )
    target = next(
        (r for r in rows if r.archived_count or r.summary_message_id is not None or r.pruned_ids),
        None,
    )
    if target is None:
        raise NothingToUndoError(f"session {session_pk} has no compaction to undo")
    # Rows it archived come back; a summary of an earlier compaction comes back as a summary.
    earlier_summaries = select(compactions.c.summary_message_id).where(
        compactions.c.session_pk == session_pk, compactions.c.summary_message_id.is_not(None)
    )
    await conn.execute(
        update(messages)
        .where(messages.c.archived_by == target.id)
        .values(
            state=case((messages.c.id.in_(earlier_summaries), "summary"), else_="active"),
            archived_by=None,
        )
    )
    if target.pruned_ids:
        await conn.execute(
            update(messages).where(messages.c.id.in_(list(target.pruned_ids))).values(pruned=False)
        )
    if target.summary_message_id is not None:
        await conn.execute(
            update(messages).where(messages.c.id == target.summary_message_id).values(state="reverted")
        )
    await conn.execute(update(compactions).where(compactions.c.id == target.id).values(undone=True))
    count, tokens = await recount(conn, session_pk)
    await conn.execute(
        update(sessions)
        .where(sessions.c.id == session_pk)
        .values(
            active_message_count=count,
            active_tokens=tokens,
            last_prompt_tokens=None,
            tokens_since_call=0,
            compaction_count=max(0, session.compaction_count - 1),
            rolling_summary=target.prev_rolling_summary,
            prompt_pins=None,
            engine_state=dict(target.prev_engine_state or {}),
        )
    )
    logger.info("compaction %s of session %s undone; window %d messages", target.id, session_pk, count)
    return await _fetch(conn, target.id)


class CompactionMethods(StoreBase):
    """Mixed into `Store`; `StoreBase` provides the transaction, the dialect's insert and the clock."""

    async def apply_compaction(self, session_pk: int, change: CompactionApply) -> CompactionRecord:
        """Archive, prune, insert the summary and update the counters: all or nothing."""
        async with self._tx("apply_compaction") as conn:
            return await apply(conn, session_pk, change, self.now())

    async def record_compaction_attempt(
        self,
        session_pk: int,
        *,
        trigger: Trigger | str,
        outcome: Outcome | str,
        reason: str,
        tokens_before: int = 0,
        messages_before: int = 0,
        summarizer_model: str | None = None,
        duration_ms: int = 0,
        error: str | None = None,
        engine_state: dict[str, Any] | None = None,
    ) -> CompactionRecord:
        """Record a compaction that changed nothing (aborted, or nothing worth removing).

        The window is untouched; `engine_state`, if given, is saved (e.g. a failure counter).
        """
        async with self._tx("record_compaction_attempt") as conn:
            return await record_attempt(
                conn,
                session_pk,
                now=self.now(),
                trigger=trigger,
                outcome=outcome,
                reason=reason,
                tokens_before=tokens_before,
                messages_before=messages_before,
                summarizer_model=summarizer_model,
                duration_ms=duration_ms,
                error=error,
                engine_state=engine_state,
            )

    async def undo_last_compaction(self, session_pk: int) -> CompactionRecord:
        """Restore the window as it was before the last compaction still in effect."""
        async with self._tx("undo_last_compaction") as conn:
            return await undo_last(conn, session_pk)

"""Compaction is one transaction: archive + summary + counters, and undo restores exactly."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, select

from gateway.errors import NothingToUndoError, StoreError
from gateway.store import CompactionApply, NewSummary, Store
from gateway.store.rows import compactions, messages
from tests.gateway.store.helpers import append_one

from .helpers import fill, msg, new_chat


def plan(
    removed: list[int],
    tail_first: int | None,
    *,
    text: str = "SUMMARY",
    pruned: list[int] | None = None,
    state: dict[str, Any] | None = None,
) -> CompactionApply:
    return CompactionApply(
        trigger="hygiene",
        outcome="ok",
        reason="test",
        removed_ids=removed,
        pruned_ids=pruned or [],
        summary=NewSummary(role="user", content=text, text=text, token_estimate=5),
        insert_summary_before_id=tail_first,
        tokens_before=100,
        tokens_after=40,
        messages_before=10,
        messages_after=5,
        summarizer_model="claude-haiku-4-5",
        duration_ms=12,
        engine_state=state or {"compressions": 1},
        rolling_summary=text,
    )


async def snapshot(store: Store, session_pk: int) -> tuple[Any, ...]:
    """Everything a compaction may touch, for before/after comparisons."""
    async with store.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(
                    messages.c.id, messages.c.seq, messages.c.state, messages.c.pruned, messages.c.archived_by
                )
                .where(messages.c.session_pk == session_pk)
                .order_by(messages.c.id)
            )
        ).all()
        n_compactions = len((await conn.execute(select(compactions.c.id))).all())
    return (await store.get_session(session_pk), tuple(rows), n_compactions)


async def test_summary_sorts_between_head_and_tail(store: Store) -> None:
    _, session = await new_chat(store)
    ids = await fill(store, session, 10)
    head, middle, tail = ids[:2], ids[2:7], ids[7:]

    record = await store.apply_compaction(session, plan(middle, tail[0]))

    window = await store.load_window(session)
    assert [m.id for m in window[:2]] == head
    assert window[2].state == "summary"
    assert window[2].text == "SUMMARY"
    assert [m.id for m in window[3:]] == tail
    assert record.summary_message_id == window[2].id
    assert record.archived_count == 5
    hygiene = await store.get_session(session)
    assert hygiene.active_message_count == 6
    assert hygiene.active_tokens == 5 * 10 + 5
    assert hygiene.last_prompt_tokens is None
    session_row = await store.get_session(session)
    assert session_row.compaction_count == 1
    assert session_row.rolling_summary == "SUMMARY"
    assert session_row.engine_state == {"compressions": 1}

    # Later messages still sort after the tail.
    await append_one(store, session, msg("after"))
    assert (await store.load_window(session))[-1].text == "after"


async def test_repeated_compaction_at_one_boundary_keeps_order(store: Store) -> None:
    """Each new summary replaces the previous one at the same place, far past the initial seq gap."""
    _, session = await new_chat(store)
    ids = await fill(store, session, 6)
    head, tail_first = ids[0], ids[3]
    await store.apply_compaction(session, plan(ids[1:3], tail_first, text="S0"))
    for i in range(1, 13):
        window = await store.load_window(session)
        previous_summary = [m.id for m in window if m.state == "summary"]
        await store.apply_compaction(session, plan(previous_summary, tail_first, text=f"S{i}"))
    window = await store.load_window(session)
    assert [m.text for m in window] == ["m0", "S12", "m3", "m4", "m5"]
    assert window[0].id == head


async def test_gap_exhaustion_shifts_the_tail(store: Store) -> None:
    _, session = await new_chat(store)
    ids = await fill(store, session, 4)
    tail_seq = (await store.load_window(session))[2].seq
    # Keep every summary (remove nothing) so each one narrows the gap before the tail.
    for i in range(12):
        await store.apply_compaction(session, plan([], ids[2], text=f"S{i}"))
    window = await store.load_window(session)
    assert [m.text for m in window] == ["m0", "m1", *[f"S{i}" for i in range(12)], "m2", "m3"]
    assert window[-2].seq > tail_seq  # the tail was shifted once the gap ran out
    await append_one(store, session, msg("last"))
    assert (await store.load_window(session))[-1].text == "last"


async def test_failure_mid_transaction_leaves_session_untouched(store: Store) -> None:
    _, session = await new_chat(store)
    ids = await fill(store, session, 10)
    before = await snapshot(store, session)

    def fail_on_summary_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # By now the compaction row exists and the middle has been archived in this transaction.
        if statement.lstrip().upper().startswith("INSERT INTO MESSAGES"):
            raise RuntimeError("injected failure")

    event.listen(store.engine.sync_engine, "before_cursor_execute", fail_on_summary_insert)
    try:
        with pytest.raises(RuntimeError, match="injected"):
            await store.apply_compaction(session, plan(ids[2:7], ids[7], pruned=[ids[8]]))
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", fail_on_summary_insert)

    assert await snapshot(store, session) == before
    assert [m.id for m in await store.load_window(session)] == ids


async def test_stale_plan_is_rejected_whole(store: Store) -> None:
    _, s1 = await new_chat(store, "1")
    _, s2 = await new_chat(store, "2")
    ids = await fill(store, s1, 6)
    foreign = await fill(store, s2, 2)
    before = await snapshot(store, s1)
    with pytest.raises(StoreError):
        await store.apply_compaction(s1, plan([*ids[1:3], foreign[0]], ids[3]))
    assert await snapshot(store, s1) == before


async def test_undo_restores_window_and_counters(store: Store) -> None:
    _, session = await new_chat(store)
    ids = await fill(store, session, 10)
    original = await store.load_window(session)
    before = await store.get_session(session)

    await store.apply_compaction(session, plan(ids[2:7], ids[7], pruned=[ids[8]]))
    assert (await store.load_window(session))[4].pruned
    undone = await store.undo_last_compaction(session)

    assert undone.undone
    window = await store.load_window(session)
    assert [(m.id, m.state, m.pruned) for m in window] == [(m.id, m.state, m.pruned) for m in original]
    after = await store.get_session(session)
    assert after.active_message_count == before.active_message_count
    assert after.active_tokens == before.active_tokens
    assert after.rolling_summary == before.rolling_summary
    assert after.engine_state == before.engine_state
    assert after.compaction_count == 0


async def test_undo_twice_walks_back_through_both_compactions(store: Store) -> None:
    _, session = await new_chat(store)
    ids = await fill(store, session, 12)
    await store.apply_compaction(session, plan(ids[2:6], ids[6], text="S1", state={"n": 1}))
    first_window = await store.load_window(session)
    summary1 = next(m.id for m in first_window if m.state == "summary")
    await store.apply_compaction(session, plan([summary1, *ids[6:9]], ids[9], text="S2", state={"n": 2}))
    assert [m.text for m in await store.load_window(session)] == ["m0", "m1", "S2", "m9", "m10", "m11"]

    await store.undo_last_compaction(session)
    assert [(m.id, m.state) for m in await store.load_window(session)] == [
        (m.id, m.state) for m in first_window
    ]
    session_row = await store.get_session(session)
    assert session_row.rolling_summary == "S1"
    assert session_row.engine_state == {"n": 1}

    await store.undo_last_compaction(session)
    assert [m.id for m in await store.load_window(session)] == ids
    with pytest.raises(NothingToUndoError):
        await store.undo_last_compaction(session)


async def test_nothing_to_undo_skips_attempts_without_changes(store: Store) -> None:
    _, session = await new_chat(store)
    await fill(store, session, 4)
    attempt = await store.record_compaction_attempt(
        session, trigger="manual", outcome="aborted", reason="summarizer failed", error="timeout"
    )
    assert attempt.outcome == "aborted"
    assert attempt.archived_count == 0
    with pytest.raises(NothingToUndoError):
        await store.undo_last_compaction(session)
    assert len(await store.load_window(session)) == 4


async def test_attempt_saves_engine_state_and_unknown_kinds_are_refused(store: Store) -> None:
    _, session = await new_chat(store)
    await store.record_compaction_attempt(
        session, trigger="agent", outcome="aborted", reason="too small", engine_state={"failures": 1}
    )
    assert (await store.get_session(session)).engine_state == {"failures": 1}
    with pytest.raises(StoreError, match="trigger"):
        await store.record_compaction_attempt(session, trigger="cron", outcome="ok", reason="")
    with pytest.raises(StoreError, match="outcome"):
        await store.apply_compaction(
            session,
            CompactionApply(
                trigger="manual", outcome="fine", removed_ids=[], summary=None, insert_summary_before_id=None
            ),
        )

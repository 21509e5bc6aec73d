"""Chats, sessions and messages: idempotent appends, window order, counters, NUL bytes, races."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from gateway.store import NewMessage, Store
from gateway.store.messages.window import window_query
from gateway.store.rows import NUL_REPLACEMENT
from tests.gateway.store.helpers import append_one

from .helpers import fill, msg, new_chat


async def test_redelivered_update_is_stored_once(store: Store) -> None:
    _, session = await new_chat(store)
    first = await append_one(store, session, msg("hello", pid="42", tokens=7))
    again = await append_one(store, session, msg("hello", pid="42", tokens=7))

    assert first.created
    assert not again.created
    assert again.message.id == first.message.id
    window = await store.load_window(session)
    assert [m.text for m in window] == ["hello"]
    hygiene = await store.get_session(session)
    assert (hygiene.active_message_count, hygiene.active_tokens) == (1, 7)


async def test_same_platform_id_in_two_chats_are_two_messages(store: Store) -> None:
    _, s1 = await new_chat(store, "1")
    _, s2 = await new_chat(store, "2")
    a = await append_one(store, s1, msg("a", pid="5"))
    b = await append_one(store, s2, msg("b", pid="5"))
    assert a.created
    assert b.created
    assert a.message.id != b.message.id


async def test_messages_without_platform_id_never_collide(store: Store) -> None:
    _, session = await new_chat(store)
    results = await store.append_messages(
        session, [msg("tool call", role="assistant"), msg("tool result"), msg("answer", role="assistant")]
    )
    assert all(r.created for r in results)
    assert [m.text for m in await store.load_window(session)] == ["tool call", "tool result", "answer"]


async def test_window_order_is_insertion_order_even_with_equal_timestamps(store: Store) -> None:
    _, session = await new_chat(store)
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(6):
        await append_one(
            store,
            session,
            NewMessage(role="user", content=f"t{i}", text=f"t{i}", token_estimate=1, created_at=moment),
        )
    window = await store.load_window(session)
    assert [m.text for m in window] == [f"t{i}" for i in range(6)]
    seqs = [m.seq for m in window]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    assert all(m.created_at == moment for m in window)


async def test_concurrent_appends_keep_counters_exact(store: Store) -> None:
    _, session = await new_chat(store)
    await asyncio.gather(*(append_one(store, session, msg(f"c{i}", tokens=3)) for i in range(20)))
    hygiene = await store.get_session(session)
    assert hygiene.active_message_count == 20
    assert hygiene.active_tokens == 60
    assert hygiene.tokens_since_call == 60
    window = await store.load_window(session)
    assert sorted(m.text for m in window) == sorted(f"c{i}" for i in range(20))
    assert len({m.seq for m in window}) == 20


async def test_concurrent_redelivery_stores_one_row(store: Store) -> None:
    _, session = await new_chat(store)
    results = await asyncio.gather(*(append_one(store, session, msg("dup", pid="9")) for _ in range(8)))
    assert sum(r.created for r in results) == 1
    assert len({r.message.id for r in results}) == 1
    assert (await store.get_session(session)).active_message_count == 1


async def test_nul_bytes_are_replaced_and_stored(store: Store) -> None:
    _, session = await new_chat(store)
    content = [
        {"type": "text", "text": "a\x00b"},
        {"type": "tool_result", "tool_use_id": "t", "content": "\x00"},
    ]
    stored = await append_one(
        store,
        session,
        NewMessage(role="user", content=content, text="a\x00b", token_estimate=2, author_name="Z\x00e"),
    )
    [loaded] = await store.load_window(session)
    assert loaded.text == f"a{NUL_REPLACEMENT}b"
    assert loaded.content == [
        {"type": "text", "text": f"a{NUL_REPLACEMENT}b"},
        {"type": "tool_result", "tool_use_id": "t", "content": NUL_REPLACEMENT},
    ]
    assert loaded.author_name == f"Z{NUL_REPLACEMENT}e"
    assert stored.message.id == loaded.id


async def test_content_blocks_round_trip(store: Store) -> None:
    _, session = await new_chat(store)
    blocks = [
        {"type": "text", "text": "look"},
        {"type": "tool_use", "id": "tu_1", "name": "recall", "input": {"query": "x", "n": 3}},
    ]
    await append_one(
        store, session, NewMessage(role="assistant", content=blocks, text="look", token_estimate=5)
    )
    [loaded] = await store.load_window(session)
    assert loaded.content == blocks
    assert loaded.created_at.tzinfo is not None


async def test_get_or_create_chat_is_race_safe(store: Store) -> None:
    chats = await asyncio.gather(
        *(store.get_or_create_chat("discord", "c1", "th1", kind="thread", title="T") for _ in range(10))
    )
    assert len({c.id for c in chats}) == 1
    other = await store.get_or_create_chat("discord", "c1", None, kind="channel", title="T")
    assert other.id != chats[0].id
    assert other.thread_id == ""


async def test_active_session_is_race_safe_and_new_session_keeps_old(store: Store) -> None:
    chat = await store.get_or_create_chat("telegram", "7", None, kind="private", title=None)
    sessions = await asyncio.gather(*(store.active_session(chat.id) for _ in range(10)))
    assert len({s.id for s in sessions}) == 1
    old = sessions[0]
    await fill(store, old.id, 3)

    fresh = await store.new_session(chat.id)
    assert fresh.id != old.id
    assert fresh.active
    assert (await store.active_session(chat.id)).id == fresh.id
    kept = await store.get_session(old.id)
    assert not kept.active
    assert kept.ended_at is not None
    assert len(await store.load_window(old.id)) == 3
    assert await store.load_window(fresh.id) == []


async def test_unanswered_and_mark_replied(store: Store) -> None:
    _, session = await new_chat(store)
    asked = await append_one(store, session, msg("question?", needs_reply=True, pid="1"))
    await append_one(store, session, msg("chatter", pid="2"))
    old = NewMessage(
        role="user",
        content="ancient",
        text="ancient",
        token_estimate=1,
        needs_reply=True,
        created_at=store.now() - timedelta(hours=2),
    )
    await append_one(store, session, old)

    pending = await store.unanswered()
    assert [m.text for m in pending] == ["ancient", "question?"]
    recent = await store.unanswered(max_age=timedelta(minutes=10))
    assert [m.text for m in recent] == ["question?"]

    await store.mark_replied([asked.message.id])
    assert [m.text for m in await store.unanswered()] == ["ancient"]


async def test_window_query_uses_the_window_index_on_sqlite(sqlite_url: str) -> None:
    store = await Store.open(sqlite_url)
    try:
        statement = window_query(1).compile(store.engine, compile_kwargs={"literal_binds": True})
        async with store.engine.connect() as conn:
            plan = (await conn.execute(text(f"EXPLAIN QUERY PLAN {statement}"))).all()
        details = " ".join(str(row[-1]) for row in plan)
        assert "ix_messages_window" in details
        assert "SCAN messages" not in details
    finally:
        await store.close()

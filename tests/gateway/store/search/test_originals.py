"""Drill-down: the messages behind a summary, page by page, across folded summaries, this chat only."""

from __future__ import annotations

from gateway.store import Store
from gateway.store.search.originals import PAGE_SIZE
from tests.gateway.store.helpers import new_chat
from tests.gateway.store.search.test_search import add, said
from tests.gateway.store.test_compaction import plan


async def test_the_current_summary_lists_its_originals_in_order_page_by_page(store: Store) -> None:
    chat, session = await new_chat(store, "pages")
    ids = await add(store, session, *[f"message {i}" for i in range(PAGE_SIZE + 5)], "tail")
    record = await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
    first = await store.summary_originals(chat, None)
    assert first is not None
    assert first.summary_id == record.summary_message_id
    assert (first.page, first.pages, first.total, first.parts) == (1, 2, PAGE_SIZE + 5, 1)
    assert [m.text for m in first.messages] == [f"message {i}" for i in range(PAGE_SIZE)]
    assert first.session.active
    second = await store.summary_originals(chat, record.summary_message_id, page=2)
    assert second is not None
    assert [m.message_id for m in second.messages] == ids[PAGE_SIZE:-1]
    beyond = await store.summary_originals(chat, None, page=3)
    assert beyond is not None
    assert beyond.messages == []


async def test_a_later_summary_covers_what_the_earlier_one_replaced(store: Store) -> None:
    chat, session = await new_chat(store, "fold")
    ids = await add(store, session, "alpha", "beta", "gamma", said("tool noise", tool=True), "delta")
    first = await store.apply_compaction(session, plan(ids[:2], ids[2], text="S1"))
    assert first.summary_message_id is not None
    second = await store.apply_compaction(
        session, plan([first.summary_message_id, *ids[2:4]], ids[4], text="S2")
    )
    page = await store.summary_originals(chat, None)
    assert page is not None
    assert page.summary_id == second.summary_message_id
    assert page.parts == 2
    # Oldest first, without the folded summary "S1" or the tool result.
    assert [m.text for m in page.messages] == ["alpha", "beta", "gamma"]
    # The earlier summary still lists only what it replaced itself.
    older = await store.summary_originals(chat, first.summary_message_id)
    assert older is not None
    assert [m.text for m in older.messages] == ["alpha", "beta"]


async def test_long_originals_are_clipped_and_say_their_length(store: Store) -> None:
    chat, session = await new_chat(store, "long")
    ids = await add(store, session, "x" * 5000, "tail")
    await store.apply_compaction(session, plan(ids[:1], ids[1]))
    page = await store.summary_originals(chat, None)
    assert page is not None
    [message] = page.messages
    assert message.total_chars == 5000
    assert len(message.text) < 700


async def test_no_summary_or_another_chats_summary_gives_nothing(store: Store) -> None:
    mine, my_session = await new_chat(store, "mine")
    theirs, their_session = await new_chat(store, "theirs")
    assert await store.summary_originals(mine, None) is None
    ids = await add(store, their_session, "their secret plan", "tail")
    record = await store.apply_compaction(their_session, plan(ids[:1], ids[1]))
    assert await store.summary_originals(mine, record.summary_message_id) is None
    assert await store.summary_originals(mine, ids[0]) is None  # not a summary at all
    await store.undo_last_compaction(their_session)
    assert await store.summary_originals(theirs, record.summary_message_id) is None
    assert my_session != their_session

"""The per-message store path: one transaction to store an incoming message, one read to start a turn."""

from __future__ import annotations

from gateway.store import NewMessage, Store


def _msg(pid: str, *, tokens: int = 7, needs_reply: bool = True) -> NewMessage:
    return NewMessage(
        role="user", content=f"text {pid}", text=f"text {pid}", token_estimate=tokens,
        author_id="u1", author_name="Ann", platform_message_id=pid, needs_reply=needs_reply,
    )  # fmt: skip


async def test_incoming_messages_create_the_session_and_count_once(store: Store) -> None:
    chat = await store.chat_for("telegram", "100", None, kind="private", title=None)
    session, first = await store.store_incoming(chat.id, _msg("m1"))
    again, second = await store.store_incoming(chat.id, _msg("m2"))
    dup_session, dup = await store.store_incoming(chat.id, _msg("m1", tokens=50))
    assert first.created
    assert second.created
    assert not dup.created
    assert dup.message.id == first.message.id
    assert session.id == again.id == dup_session.id
    snapshot = await store.turn_snapshot(chat.id)
    assert [r.text for r in snapshot.rows] == ["text m1", "text m2"]
    # The redelivery changed no counter.
    assert snapshot.session.active_message_count == 2
    assert snapshot.session.active_tokens == 14
    assert snapshot.session.last_call_at is None
    assert snapshot.session.id == session.id


async def test_cached_chat_row_follows_a_title_change(store: Store) -> None:
    first = await store.chat_for("discord", "5", "9", kind="group", title="Old")
    assert await store.chat_for("discord", "5", "9", kind="group", title="Old") == first
    renamed = await store.chat_for("discord", "5", "9", kind="group", title="New")
    assert renamed.id == first.id
    assert renamed.title == "New"
    assert (await store.get_chat(first.id)) == renamed

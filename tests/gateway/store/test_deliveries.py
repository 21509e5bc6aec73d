"""Reply parts with their delivery state: claimed once, sent with the platform id, looked up by it."""

from __future__ import annotations

from datetime import timedelta

from gateway.store import NewReply, Store
from tests.gateway.store.helpers import append_one, msg, new_chat


async def test_reply_parts_are_claimed_once_and_found_by_their_platform_ids(store: Store) -> None:
    chat_pk, session_pk = await new_chat(store)
    question = await append_one(store, session_pk, msg("what is new?", pid="7", needs_reply=True))
    answer = await append_one(store, session_pk, msg("a long answer", role="assistant"))
    parts = await store.finish_turn(
        session_pk,
        [question.message.id],
        {},
        reply=NewReply(chat_pk, ["a long", "answer"], message_pk=answer.message.id, reply_to="7"),
    )
    assert [(p.part, p.state, p.reply_to) for p in parts] == [(0, "pending", "7"), (1, "pending", None)]
    assert [m.id for m in await store.unanswered()] == []

    assert await store.claim_delivery(parts[0].id)
    assert not await store.claim_delivery(parts[0].id)  # a second sender gets nothing
    await store.delivery_sent(parts[0].id, "501")
    later = store.now() + timedelta(minutes=5)
    assert [p.id for p in await store.open_deliveries(stale_before=later)] == [parts[1].id]

    found = await store.reply_for_platform_message(chat_pk, "501")
    assert found is not None
    assert found.id == answer.message.id
    other_chat, _ = await new_chat(store, "200")
    assert await store.reply_for_platform_message(other_chat, "501") is None
    assert await store.reply_for_platform_message(chat_pk, "999") is None

    assert await store.claim_delivery(parts[1].id)
    await store.delivery_failed(parts[1].id, "Forbidden: bot was blocked by the user", lasting=True)
    assert await store.open_deliveries(stale_before=later) == []
    assert await store.delivery_counts(chat_pk) == {"sent": 1, "failed": 1}


async def test_a_part_left_sending_by_a_dead_process_is_open_again_once_stale(store: Store) -> None:
    chat_pk, session_pk = await new_chat(store)
    (part,) = await store.finish_turn(session_pk, [], {}, reply=NewReply(chat_pk, ["hello"]))
    assert await store.claim_delivery(part.id)
    now = store.now()
    assert await store.open_deliveries(stale_before=now - timedelta(seconds=30)) == []
    assert not await store.claim_delivery(part.id, stale_before=now - timedelta(seconds=30))
    stale = now + timedelta(seconds=1)
    assert [p.id for p in await store.open_deliveries(stale_before=stale)] == [part.id]
    assert await store.claim_delivery(part.id, stale_before=stale)


async def test_a_reply_to_one_of_the_bots_messages_finds_the_stored_reply(store: Store) -> None:
    """`original_message` (what a reply shows of what it answers) also knows the bot's own messages."""
    chat_pk, session_pk = await new_chat(store)
    question = await append_one(store, session_pk, msg("when is the deploy?", pid="7", needs_reply=True))
    answer = await append_one(
        store, session_pk, msg("Thursday at 14:00, after the freeze.", role="assistant")
    )
    (part,) = await store.finish_turn(
        session_pk,
        [question.message.id],
        {},
        reply=NewReply(chat_pk, ["Thursday at 14:00…"], answer.message.id),
    )
    await store.claim_delivery(part.id)
    await store.delivery_sent(part.id, "9001")
    found = await store.original_message(chat_pk, "9001")
    assert found is not None
    assert (found.role, found.text) == ("assistant", "Thursday at 14:00, after the freeze.")
    assert (await store.original_message(chat_pk, "7")) is not None  # a user's message, as before
    other_chat, _ = await new_chat(store, "300")
    assert await store.original_message(other_chat, "9001") is None

"""Media storage on both databases: stored once per chat by content, linked to messages, read only by
its own chat, and removed by archive retention only when no message needs it any more."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from agent.media import media_ref
from gateway.store import CompactionApply, NewMessage, Store
from gateway.store.messages.media import MediaStore, NewMedia
from tests.support.media_files import image_bytes

from .helpers import new_chat


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def stores(db_url: str) -> AsyncIterator[tuple[Store, MediaStore, Clock]]:
    clock = Clock()
    store = await Store.open(db_url, clock=clock)
    yield store, MediaStore(store.engine, clock=clock), clock
    await store.close()


def photo(seed: int = 0) -> NewMedia:
    return NewMedia(
        kind="image",
        media_type="image/jpeg",
        data=image_bytes(64, 48, seed=seed),
        tokens=5,
        width=64,
        height=48,
    )


def with_media(pid: str, media_ids: tuple[int, ...]) -> NewMessage:
    blocks = [
        media_ref(media_id=m, kind="image", media_type="image/jpeg", tokens=5, width=64, height=48)
        for m in media_ids
    ]
    return NewMessage(
        role="user",
        content=[*blocks, {"type": "text", "text": "look"}],
        text="[photo] look",
        token_estimate=20,
        platform_message_id=pid,
        media_ids=media_ids,
    )


async def test_same_bytes_are_stored_once_per_chat(stores: tuple[Store, MediaStore, Clock]) -> None:
    store, media, _ = stores
    chat_a, _ = await new_chat(store, "1")
    chat_b, _ = await new_chat(store, "2")
    first = await media.put(chat_a, photo())
    again = await media.put(chat_a, photo())
    other = await media.put(chat_b, photo())
    assert again.id == first.id
    assert other.id != first.id  # owned by the chat: never shared across chats
    assert await media.count(chat_a) == 1
    item = await media.get(chat_a, first.id)
    assert item is not None
    assert item.data == photo().data
    assert (item.info.width, item.info.height, item.info.tokens) == (64, 48, 5)
    assert item.info.sha256 == photo().sha256


async def test_media_is_read_only_by_its_own_chat(stores: tuple[Store, MediaStore, Clock]) -> None:
    store, media, _ = stores
    chat_a, _ = await new_chat(store, "1")
    chat_b, _ = await new_chat(store, "2")
    stored = await media.put(chat_a, photo())
    assert await media.get(chat_b, stored.id) is None
    assert await media.get_many(chat_b, [stored.id]) == {}
    assert set(await media.get_many(chat_a, [stored.id])) == {stored.id}


async def test_a_redelivered_message_stores_nothing_twice(stores: tuple[Store, MediaStore, Clock]) -> None:
    store, media, _ = stores
    chat, _ = await new_chat(store)
    ids = ((await media.put(chat, photo(1))).id, (await media.put(chat, photo(2))).id)
    _, first = await store.store_incoming(chat, with_media("p-1", ids))
    ids_again = ((await media.put(chat, photo(1))).id, (await media.put(chat, photo(2))).id)
    _, second = await store.store_incoming(chat, with_media("p-1", ids_again))
    assert first.created
    assert not second.created
    assert ids_again == ids
    assert await media.count(chat) == 2
    assert [m.id for m in await media.for_message(first.message.id)] == list(ids)


async def test_retention_deletes_media_only_when_no_message_needs_it(
    stores: tuple[Store, MediaStore, Clock],
) -> None:
    store, media, clock = stores
    chat, session = await new_chat(store)
    only_old = (await media.put(chat, photo(1))).id
    shared = (await media.put(chat, photo(2))).id
    _, old = await store.store_incoming(chat, with_media("old", (only_old, shared)))
    clock.now += timedelta(days=40)
    _, recent = await store.store_incoming(chat, with_media("recent", (shared,)))
    await store.apply_compaction(
        session,
        CompactionApply(
            trigger="manual",
            outcome="ok",
            removed_ids=[old.message.id],
            summary=None,
            insert_summary_before_id=None,
        ),
    )
    cutoff = clock.now - timedelta(days=30)
    assert await store.delete_archived_before(cutoff) == 1
    assert await media.get(chat, only_old) is None  # its only message is gone
    assert await media.get(chat, shared) is not None  # still carried by an active message
    assert [m.id for m in await media.for_message(recent.message.id)] == [shared]


async def test_retention_never_takes_media_sent_again_just_now(
    stores: tuple[Store, MediaStore, Clock],
) -> None:
    store, media, clock = stores
    chat, _ = await new_chat(store)
    stored = await media.put(chat, photo())
    clock.now += timedelta(days=40)
    await media.put(chat, photo())  # the same picture again; its message is about to be stored
    assert await media.delete_unreferenced(clock.now - timedelta(days=30)) == 0
    clock.now += timedelta(days=31)
    assert await media.delete_unreferenced(clock.now - timedelta(days=30)) == 1
    assert await media.get(chat, stored.id) is None

"""Archive search finds what compactions removed, in the asking chat only."""

from __future__ import annotations

from gateway.store import Store
from tests.gateway.store.helpers import append_one

from .helpers import msg, new_chat
from .test_compaction import plan


async def _archive(store: Store, chat_id: str, texts: list[str]) -> int:
    chat, session = await new_chat(store, chat_id)
    ids = [(await append_one(store, session, msg(t))).message.id for t in [*texts, "tail"]]
    await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
    return chat


async def test_search_is_case_insensitive_and_needs_every_word(store: Store) -> None:
    chat = await _archive(
        store, "a", ["The Deploy key lives in Vault", "deploy failed on Friday", "lunch plans", "ÜBER Straße"]
    )
    hits = await store.search_archive(chat, "DEPLOY")
    assert [h.excerpt for h in hits] == ["deploy failed on Friday", "The Deploy key lives in Vault"]
    assert [h.excerpt for h in await store.search_archive(chat, "deploy vault")] == [
        "The Deploy key lives in Vault"
    ]
    assert [h.excerpt for h in await store.search_archive(chat, "über")] == ["ÜBER Straße"]
    assert await store.search_archive(chat, "dinner") == []
    assert await store.search_archive(chat, "   ") == []
    assert len(await store.search_archive(chat, "e", limit=2)) == 2


async def test_search_never_returns_another_chats_rows(store: Store) -> None:
    mine = await _archive(store, "mine", ["my secret password is swordfish"])
    theirs = await _archive(store, "theirs", ["their password is hunter2"])
    assert [h.excerpt for h in await store.search_archive(mine, "password")] == [
        "my secret password is swordfish"
    ]
    assert [h.excerpt for h in await store.search_archive(theirs, "password")] == [
        "their password is hunter2"
    ]
    assert await store.search_archive(mine, "hunter2") == []


async def test_search_ignores_the_active_window_and_treats_wildcards_literally(store: Store) -> None:
    chat = await _archive(store, "w", ["100% sure", "a_b"])
    assert [h.excerpt for h in await store.search_archive(chat, "tail")] == []  # still active
    assert [h.excerpt for h in await store.search_archive(chat, "%")] == ["100% sure"]
    assert [h.excerpt for h in await store.search_archive(chat, "_")] == ["a_b"]


async def test_long_messages_get_an_excerpt_around_the_match(store: Store) -> None:
    long = "filler " * 100 + "the needle is here " + "more " * 100
    chat = await _archive(store, "long", [long])
    [hit] = await store.search_archive(chat, "needle")
    assert "needle" in hit.excerpt
    assert len(hit.excerpt) < 260
    assert hit.excerpt.startswith("…")
    assert hit.excerpt.endswith("…")
    assert hit.role == "user"
    assert hit.author_name == "Ann"


async def test_get_message_only_within_its_chat(store: Store) -> None:
    mine, session = await new_chat(store, "mine")
    theirs, _ = await new_chat(store, "theirs")
    stored = (await append_one(store, session, msg("full text here"))).message
    found = await store.get_message(mine, stored.id)
    assert found is not None
    assert found.text == "full text here"
    assert await store.get_message(theirs, stored.id) is None
    assert await store.get_chat(theirs) is not None
    assert await store.get_chat(999_999) is None

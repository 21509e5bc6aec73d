"""Semantic recall end to end on both databases: the worker embeds stored messages in the background,
the ranker fuses the nearest ones into the search, and a failing endpoint degrades to keywords."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from agent.tools.recall_types import RecallQuery
from gateway.config import EmbeddingsSettings
from gateway.embeddings.setup import Embeddings, embeddings_from
from gateway.store import Store
from gateway.turn.recall_history import ChatHistorySearch
from tests.fakes.embeddings import FakeEmbeddings
from tests.gateway.store.helpers import new_chat
from tests.gateway.store.search.test_search import add, said
from tests.gateway.store.test_compaction import plan


@pytest.fixture
async def fake() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as server:
        yield server


def semantic(fake: FakeEmbeddings, store: Store, **options: object) -> Embeddings:
    settings = EmbeddingsSettings(
        provider="voyage",
        base_url=fake.url,
        api_key=fake.api_key,
        dimensions=128,
        **options,  # type: ignore[arg-type]
    )
    built = embeddings_from(settings, store)
    assert built is not None
    return built


async def drain(parts: Embeddings) -> int:
    total = 0
    while done := await parts.worker.run_once():
        total += done
    return total


async def test_new_messages_are_embedded_and_synonyms_are_found(store: Store, fake: FakeEmbeddings) -> None:
    parts = semantic(fake, store)
    chat, session = await new_chat(store, "sem")
    await add(store, session, "stored before embeddings were on: my old automobile")
    try:
        assert await parts.worker.run_once() == 0  # starts after what was already there
        ids = await add(
            store,
            session,
            "I finally bought a new car last week",
            "the weather was grey all day",
            said("tool output about cars", tool=True),
            "tail",
        )
        await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
        assert await drain(parts) == 3  # the tool result is not embedded, the summary neither
        assert "tool output about cars" not in fake.texts("document")
        assert "SUMMARY" not in fake.texts("document")
        keyword_only = ChatHistorySearch(store, chat)
        with_vectors = ChatHistorySearch(store, chat, semantic=parts.ranker.rank)
        query = RecallQuery(text="Which automobile did she purchase?", limit=3)
        assert [h.main.message_id for h in (await keyword_only.search(query)).hits] == []
        found = await with_vectors.search(query)
        assert found.hits[0].main.message_id == ids[0]
        assert fake.texts("query") == ["Which automobile did she purchase?"]
    finally:
        await parts.close()


async def test_backfill_embeds_older_messages(store: Store, fake: FakeEmbeddings) -> None:
    _, session = await new_chat(store, "old")
    await add(store, session, "one", "two", "three")
    parts = semantic(fake, store, backfill=True)
    try:
        assert await drain(parts) == 3
    finally:
        await parts.close()


async def test_vectors_of_another_chat_never_come_back(store: Store, fake: FakeEmbeddings) -> None:
    parts = semantic(fake, store, backfill=True)
    mine, my_session = await new_chat(store, "mine")
    theirs, their_session = await new_chat(store, "theirs")
    their_ids = await add(store, their_session, "their automobile is red")
    my_ids = await add(store, my_session, "my bicycle is blue", "tail")
    await store.apply_compaction(my_session, plan(my_ids[:-1], my_ids[-1]))
    try:
        await drain(parts)
        assert set(await parts.ranker.rank(mine, "automobile")) == set(my_ids)
        assert await parts.ranker.rank(theirs, "automobile") == their_ids
        found = await ChatHistorySearch(store, mine, semantic=parts.ranker.rank).search(
            RecallQuery(text="car", limit=5)
        )
        assert [h.main.message_id for h in found.hits] == [my_ids[0]]
    finally:
        await parts.close()


async def test_a_failing_endpoint_degrades_to_keywords_with_a_warning(
    store: Store, fake: FakeEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    parts = semantic(fake, store, backfill=True)
    chat, session = await new_chat(store, "down")
    ids = await add(store, session, "the deploy key lives in vault", "tail")
    await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
    history = ChatHistorySearch(store, chat, semantic=parts.ranker.rank)
    try:
        fake.fail(500, times=5)
        with caplog.at_level(logging.WARNING):
            found = await history.search(RecallQuery(text="vault deploy key"))
        assert [h.main.message_id for h in found.hits] == [ids[0]]
        assert "keyword ranking only" in caplog.text
        asked = len(fake.requests)
        await history.search(RecallQuery(text="vault"))
        assert len(fake.requests) == asked  # cooling down: the endpoint is not asked again at once
        # The worker keeps what it could not embed for later.
        with pytest.raises(Exception, match="500"):
            await parts.worker.run_once()
        assert parts.worker.embedded == 0
    finally:
        await parts.close()


async def test_a_refused_batch_is_skipped_not_retried_forever(store: Store, fake: FakeEmbeddings) -> None:
    parts = semantic(fake, store, backfill=True)
    _, session = await new_chat(store, "refused")
    ids = await add(store, session, "first", "second")
    try:
        fake.fail(400)
        assert await parts.worker.run_once() == 0
        assert parts.worker.watermark == ids[-1]
        assert await parts.worker.run_once() == 0
    finally:
        await parts.close()

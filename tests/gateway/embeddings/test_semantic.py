"""Semantic recall end to end on both databases: the worker embeds stored messages in the background,
the ranker fuses the nearest ones into the search, and a failing endpoint degrades to keywords."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable

import pytest

from agent.tools.recall import recall_tool
from agent.tools.recall_types import RecallQuery
from gateway.config import EmbeddingsSettings
from gateway.embeddings.breaker import Breaker, BreakerState
from gateway.embeddings.setup import Embeddings, embeddings_from
from gateway.store import Store
from gateway.store.search.scope import Scope
from gateway.turn.recall_history import ChatHistorySearch
from tests.fakes.embeddings import FakeEmbeddings
from tests.gateway.store.helpers import new_chat
from tests.gateway.store.search.test_search import add, said
from tests.gateway.store.test_compaction import plan


@pytest.fixture
async def fake() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as server:
        yield server


Opened = Callable[[EmbeddingsSettings], Embeddings]
Semantic = Callable[..., Embeddings]


@pytest.fixture
async def opened(store: Store) -> AsyncIterator[Opened]:
    """Builds the embeddings parts of given settings on the test's store; all are closed at the end."""
    built: list[Embeddings] = []

    def build(settings: EmbeddingsSettings) -> Embeddings:
        parts = embeddings_from(settings, store)
        assert parts is not None
        built.append(parts)
        return parts

    yield build
    for parts in built:
        await parts.close()


@pytest.fixture
def semantic(fake: FakeEmbeddings, opened: Opened) -> Semantic:
    """The Voyage-style parts against the fake endpoint, with these settings' `options`."""

    def build(**options: object) -> Embeddings:
        settings = EmbeddingsSettings(
            provider="voyage",
            base_url=fake.url,
            api_key=fake.api_key,
            dimensions=128,
            **options,  # type: ignore[arg-type]
        )
        return opened(settings)

    return build


async def drain(parts: Embeddings) -> int:
    total = 0
    while done := await parts.worker.run_once():
        total += done
    return total


async def test_new_messages_are_embedded_and_synonyms_are_found(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic()
    chat, session = await new_chat(store, "sem")
    await add(store, session, "stored before embeddings were on: my old automobile")
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


async def test_backfill_embeds_older_messages(semantic: Semantic, store: Store, fake: FakeEmbeddings) -> None:
    _, session = await new_chat(store, "old")
    await add(store, session, "one", "two", "three")
    parts = semantic(backfill=True)
    assert await drain(parts) == 3


async def test_vectors_of_another_chat_never_come_back(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic(backfill=True)
    mine, my_session = await new_chat(store, "mine")
    theirs, their_session = await new_chat(store, "theirs")
    their_ids = await add(store, their_session, "their automobile is red")
    my_ids = await add(store, my_session, "my bicycle is blue", "tail")
    await store.apply_compaction(my_session, plan(my_ids[:-1], my_ids[-1]))
    await drain(parts)
    assert set((await parts.ranker.rank(Scope(mine), "automobile")).ids) == set(my_ids[:-1])
    assert (await parts.ranker.rank(Scope(theirs), "automobile")).ids == []  # in their window
    assert (await parts.ranker.rank(Scope(theirs, shown_below=1), "automobile")).ids == their_ids
    found = await ChatHistorySearch(store, mine, semantic=parts.ranker.rank).search(
        RecallQuery(text="car", limit=5)
    )
    assert [h.main.message_id for h in found.hits] == [my_ids[0]]


async def test_a_failing_endpoint_costs_that_query_its_semantic_side_only(
    semantic: Semantic, store: Store, fake: FakeEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    parts = semantic(backfill=True)
    chat, session = await new_chat(store, "down")
    ids = await add(store, session, "the deploy key lives in vault", "I purchased an automobile", "tail")
    await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
    await drain(parts)
    history = ChatHistorySearch(store, chat, semantic=parts.ranker.rank)
    fake.fail(500, times=1)
    with caplog.at_level(logging.WARNING):
        found = await history.search(RecallQuery(text="vault deploy key"))
    assert [h.main.message_id for h in found.hits] == [ids[0]]  # keywords still answer
    assert "keywords only" in caplog.text
    asked = len(fake.requests)
    # The very next query asks again and gets its semantic side (a synonym only it can find).
    found = await history.search(RecallQuery(text="which car did they buy"))
    assert len(fake.requests) == asked + 1
    assert found.hits[0].main.message_id == ids[1]
    assert parts.ranker.outcomes["error"] == 1
    assert parts.ranker.outcomes["ranked"] == 1
    # The worker keeps what it could not embed for later.
    await add(store, session, "one more")
    fake.fail(500)
    with pytest.raises(Exception, match="500"):
        await parts.worker.run_once()


async def test_a_slow_endpoint_costs_one_query_not_the_next_minute(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic(backfill=True, query_timeout_s=0.2)
    chat, session = await new_chat(store, "slow")
    ids = await add(store, session, "I purchased an automobile", "tail")
    await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
    await drain(parts)
    history = ChatHistorySearch(store, chat, semantic=parts.ranker.rank)
    query = RecallQuery(text="which car did they buy")
    fake.delay_s = 2.0
    assert (await history.search(query)).hits == []  # past its deadline: keywords only
    assert parts.ranker.outcomes["timeout"] == 1
    fake.delay_s = 0.0
    assert [h.main.message_id for h in (await history.search(query)).hits] == [ids[0]]
    assert parts.ranker.breaker.state is BreakerState.CLOSED


async def test_repeated_failures_pause_then_one_query_tries_again(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic(backfill=True, breaker_failures=3)
    now = [0.0]
    parts.ranker.breaker = Breaker(failures=3, cooldown_s=30.0, clock=lambda: now[0])
    chat, _ = await new_chat(store, "flaky")
    fake.fail(503, times=4)
    for _ in range(3):
        assert (await parts.ranker.rank(Scope(chat), "car")).outcome == "error"
    assert parts.ranker.breaker.state is BreakerState.OPEN
    asked = len(fake.requests)
    assert (await parts.ranker.rank(Scope(chat), "car")).outcome == "skipped"
    assert len(fake.requests) == asked
    assert "paused after 3 failed queries" in parts.report()
    now[0] = 31.0
    assert parts.ranker.breaker.state is BreakerState.HALF_OPEN
    assert (await parts.ranker.rank(Scope(chat), "car")).outcome == "error"  # the trial fails
    assert parts.ranker.breaker.state is BreakerState.OPEN
    now[0] = 62.0
    assert (await parts.ranker.rank(Scope(chat), "car")).outcome == "ranked"
    assert parts.ranker.breaker.state is BreakerState.CLOSED
    assert parts.report().startswith("on (")


async def test_window_messages_never_take_semantic_rank_positions(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic(backfill=True)
    chat, session = await new_chat(store, "window")
    old = await add(store, session, "we bought an automobile in May", "tail")
    await store.apply_compaction(session, plan(old[:-1], old[-1]))
    # The window is full of messages more similar to the query than the archived answer.
    window = await add(store, session, *[f"automobile automobile car {i}" for i in range(20)])
    await drain(parts)
    ranking = await parts.ranker.rank(Scope(chat), "automobile", depth=1)
    assert ranking.ids == [old[0]]
    everything = await parts.ranker.rank(Scope(chat, shown_below=1), "automobile", depth=1)
    assert everything.ids[0] in window  # without the window rule they would crowd it out


async def test_prefixes_and_input_type_reach_the_endpoint(
    opened: Opened, store: Store, fake: FakeEmbeddings
) -> None:
    settings = EmbeddingsSettings(
        provider="openai",
        base_url=fake.url,
        api_key=fake.api_key,
        model="intfloat/e5-small-v2",
        query_prefix="query: ",
        document_prefix="passage: ",
        backfill=True,
    )
    parts = opened(settings)
    chat, session = await new_chat(store, "e5")
    await add(store, session, "my bicycle is blue")
    await drain(parts)
    await parts.ranker.rank(Scope(chat), "bike colour")
    assert [r.body["input"] for r in fake.requests] == [
        ["passage: my bicycle is blue"],
        ["query: bike colour"],
    ]
    assert all("input_type" not in r.body for r in fake.requests)  # openai: off unless asked
    assert parts.client.model_key == "intfloat/e5-small-v2@default/passage:"
    typed = opened(settings.model_copy(update={"input_type": True}))
    await typed.ranker.rank(Scope(chat), "bike")
    assert fake.requests[-1].body["input_type"] == "query"


async def test_messages_not_yet_embedded_are_counted_and_told(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic(backfill=True, batch_size=2)
    chat, session = await new_chat(store, "lag")
    ids = await add(
        store, session, "alpha one", "beta two", "gamma three", "delta four", "epsilon five", "tail"
    )
    await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
    assert await parts.worker.run_once() == 2
    assert parts.worker.backlog == 4  # three archived messages and the one in the window
    assert "4 messages waiting to be embedded" in parts.report()
    ranking = await parts.ranker.rank(Scope(chat), "three")
    assert ranking.unindexed == 3  # the window's message is not searched anyway
    tool = recall_tool(ChatHistorySearch(store, chat, semantic=parts.ranker.rank))
    reply = await tool.handler({"query": "gamma"})
    assert "3 recent message(s) are not yet indexed for meaning" in reply
    await drain(parts)
    assert parts.worker.backlog == 0
    assert "not yet indexed" not in await tool.handler({"query": "gamma"})


async def test_a_refused_batch_is_skipped_not_retried_forever(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic(backfill=True)
    _, session = await new_chat(store, "refused")
    ids = await add(store, session, "first", "second")
    fake.fail(400)
    assert await parts.worker.run_once() == 0
    assert parts.worker.watermark == ids[-1]
    assert await parts.worker.run_once() == 0


async def test_earlier_questions_to_the_bot_rank_after_what_may_answer(
    semantic: Semantic, store: Store, fake: FakeEmbeddings
) -> None:
    parts = semantic(backfill=True)
    chat, session = await new_chat(store, "asked")
    asked = dataclasses.replace(said("which automobile did Ann purchase?"), needs_reply=True)
    ids = await add(store, session, asked, "Ann purchased a small automobile, a red one", "tail")
    await store.apply_compaction(session, plan(ids[:-1], ids[-1]))
    await drain(parts)
    plain = parts.client
    [query] = await plain.embed(["which automobile did Ann purchase?"], kind="query")
    assert await parts.index.nearest(chat, query, 2) == [ids[0], ids[1]]  # the question is nearest
    ranking = await parts.ranker.rank(Scope(chat), "which automobile did Ann purchase?")
    assert ranking.ids == [ids[1], ids[0]]

"""Usage rows, the hygiene reference they set, costs, and the /stats aggregates."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from gateway.store import CallRecord, Store
from tests.gateway.store.helpers import append_one

from .helpers import fill, msg, new_chat
from .test_compaction import plan


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def clocked(db_url: str) -> AsyncIterator[tuple[Store, Clock]]:
    clock = Clock()
    store = await Store.open(db_url, clock=clock)
    yield store, clock
    await store.close()


def reply(input_tokens: int = 100, *, read: int = 0, write: int = 0, cost: float = 0.01) -> CallRecord:
    return CallRecord(
        model="claude-sonnet-4-6",
        purpose="reply",
        input_tokens=input_tokens,
        output_tokens=20,
        cache_creation_tokens=write,
        cache_read_tokens=read,
        latency_ms=300,
        cost_usd=cost,
        cache_ttl="5m",
    )


async def test_reply_call_becomes_the_hygiene_reference(store: Store) -> None:
    chat, session = await new_chat(store)
    ids = await fill(store, session, 4)
    # A message that arrived while the call was running counts as "since the call".
    late = await append_one(store, session, msg("late", tokens=9))

    await store.record_call(session, chat, reply(50, read=1000, write=200), last_message_id=ids[-1])
    hygiene = await store.get_session(session)
    assert hygiene.last_prompt_tokens == 1250
    assert hygiene.tokens_since_call == late.message.token_estimate

    await append_one(store, session, msg("next", tokens=4))
    assert (await store.get_session(session)).tokens_since_call == 13


async def test_summary_call_does_not_touch_the_reference(store: Store) -> None:
    chat, session = await new_chat(store)
    await fill(store, session, 2)
    summary = CallRecord(model="claude-haiku-4-5", purpose="summary", input_tokens=5000, cost_usd=0.002)
    await store.record_call(session, chat, summary, engine_state={"k": 1})
    hygiene = await store.get_session(session)
    assert hygiene.last_prompt_tokens is None
    assert hygiene.tokens_since_call == 20
    assert (await store.get_session(session)).engine_state == {"k": 1}


async def test_cost_since(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat, session = await new_chat(store)
    for _ in range(23):
        await store.record_call(session, chat, reply(cost=0.5))
        clock.now += timedelta(seconds=90)
    record = await store.get_session(session)
    assert record.last_call_at == clock.now - timedelta(seconds=90)

    since = clock.now - timedelta(seconds=90 * 4 + 1)  # the last four calls
    assert await store.cost_since(chat, since) == pytest.approx(2.0)
    other_chat, _ = await new_chat(store, "other")
    assert await store.cost_since(other_chat, since) == 0.0


async def test_chat_stats(store: Store) -> None:
    chat, session = await new_chat(store)
    other, other_session = await new_chat(store, "other")
    ids = await fill(store, session, 8)
    await fill(store, other_session, 3)
    for i in range(12):
        await store.record_call(session, chat, reply(100, read=10 * i, cost=0.01), last_message_id=ids[-1])
    await store.record_call(other_session, other, reply(999, cost=5.0))
    await store.apply_compaction(session, plan(ids[2:5], ids[5]))
    await store.record_compaction_attempt(session, trigger="manual", outcome="aborted", reason="no change")

    stats = await store.chat_stats(chat, recent_calls=5)
    assert stats.session_pk == session
    assert stats.active_messages == 6
    assert stats.archived_messages == 3
    assert stats.last_prompt_tokens is None  # reset by the compaction
    assert stats.usage_total.calls == 12
    assert stats.usage_total.input_tokens == 1200
    assert stats.usage_total.cache_read_tokens == 10 * sum(range(12))
    assert stats.usage_total.cost_usd == pytest.approx(0.12)
    assert stats.usage_recent.calls == 5
    assert stats.usage_recent.cache_read_tokens == 10 * sum(range(7, 12))
    assert stats.compactions == {("hygiene", "ok"): 1, ("manual", "aborted"): 1}
    assert stats.last_compaction is not None
    assert stats.last_compaction.outcome == "aborted"


async def test_global_stats(store: Store) -> None:
    busy, busy_session = await new_chat(store, "busy")
    quiet, quiet_session = await new_chat(store, "quiet")
    await new_chat(store, "empty")
    await fill(store, busy_session, 6)
    await fill(store, quiet_session, 2)
    await store.record_call(busy_session, busy, reply(cost=1.25))
    await store.record_call(quiet_session, quiet, reply(cost=0.25))

    stats = await store.global_stats(top=2)
    assert (stats.chats, stats.sessions, stats.messages) == (3, 3, 8)
    assert stats.usage.calls == 2
    assert stats.usage.cost_usd == pytest.approx(1.5)
    assert [(b.chat_id, b.messages) for b in stats.busiest] == [("busy", 6), ("quiet", 2)]
    assert stats.busiest[0].cost_usd == pytest.approx(1.25)

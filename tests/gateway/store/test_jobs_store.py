"""The scheduled jobs' queries on both databases: idle scan, retention, daily rollup, cache state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from gateway.store import CallRecord, CompactionApply, Store
from gateway.store.rows import chats, llm_calls

from .helpers import fill, new_chat


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


def call(
    *, purpose: str = "reply", ttl: str | None = "5m", cost: float = 0.5, model: str = "claude-sonnet-4-6"
):
    return CallRecord(
        model=model,
        purpose=purpose,  # type: ignore[arg-type]
        input_tokens=100,
        output_tokens=20,
        cache_creation_tokens=300,
        cache_read_tokens=1000,
        latency_ms=250,
        cost_usd=cost,
        cache_ttl=ttl,
    )


async def test_idle_scan_finds_quiet_big_sessions_once_per_idle_spell(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    _, quiet_big = await new_chat(store, "1")
    await fill(store, quiet_big, 10)  # 100 tokens
    _, quiet_small = await new_chat(store, "2")
    await fill(store, quiet_small, 2)  # 20 tokens
    clock.now += timedelta(hours=2)
    _, busy = await new_chat(store, "3")
    await fill(store, busy, 10)

    found = await store.idle_sessions(idle_since=clock.now - timedelta(minutes=30), min_tokens=50)
    assert [s.id for s in found] == [quiet_big]
    assert found[0].context_tokens() == 100
    assert found[0].last_call_at is None

    # A scheduled attempt after the last message takes it out of the scan until a new message arrives.
    await store.record_compaction_attempt(quiet_big, trigger="scheduled", outcome="aborted", reason="test")
    assert await store.idle_sessions(idle_since=clock.now - timedelta(minutes=30), min_tokens=50) == []
    clock.now += timedelta(seconds=1)
    await fill(store, quiet_big, 1)
    clock.now += timedelta(hours=1)
    again = await store.idle_sessions(idle_since=clock.now - timedelta(minutes=30), min_tokens=50)
    assert quiet_big in [s.id for s in again]


async def test_reply_calls_record_the_last_call_and_the_context_size(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat, session = await new_chat(store)
    ids = await fill(store, session, 4)
    await store.record_call(session, chat, call(ttl="1h"), last_message_id=ids[-1])
    clock.now += timedelta(minutes=20)
    await store.record_call(session, chat, call(ttl="1h"), last_message_id=ids[-1])
    await store.record_call(session, chat, call(purpose="summary", ttl=None), last_message_id=ids[-1])

    state = await store.get_session(session)
    assert state.last_call_at == clock.now
    assert state.context_tokens() == 1400  # reported prompt: 100 + 300 + 1000


async def _archive(store: Store, session: int, ids: list[int]) -> None:
    await store.apply_compaction(
        session,
        CompactionApply(
            trigger="manual",
            outcome="ok",
            reason="test",
            removed_ids=ids,
            pruned_ids=[],
            summary=None,
            insert_summary_before_id=None,
            tokens_before=100,
            tokens_after=50,
            messages_before=len(ids),
            messages_after=0,
            summarizer_model=None,
            duration_ms=1,
            error=None,
            engine_state={},
            rolling_summary=None,
        ),
    )


async def test_retention_deletes_only_old_archived_rows(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    _, session = await new_chat(store)
    old = await fill(store, session, 4, prefix="old")
    clock.now += timedelta(days=40)
    recent = await fill(store, session, 4, prefix="new")
    await _archive(store, session, old[:2] + recent[:2])

    deleted = await store.delete_archived_before(clock.now - timedelta(days=30))
    assert deleted == 2
    window = [m.id for m in await store.load_window(session)]
    assert window == old[2:] + recent[2:]  # active rows survive whatever their age
    chat = (await store.get_session(session)).chat_pk
    assert await store.get_message(chat, old[0]) is None
    assert await store.get_message(chat, recent[0]) is not None
    assert await store.delete_archived_before(clock.now - timedelta(days=30)) == 0


async def test_daily_rollup_is_an_idempotent_upsert(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat, session = await new_chat(store)
    await store.record_call(session, chat, call(cost=0.25))
    await store.record_call(session, chat, call(cost=0.5, purpose="summary", model="claude-haiku-4-5"))
    clock.now += timedelta(days=1)
    await store.record_call(session, chat, call(cost=1.0))

    day = date(2026, 3, 1)
    assert await store.rollup_usage_day(day) == 2
    rows = await store.daily_usage(day)
    assert [(r.model, r.calls, r.cost_usd) for r in rows] == [
        ("claude-haiku-4-5", 1, 0.5),
        ("claude-sonnet-4-6", 1, 0.25),
    ]
    assert rows[1].cache_read_tokens == 1000
    assert rows[1].cache_write_tokens == 300

    clock.now = datetime(2026, 3, 1, 23, 0, tzinfo=UTC)
    await store.record_call(session, chat, call(cost=0.25))
    await store.rollup_usage_day(day)
    rows = await store.daily_usage(day)
    sonnet = next(r for r in rows if r.model == "claude-sonnet-4-6")
    assert (sonnet.calls, sonnet.cost_usd, sonnet.input_tokens) == (2, 0.5, 200)
    assert len(rows) == 2


async def test_the_daily_rollup_of_thousands_of_chats_is_one_statement(clocked: tuple[Store, Clock]) -> None:
    """Past about 3,300 chats in a day, a VALUES list of every chat's totals went over Postgres's limit
    of bind parameters and the roll-up failed every hour; the totals now stay in the database."""
    store, clock = clocked
    n = 4_000
    async with store.engine.begin() as conn:
        await conn.execute(
            insert(chats),
            [
                {"platform": "telegram", "chat_id": str(i), "thread_id": "", "kind": "private",
                 "created_at": clock.now}
                for i in range(n)
            ],
        )  # fmt: skip
        ids = (await conn.execute(select(chats.c.id))).scalars().all()
        await conn.execute(
            insert(llm_calls),
            [
                {"chat_pk": pk, "model": "claude-sonnet-5-5", "purpose": "reply", "input_tokens": 10,
                 "output_tokens": 2, "cache_creation_tokens": 0, "cache_read_tokens": 0, "latency_ms": 1,
                 "cost_usd": 0.001, "created_at": clock.now}
                for pk in ids
            ],
        )  # fmt: skip
    day = date(2026, 3, 1)
    assert await store.rollup_usage_day(day) == n
    assert await store.rollup_usage_day(day) == n  # again: the same rows, updated
    rows = await store.daily_usage(day)
    assert len(rows) == n
    assert sum(r.calls for r in rows) == n
    assert sum(r.input_tokens for r in rows) == 10 * n

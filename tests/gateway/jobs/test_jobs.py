"""The job bodies against a real store (SQLite and Postgres): idle compaction, retention, rollup."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from agent.caching.plan import CachedPrefix, CacheState
from agent.compaction.engine import ContextEngine, EngineState
from agent.loop import LoopConfig
from agent.models import lookup_model
from agent.spending.periods import Caps, SpendFor
from agent.tokens import Calibration
from gateway.compaction.compactor import CompactionReport, Compactor
from gateway.compaction.triggers import CompactionPolicy
from gateway.jobs.maintenance import compact_idle_sessions, purge_archive, rollup_usage
from gateway.metrics import Metrics
from gateway.spending.budget import Budget
from gateway.store import CallRecord, ChatLocks, SessionRecord, Store
from gateway.store.spend.ledger import Refused, SpendLedger
from tests.agent.compressor_support import ScriptedSummarizer, make, pad
from tests.gateway.store.helpers import append_one, msg, new_chat

WINDOW = 20_000
POLICY = CompactionPolicy(
    enabled=True,
    context_length=WINDOW,
    hygiene_threshold=0.85,
    cache_aware_share=0.35,
    proactive_share=0.60,
    idle=timedelta(minutes=30),
)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def clocked(db_url: str) -> AsyncIterator[tuple[Store, Clock]]:
    clock = Clock()
    store = await Store.open(db_url, clock=clock)
    yield store, clock
    await store.close()


def engines(summarizer: ScriptedSummarizer) -> Any:
    def make_engine(session: SessionRecord, pins: Sequence[str] = ()) -> ContextEngine:
        return make(
            summarizer,
            context_length=WINDOW,
            protect_last_n=4,
            state=EngineState.from_json(session.engine_state),
        )

    return make_engine


async def run_job(
    store: Store,
    locks: ChatLocks,
    summarizer: ScriptedSummarizer,
    now: datetime,
    metrics: Metrics | None = None,
    budget: Budget | None = None,
    calibration: Calibration | None = None,
) -> list[CompactionReport]:
    model = lookup_model("claude-sonnet-4-6", context_override=WINDOW)
    calibration = calibration or Calibration(model.name)
    loop = LoopConfig(model=model, calibration=calibration)
    return await compact_idle_sessions(
        store=store,
        locks=locks,
        compactor=Compactor(store=store, loop=loop, metrics=metrics),
        make_engine=engines(summarizer),
        policy=POLICY,
        now=now,
        budget=budget,
        calibration=calibration,
    )


async def chatter(store: Store, session: int, messages: int, tokens_each: int) -> None:
    for i in range(messages):
        text = pad(f"evening message {i}", tokens_each)
        await append_one(
            store, session, msg(text, role="user" if i % 2 == 0 else "assistant", tokens=tokens_each)
        )


async def test_idle_sessions_are_compacted_overnight_once(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat_big, big = await new_chat(store, "1")
    await chatter(store, big, 30, 450)  # 13.5K of a 20K window: 67%
    _, small = await new_chat(store, "2")
    await chatter(store, small, 10, 200)  # 10%
    clock.now += timedelta(hours=8)
    summarizer = ScriptedSummarizer()
    locks = ChatLocks(store)
    metrics = Metrics()

    reports = await run_job(store, locks, summarizer, clock.now, metrics)

    assert [(r.trigger, r.outcome.value, r.changed) for r in reports] == [("scheduled", "ok", True)]
    assert metrics.compactions.labels(trigger="scheduled", outcome="ok")._value.get() == 1
    window = await store.load_window(big)
    assert [m.state for m in window].count("summary") == 1
    assert len(window) < 30
    stats = await store.chat_stats(chat_big)
    assert stats.compactions == {("scheduled", "ok"): 1}
    assert len(await store.load_window(small)) == 10  # below both shares: untouched
    assert len(summarizer.requests) == 1

    # The next run finds nothing new to do.
    again = await run_job(store, locks, summarizer, clock.now + timedelta(hours=1))
    assert again == []
    await locks.close()


async def test_the_idle_job_counts_a_session_as_a_turn_would_with_the_learned_calibration(
    clocked: tuple[Store, Clock],
) -> None:
    store, clock = clocked
    _, session = await new_chat(store, "1")
    await chatter(store, session, 16, 400)  # 6.4K estimated of a 20K window: 32%, below every share
    clock.now += timedelta(hours=8)
    summarizer = ScriptedSummarizer()
    locks = ChatLocks(store)
    assert await run_job(store, locks, summarizer, clock.now) == []

    # The API has been counting 30% more than the estimates: a turn would see 42%, past the cache-aware
    # share with the cache long expired, and so does the job.
    learned = Calibration("claude-sonnet-4-6", factor=1.3, samples=12)
    reports = await run_job(store, locks, summarizer, clock.now, calibration=learned)
    assert [(r.trigger, r.changed) for r in reports] == [("scheduled", True)]
    await locks.close()


async def test_a_chat_whose_budget_is_spent_is_not_compacted_in_the_background(
    clocked: tuple[Store, Clock],
) -> None:
    store, clock = clocked
    spent_chat, spent = await new_chat(store, "1")
    await chatter(store, spent, 30, 450)
    _, other = await new_chat(store, "2")
    await chatter(store, other, 30, 450)
    clock.now += timedelta(hours=8)
    budget = Budget(SpendLedger(store.engine, worker="w", clock=clock), Caps(chat_day=1.0), clock=clock)
    limits = budget.limits(SpendFor(spent_chat))
    assert isinstance(await budget.ledger.reserve(limits, 5.0, purpose="reply"), Refused)  # spent
    summarizer = ScriptedSummarizer()
    locks = ChatLocks(store)

    reports = await run_job(store, locks, summarizer, clock.now, budget=budget)

    assert [r.changed for r in reports] == [True]
    assert len(summarizer.requests) == 1
    assert [m.state for m in await store.load_window(spent)].count("summary") == 0
    assert [m.state for m in await store.load_window(other)].count("summary") == 1
    await locks.close()


async def test_the_idle_job_compacts_unmentioned_group_chatter(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat, session = await new_chat(store, "-300")
    await append_one(store, session, msg("@bot hello everyone", tokens=20))
    await append_one(store, session, msg("Hello! How can I help?", role="assistant", tokens=20))
    for i in range(40):  # nobody mentions the bot: one stored user row each, no reply in between
        await append_one(store, session, msg(pad(f"chatter {i}", 320), tokens=320, author=f"u{i % 3}"))
    clock.now += timedelta(hours=8)
    summarizer = ScriptedSummarizer()
    locks = ChatLocks(store)

    reports = await run_job(store, locks, summarizer, clock.now)

    assert [(r.trigger, r.outcome.value, r.changed) for r in reports] == [("scheduled", "ok", True)]
    window = await store.load_window(session)
    assert [m.text for m in window[:2]] == ["@bot hello everyone", "Hello! How can I help?"]
    assert [m.state for m in window].count("summary") == 1
    archived = await store.chat_stats(chat)
    assert archived.archived_messages > 20
    assert "chatter 0" in summarizer.requests[0].instructions
    await locks.close()


async def test_cache_aware_compaction_waits_for_the_cache_to_expire(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat, session = await new_chat(store)
    await chatter(store, session, 20, 400)  # 8K: 40%, above the cache-aware share only
    last = (await store.load_window(session))[-1].id
    call = CallRecord(
        model="claude-sonnet-4-6",
        purpose="reply",
        input_tokens=8000,
        output_tokens=10,
        cache_creation_tokens=0,
        cache_read_tokens=0,
        latency_ms=1,
        cost_usd=0.01,
        cache_ttl="1h",
    )
    await store.record_call(session, chat, call, last_message_id=last)
    await store.finish_turn(session, [], CacheState((CachedPrefix(last, "1h", clock.now),)).to_json())
    summarizer = ScriptedSummarizer()
    locks = ChatLocks(store)

    warm = clock.now + timedelta(minutes=45)  # idle, but the 1h cache is still readable
    assert await run_job(store, locks, summarizer, warm) == []
    cold = clock.now + timedelta(minutes=61)
    reports = await run_job(store, locks, summarizer, cold)
    assert [r.trigger for r in reports] == ["scheduled"]
    assert "summary" in [m.state for m in await store.load_window(session)]
    await locks.close()


async def test_retention_keeps_everything_by_default_and_purges_when_set(
    clocked: tuple[Store, Clock],
) -> None:
    store, clock = clocked
    summarizer = ScriptedSummarizer()
    _, session = await new_chat(store)
    await chatter(store, session, 30, 450)
    clock.now += timedelta(hours=1)
    locks = ChatLocks(store)
    await run_job(store, locks, summarizer, clock.now)
    await locks.close()
    window_before = [m.id for m in await store.load_window(session)]

    later = clock.now + timedelta(days=100)
    assert await purge_archive(store=store, retention_days=0, now=later) == 0
    assert await purge_archive(store=store, retention_days=120, now=later) == 0
    deleted = await purge_archive(store=store, retention_days=30, now=later)
    assert deleted == 30 - (len(window_before) - 1)  # every archived row, and only those
    assert [m.id for m in await store.load_window(session)] == window_before


async def test_rollup_covers_yesterday_and_today(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    chat, session = await new_chat(store)
    call = CallRecord(
        model="claude-sonnet-4-6",
        purpose="reply",
        input_tokens=10,
        output_tokens=5,
        cache_creation_tokens=0,
        cache_read_tokens=0,
        latency_ms=1,
        cost_usd=0.02,
        cache_ttl="5m",
    )
    await store.record_call(session, chat, call)  # 1 March, 22:00
    clock.now += timedelta(hours=3)  # 2 March, 01:00
    await store.record_call(session, chat, call)
    assert await rollup_usage(store=store, now=clock.now) == 2
    assert [r.calls for r in await store.daily_usage(date(2026, 3, 1))] == [1]
    assert [r.calls for r in await store.daily_usage(date(2026, 3, 2))] == [1]

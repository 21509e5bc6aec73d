"""The scheduled jobs' bodies: plain async functions with explicit dependencies, no scheduler in sight.

- `compact_idle_sessions`: compacts idle sessions in the background (proactive above one share of the
  window, cache-aware above a lower share once the prompt cache expired), so the next message does not
  wait for a summary;
- `purge_archive`: deletes archived messages past the retention age (never active or summary rows);
- `rollup_usage`: upserts the daily usage table from the usage log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from agent.context_engine import ContextEngine
from gateway.cache_policy import decide_compaction
from gateway.compaction import CompactionReport, compact_session
from gateway.scheduler import JobSpec
from gateway.store.lock import ChatLocks
from gateway.store.repository import Store
from gateway.window import build_window

logger = logging.getLogger(__name__)

EngineFactory = Callable[[dict[str, Any] | None], ContextEngine]
CompactionObserver = Callable[[CompactionReport], None]

SCHEDULED = "scheduled"


@dataclass(frozen=True, slots=True)
class IdleCompaction:
    """What `compact_idle_sessions` needs from the settings and the model."""

    enabled: bool
    context_length: int
    idle: timedelta
    proactive_share: float
    cache_aware_share: float
    batch: int = 20
    """Sessions handled per run at most; the next run picks up the rest."""


async def compact_idle_sessions(
    *,
    store: Store,
    locks: ChatLocks,
    make_engine: EngineFactory,
    config: IdleCompaction,
    now: datetime,
    observe: CompactionObserver | None = None,
) -> list[CompactionReport]:
    """Compact idle sessions that are worth it now; returns the reports of those that ran."""
    if not config.enabled:
        return []
    min_share = min(config.proactive_share, config.cache_aware_share)
    candidates = await store.idle_sessions(
        idle_since=now - config.idle,
        min_tokens=int(config.context_length * min_share),
        limit=config.batch,
    )
    reports: list[CompactionReport] = []
    for candidate in candidates:
        if candidate.chat_pk in locks.held_keys():
            logger.debug("chat %s is busy; scheduled compaction skipped", candidate.chat_pk)
            continue
        async with locks.hold(candidate.chat_pk):
            report = await _compact_one(store, make_engine, config, candidate.session_pk, now)
        if report is not None:
            reports.append(report)
            if observe is not None:
                observe(report)
    logger.info("idle compaction: %d candidate(s), %d compacted", len(candidates), len(reports))
    return reports


async def _compact_one(
    store: Store, make_engine: EngineFactory, config: IdleCompaction, session_pk: int, now: datetime
) -> CompactionReport | None:
    # Re-read under the chat lock: a turn may have run (and compacted) since the scan.
    state = await store.cache_state(session_pk)
    session = await store.get_session(session_pk)
    if not session.active or (
        state.last_activity_at is not None and state.last_activity_at >= now - config.idle
    ):
        return None
    decision = decide_compaction(
        enabled=True,
        message_count=state.message_count,
        context_tokens=state.context_tokens,
        context_length=config.context_length,
        last_call_at=state.last_call_at,
        last_ttl=state.last_ttl,
        now=now,
        cache_aware_share=config.cache_aware_share,
        proactive_share=config.proactive_share,
    )
    if not decision.fire:
        return None
    logger.info("scheduled compaction of session %s: %s", session_pk, decision.reason)
    rows = await store.load_window(session_pk)
    items = build_window(rows)
    report, _ = await compact_session(
        store,
        make_engine(session.engine_state),
        session_pk=session_pk,
        messages=[i.message for i in items],
        refs=[i.ids for i in items],
        trigger=SCHEDULED,
        force=True,
    )
    return report


async def purge_archive(*, store: Store, retention_days: int, now: datetime) -> int:
    """Delete archived messages older than `retention_days` (0 keeps them forever); returns the count."""
    if retention_days <= 0:
        return 0
    cutoff = now - timedelta(days=retention_days)
    total = 0
    while True:
        deleted = await store.delete_archived_before(cutoff)
        total += deleted
        if deleted == 0:
            break
    logger.info("archive retention: deleted %d archived message(s) older than %s", total, cutoff.date())
    return total


async def rollup_usage(*, store: Store, now: datetime) -> int:
    """Roll up yesterday (final now) and today (so far) into the daily usage table; returns rows written."""
    today: date = now.date()
    written = 0
    for day in (today - timedelta(days=1), today):
        written += await store.rollup_usage_day(day)
    logger.info("usage rollup: %d row(s) for %s and %s", written, today - timedelta(days=1), today)
    return written


Clock = Callable[[], datetime]
IDLE_SCAN_EVERY = timedelta(minutes=5)
RETENTION_EVERY = timedelta(hours=6)
ROLLUP_EVERY = timedelta(hours=1)


def standard_jobs(
    *,
    store: Store,
    locks: ChatLocks,
    make_engine: EngineFactory,
    idle: IdleCompaction,
    retention_days: int,
    clock: Clock,
    observe: CompactionObserver | None = None,
) -> list[JobSpec]:
    """The gateway's jobs: idle compaction, archive retention (if an age is set) and the usage rollup."""

    async def compaction_job() -> None:
        await compact_idle_sessions(
            store=store, locks=locks, make_engine=make_engine, config=idle, now=clock(), observe=observe
        )

    async def retention_job() -> None:
        await purge_archive(store=store, retention_days=retention_days, now=clock())

    async def rollup_job() -> None:
        await rollup_usage(store=store, now=clock())

    specs = [
        JobSpec("idle-compaction", compaction_job, min(IDLE_SCAN_EVERY, idle.idle)),
        JobSpec("usage-rollup", rollup_job, ROLLUP_EVERY),
    ]
    if retention_days > 0:
        specs.append(JobSpec("archive-retention", retention_job, RETENTION_EVERY))
    return specs

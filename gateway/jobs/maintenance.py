"""The scheduled jobs' bodies: plain async functions with explicit dependencies, no scheduler in sight.

- `compact_idle_sessions`: compacts idle sessions in the background (proactive above one share of the
  window, cache-aware above a lower share once the prompt cache expired), so the next message does not
  wait for a summary;
- `purge_archive`: deletes archived messages past the retention age (never active or summary rows);
- `rollup_usage`: upserts the daily usage table from the usage log;
- the spend sweep: holds a stopped worker left open count as spent (`gateway.store.spend.ledger`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, datetime, timedelta

from agent.caching.plan import CacheState
from agent.spending.periods import SpendFor
from agent.tokens import Calibration
from gateway.compaction.compactor import CompactionReport, Compactor, EngineFactory
from gateway.compaction.triggers import CompactionPolicy
from gateway.jobs.cache_keeper import SCAN_EVERY as KEEPALIVE_SCAN_EVERY
from gateway.jobs.scheduler import JobBody, JobSpec
from gateway.spending.budget import Budget, spending_for
from gateway.store import ChatLocks, Store

logger = logging.getLogger(__name__)

IDLE_BATCH = 20
"""Sessions handled per run at most; the next run picks up the rest."""


async def compact_idle_sessions(
    *,
    store: Store,
    locks: ChatLocks,
    compactor: Compactor,
    make_engine: EngineFactory,
    policy: CompactionPolicy,
    now: datetime,
    batch: int = IDLE_BATCH,
    budget: Budget | None = None,
    calibration: Calibration | None = None,
) -> list[CompactionReport]:
    """Compact idle sessions that are worth it now; returns the reports of those that ran. Sizes are
    counted as a turn counts them (`calibration`: the model's learned correction of the estimates), so
    the idle job and the turn agree on how full a session is."""
    if not policy.enabled:
        return []
    factor = calibration.factor if calibration is not None else 1.0
    candidates = await store.idle_sessions(
        idle_since=now - policy.idle,
        min_tokens=int(policy.context_length * _lowest_share(policy) / factor),
        limit=batch,
    )
    calibrate = calibration.apply if calibration is not None else None
    reports: list[CompactionReport] = []
    for candidate in candidates:
        if candidate.chat_pk in locks.held_keys():
            logger.debug("chat %s is busy; scheduled compaction skipped", candidate.chat_pk)
            continue
        async with locks.hold(candidate.chat_pk):
            # Re-read under the chat lock: a turn may have run (and compacted) since the scan.
            session = await store.get_session(candidate.id)
            cache = CacheState.from_json(session.cache_state)
            decision = policy.when_idle(session, cache, now=now, calibrate=calibrate)
            if not session.active or decision.trigger is None:
                continue
            who = SpendFor(session.chat_pk)
            spent = await budget.spent(who) if budget is not None else None
            if spent is not None:  # the next turn compacts it once there is budget again
                logger.info("scheduled compaction of session %s skipped: %s", session.id, spent)
                continue
            logger.info("scheduled compaction of session %s: %s", session.id, decision.reason)
            pins = [p.text for p in await store.pins(session.chat_pk)]
            engine = make_engine(session, pins)
            with spending_for(who):
                reports.append(await compactor.compact(session, engine, trigger=decision.trigger))
    logger.info("idle compaction: %d candidate(s), %d compacted", len(candidates), len(reports))
    return reports


def _lowest_share(policy: CompactionPolicy) -> float:
    shares = [policy.proactive_share]
    if policy.cache_aware_share is not None:
        shares.append(policy.cache_aware_share)
    return min(shares)


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
SPEND_SWEEP_EVERY = timedelta(minutes=5)
BUDGET_RESET_EVERY = timedelta(minutes=5)
"""How soon after a budget resets the messages held for it are answered, at most."""


def job_intervals(
    *,
    idle: timedelta,
    retention_days: int,
    keeps_alive: bool,
    answers_after_reset: bool = False,
    reminders_every: timedelta | None = None,
) -> dict[str, timedelta]:
    """Which jobs a gateway with these settings runs, and how often (`doctor` lists them too); the
    reminders ticker runs when `reminders_every` is given."""
    every = {
        "idle-compaction": min(IDLE_SCAN_EVERY, idle),
        "usage-rollup": ROLLUP_EVERY,
        "spend-sweep": SPEND_SWEEP_EVERY,
    }
    if retention_days > 0:
        every["archive-retention"] = RETENTION_EVERY
    if keeps_alive:
        every["cache-keepalive"] = KEEPALIVE_SCAN_EVERY
    if answers_after_reset:
        every["budget-reset"] = BUDGET_RESET_EVERY
    if reminders_every is not None:
        every["reminders"] = reminders_every
    return every


def standard_jobs(
    *,
    store: Store,
    locks: ChatLocks,
    compactor: Compactor,
    make_engine: EngineFactory,
    policy: CompactionPolicy,
    retention_days: int,
    keep_alive: JobBody | None,
    clock: Clock,
    budget: Budget | None = None,
    answer_after_reset: JobBody | None = None,
    calibration: Calibration | None = None,
    reminders: tuple[JobBody, timedelta] | None = None,
) -> list[JobSpec]:
    """The gateway's jobs: idle compaction, the usage rollup, the sweep of holds a dead worker left,
    archive retention (if an age is set), the cache keep-alive and the answers held for a budget's
    reset and the reminders ticker with its interval (if given)."""

    async def compaction_job() -> None:
        await compact_idle_sessions(
            store=store,
            locks=locks,
            compactor=compactor,
            make_engine=make_engine,
            policy=policy,
            now=clock(),
            budget=budget,
            calibration=calibration,
        )

    async def sweep_job() -> None:
        if budget is not None:
            swept = await budget.ledger.sweep()
            if swept:
                logger.warning(
                    "spend: %d hold(s) of calls a stopped worker left open counted as spent", swept
                )

    async def retention_job() -> None:
        await purge_archive(store=store, retention_days=retention_days, now=clock())

    async def rollup_job() -> None:
        await rollup_usage(store=store, now=clock())

    bodies: dict[str, JobBody] = {
        "idle-compaction": compaction_job,
        "usage-rollup": rollup_job,
        "spend-sweep": sweep_job,
        "archive-retention": retention_job,
    }
    if keep_alive is not None:
        bodies["cache-keepalive"] = keep_alive
    if answer_after_reset is not None:
        bodies["budget-reset"] = answer_after_reset
    if reminders is not None:
        bodies["reminders"] = reminders[0]
    every = job_intervals(
        idle=policy.idle,
        retention_days=retention_days,
        keeps_alive=keep_alive is not None,
        answers_after_reset=answer_after_reset is not None,
        reminders_every=reminders[1] if reminders is not None else None,
    )
    return [JobSpec(name, bodies[name], interval) for name, interval in every.items()]

"""Replay a trace through the real gateway in simulated time.

The in-process `Gateway` (pipeline, store, turn runner, agent loop, real `AnthropicClient`) talks to the
fake Anthropic API over HTTP on 127.0.0.1. One simulated clock drives the store's timestamps and the
fake's prefix cache, so cache expiry and idle times follow the trace while days replay in seconds.
Each message is handled to completion (its turn included) before the clock moves to the next one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agent.llm import AnthropicClient
from bench.oracle import SentRequest
from bench.traces import START, Event
from gateway.app.gateway import Gateway
from gateway.config import Settings
from gateway.jobs.cache_keeper import SCAN_EVERY as KEEPALIVE_SCAN_EVERY
from gateway.jobs.maintenance import IDLE_SCAN_EVERY, compact_idle_sessions, job_intervals
from gateway.store import Store
from tests.fakes.anthropic import FakeAnthropic
from tests.support.memory_adapter import DirectMemoryAdapter, chat_ref, incoming

API_KEY = "bench-key"


class SimClock:
    """Seconds since the trace start, readable as a monotonic float or as an aware UTC datetime."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def monotonic(self) -> float:
        return self.seconds

    def utc(self) -> datetime:
        return START + timedelta(seconds=self.seconds)


def bench_settings(database_url: str, base_url: str, **overrides: Any) -> Settings:
    """Settings for a benchmark: no per-user rate limit or daily budget (a trace replays days in
    seconds), everything else at the project defaults unless overridden."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "anthropic_api_key": API_KEY,
        "anthropic_base_url": base_url,
        "limits": {"user_messages_per_minute": 1_000_000, "chat_daily_budget_usd": 0.0},
        "log_level": "WARNING",
        "gateway_allow_all_users": True,
        **overrides,
    }
    return Settings(_env_file=None, **values)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    requests: list[SentRequest]
    replies: int
    wall_s: float
    min_cacheable: dict[str, int]
    scheduled_compactions: int
    server_compactions: int = 0
    """Calls in which the API compacted the conversation (server-side compaction)."""
    summary_calls: int = 0
    """Summary calls of the built-in compressor."""
    refreshes: int = 0
    """Cache keep-alive refreshes (`max_tokens: 0` calls), the trailing ones included."""


def require_all_answered(fake: FakeAnthropic, during: str) -> None:
    """Raise if any call to the fake API failed: a benchmark's figures are only worth its whole run."""
    failed = [r for r in fake.requests if r.status != 200]
    if failed:
        first = failed[0]
        raise RuntimeError(f"{len(failed)} API call(s) failed {during}, first: {first.kind} ({first.status})")


SCAN_EVERY = IDLE_SCAN_EVERY.total_seconds()
"""The idle-compaction job's period in the running gateway at the default idle time (30 minutes)."""


async def run_idle_scan(gateway: Gateway, at: float, clock: SimClock, fake: FakeAnthropic) -> int:
    """Run the idle-compaction job body once at simulated time `at`; returns compactions done."""
    clock.seconds = at
    fake.set_time(at)
    reports = await compact_idle_sessions(
        store=gateway.store,
        locks=gateway.locks,
        compactor=gateway.compactor,
        make_engine=gateway.kit.engine,
        policy=gateway.policy,
        now=clock.utc(),
    )
    return len(reports)


KEEPALIVE_TRAIL_S = 6 * 3600.0
"""How long after the trace's last message the jobs keep running (the keep-alive's refreshes then are
paid for nothing, as they would be)."""


async def _next_look(gateway: Gateway) -> float | None:
    """When (trace seconds) the keep-alive job next has a session to look at (the store keeps when
    each is due); None when none has."""
    look = await gateway.store.earliest_cache_look()
    return None if look is None else (look - START).total_seconds()


def _tick_after(at: float, every: float) -> float:
    """The first run of a job with period `every` strictly after `at` (runs at every multiple of it)."""
    return at - at % every + every


def _tick_from(at: float, every: float) -> float:
    """The first run at or after `at`."""
    return at if at % every == 0 else _tick_after(at, every)


@dataclass
class Jobs:
    """The gateway's idle-compaction and keep-alive jobs run as its scheduler runs them, in simulated
    time: each at every multiple of its interval (`gateway.jobs.maintenance.job_intervals`, the
    scheduler's first run one interval after the gateway starts at trace time 0), in time order, the
    idle job first when both are due at once (the gateway adds it first; its trigger is created first).

    Runs that provably find nothing are skipped, to keep days of trace fast: a keep-alive run before the
    earliest look any session waits for (`Store.earliest_cache_look`), and every idle run of a quiet
    spell in which no session could be a candidate (checked once per spell with the candidate query at
    the spell's end: between two messages no session's size or last activity changes, so the candidates
    of an earlier run are a subset of those)."""

    gateway: Gateway
    clock: SimClock
    fake: FakeAnthropic
    keep_alive: bool
    idle_every: float
    keepalive_every: float
    scheduled: int = 0
    refreshes: int = 0

    @classmethod
    def of(cls, gateway: Gateway, clock: SimClock, fake: FakeAnthropic) -> Jobs:
        settings = gateway.settings
        keeps_alive = settings.prompt_caching.keeps_alive
        every = job_intervals(
            idle=gateway.policy.idle,
            retention_days=settings.scheduler.archive_retention_days,
            keeps_alive=keeps_alive,
        )
        keepalive = every.get("cache-keepalive", KEEPALIVE_SCAN_EVERY)
        return cls(
            gateway,
            clock,
            fake,
            keeps_alive,
            every["idle-compaction"].total_seconds(),
            keepalive.total_seconds(),
        )

    async def run_until(self, since: float, until: float) -> None:
        """Every run in (since, until], in time order."""
        idle_at = _tick_after(since, self.idle_every)
        keep_at = _tick_after(since, self.keepalive_every)
        idle_due = await self._candidates_by(until)
        inf = float("inf")
        while True:
            at_idle = idle_at if idle_due and idle_at <= until else inf
            at_keep = inf
            if self.keep_alive and keep_at <= until:
                look = await _next_look(self.gateway)
                if look is not None:
                    at_keep = max(keep_at, _tick_from(look, self.keepalive_every))
                    at_keep = at_keep if at_keep <= until else inf
            if at_idle == inf and at_keep == inf:
                break
            if at_idle <= at_keep:
                self._at(at_idle)
                self.scheduled += await run_idle_scan(self.gateway, at_idle, self.clock, self.fake)
                idle_at = at_idle + self.idle_every
            else:
                self._at(at_keep)
                self.refreshes += len(await self.gateway.keeper.run(self.clock.utc()))
                keep_at = at_keep + self.keepalive_every

    def _at(self, at: float) -> None:
        self.clock.seconds = at
        self.fake.set_time(at)

    async def _candidates_by(self, until: float) -> bool:
        """Whether the idle job's candidate query finds a session at `until` (then it may at earlier
        runs of the spell too; if not, at none of them)."""
        policy = self.gateway.policy
        if not policy.enabled:
            return False
        shares = [policy.proactive_share]
        if policy.cache_aware_share is not None:
            shares.append(policy.cache_aware_share)
        # the body's own floor (`compact_idle_sessions`: the lowest share of the window it acts on)
        found = await self.gateway.store.idle_sessions(
            idle_since=START + timedelta(seconds=until) - policy.idle,
            min_tokens=int(policy.context_length * min(shares)),
            limit=1,
        )
        return bool(found)


async def replay(
    events: Sequence[Event],
    *,
    database_url: str,
    settings_overrides: dict[str, Any],
    jobs: bool = False,
    prepare: Callable[[FakeAnthropic], None] | None = None,
) -> ReplayResult:
    """Replay `events`; with `jobs`, the idle-compaction and keep-alive jobs run as the gateway's
    scheduler runs them (`Jobs`; the scheduler itself stays off: its runs happen at simulated times
    instead), until KEEPALIVE_TRAIL_S after the last message. `prepare` sets up the fake API before the
    gateway starts."""
    clock = SimClock()
    started = time.perf_counter()
    logging.getLogger("gateway").setLevel(logging.WARNING)
    async with FakeAnthropic(api_key=API_KEY, clock=lambda: 0.0, echo_limit=600) as fake:
        if prepare is not None:
            prepare(fake)
        overrides = {"scheduler": {"enabled": False}, **settings_overrides}
        settings = bench_settings(database_url, fake.base_url, **overrides)
        store = await Store.open(database_url, clock=clock.utc)
        llm = AnthropicClient(api_key=API_KEY, base_url=fake.base_url)
        adapter = DirectMemoryAdapter()
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        gateway.clock = clock.utc  # cache-expiry decisions before a request follow the trace
        runs = Jobs.of(gateway, clock, fake)
        last = 0.0
        try:
            await gateway.start()
            for n, event in enumerate(events):
                if jobs:  # the jobs' runs since the previous message, in time order
                    await runs.run_until(last, event.at)
                    last = event.at
                clock.seconds = event.at
                fake.set_time(event.at)
                for calls in event.tool_rounds:
                    fake.script_reply(tool_uses=list(calls))
                chat = chat_ref(event.chat_id, group=event.group)
                await adapter.deliver(
                    incoming(
                        chat,
                        user_id=event.user_id,
                        name=event.name,
                        text=event.text,
                        message_id=f"m{n}",
                        sent_at=clock.utc(),
                        mentions_bot=event.addressed,
                    )
                )
                await gateway.tasks.drain()
            if jobs and events:  # the runs after the trace's last message (its refreshes are paid too)
                await runs.run_until(last, events[-1].at + KEEPALIVE_TRAIL_S)
        finally:
            await gateway.stop()
            await llm.close()
            await store.close()
        require_all_answered(fake, "during the replay")
        sent = [SentRequest(r.at, r.body, r.usage) for r in fake.requests if r.usage is not None]
        floors = {name: spec.min_cacheable for name, spec in fake.models.items()}
        compacted = sum(1 for r in fake.requests if r.compacted)
        summaries = sum(1 for r in fake.requests if r.kind == "summary")
        return ReplayResult(
            sent,
            len(adapter.sent),
            time.perf_counter() - started,
            floors,
            runs.scheduled,
            compacted,
            summaries,
            runs.refreshes,
        )

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
from gateway.jobs.maintenance import compact_idle_sessions
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


SCAN_EVERY = 300.0
"""The idle-compaction job's period in the running gateway (`gateway.jobs.maintenance.IDLE_SCAN_EVERY`)."""


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
"""How long after the trace's last message the keep-alive job keeps running (its refreshes then are
paid for nothing, as they would be)."""


async def _next_look(gateway: Gateway) -> float | None:
    """When (trace seconds) the keep-alive job next has a session to look at (the store keeps when
    each is due); None when none has."""
    look = await gateway.store.earliest_cache_look()
    return None if look is None else (look - START).total_seconds()


async def run_keepalive_scans(
    gateway: Gateway, since: float, until: float, clock: SimClock, fake: FakeAnthropic
) -> tuple[float, int]:
    """Run the cache keep-alive job body at the scan times in (since, until] at which it could find an
    entry to look at (the others would find nothing: skipped, to keep days of trace fast); returns the
    last scan time and the refreshes sent."""
    step = KEEPALIVE_SCAN_EVERY.total_seconds()
    at = since - since % step + step
    sent = 0
    last = since
    while at <= until:
        clock.seconds = at
        look = await _next_look(gateway)
        if look is None:
            break
        if look > at:
            at = look - look % step + (step if look % step else 0.0)
            continue
        fake.set_time(at)
        sent += len(await gateway.keeper.run(clock.utc()))
        last = at
        at += step
    clock.seconds = max(last, since)
    return last, sent


async def replay(
    events: Sequence[Event],
    *,
    database_url: str,
    settings_overrides: dict[str, Any],
    jobs: bool = False,
    prepare: Callable[[FakeAnthropic], None] | None = None,
) -> ReplayResult:
    """Replay `events`; with `jobs`, the idle-compaction job runs at the last scan time before each
    event (the scheduler itself stays off: job bodies run at simulated times instead). `prepare` sets up
    the fake API before the gateway starts."""
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
        scheduled = 0
        refreshes = 0
        keep_alive = jobs and settings.prompt_caching.keeps_alive
        last_scan = last_keepalive = events[0].at if events else 0.0
        try:
            await gateway.start()
            for n, event in enumerate(events):
                scan = event.at - event.at % SCAN_EVERY
                if keep_alive:  # the keep-alive job's runs since the previous event, in time order
                    last_keepalive, sent = await run_keepalive_scans(
                        gateway, last_keepalive, min(scan, event.at), clock, fake
                    )
                    refreshes += sent
                if jobs and scan > last_scan:
                    scheduled += await run_idle_scan(gateway, scan, clock, fake)
                    last_scan = scan
                if keep_alive:
                    last_keepalive, sent = await run_keepalive_scans(
                        gateway, max(last_keepalive, scan), event.at, clock, fake
                    )
                    refreshes += sent
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
            if keep_alive and events:  # the refreshes after the trace's last message are paid too
                _, sent = await run_keepalive_scans(
                    gateway, last_keepalive, events[-1].at + KEEPALIVE_TRAIL_S, clock, fake
                )
                refreshes += sent
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
            scheduled,
            compacted,
            summaries,
            refreshes,
        )

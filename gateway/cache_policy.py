"""Per-chat prompt-cache decisions (pure): the TTL for the next request, and whether to compact now
because the cache has expired.

Once a session's cache entry has expired, its next request writes the whole prefix again whatever we
do, so compacting first adds no cache write and makes that write (and every later read) smaller. A
compaction while the cache is warm would throw away a prefix that is already paid for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from agent.loop import TurnCachePlan
from agent.models import CacheTTL, ModelInfo
from agent.ttl_policy import choose_marker, choose_tail, choose_ttl

CacheMode = Literal["5m", "1h", "auto"]
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
MIN_MESSAGES = 4
"""Below this many messages there is nothing worth summarising."""


def ttl_for_turn(
    mode: CacheMode | None,
    gaps_seconds: Sequence[float],
    *,
    prefix_tokens: int,
    model: ModelInfo,
    elapsed: float | None = None,
    live_prefix: bool = False,
    new_tokens: int | None = None,
) -> CacheTTL | None:
    """The TTL for this chat's next request: fixed, or (auto) the cheapest for its gaps.

    `elapsed` (seconds since the chat's last call), `live_prefix` (that call's cache entry is still
    readable) and `new_tokens` (stored since that call) let `auto` decide for this request's state;
    without them it decides from the chat's gap mix alone. Returns None for "place no cache
    markers"; `mode` None means caching is disabled.
    """
    if mode is None:
        return None
    if mode != "auto":
        return mode
    if elapsed is None:
        return choose_ttl(gaps_seconds, prefix_tokens=prefix_tokens, model=model)
    return choose_marker(
        gaps_seconds,
        elapsed=elapsed,
        live_prefix=live_prefix,
        prompt_tokens=prefix_tokens,
        new_tokens=prefix_tokens if new_tokens is None else new_tokens,
        model=model,
    )


@dataclass(frozen=True, slots=True)
class CachedPrefix:
    """A stored message whose prompt prefix has a cache entry: its TTL and when it was last written
    or read (each restarts the TTL)."""

    message_id: int
    ttl: CacheTTL
    at: datetime


EXPIRY_MARGIN = timedelta(seconds=30)
"""An entry this close to its expiry counts as expired: the request is sent a moment after deciding."""


def plan_turn(
    gaps_seconds: Sequence[float],
    *,
    prefixes: Sequence[CachedPrefix],
    window_ids: Sequence[tuple[int, ...]],
    tokens_after: Callable[[int], int],
    prompt_tokens: int,
    model: ModelInfo,
    now: datetime,
    last_call_at: datetime | None,
) -> TurnCachePlan:
    """The `auto` marker plan of a turn: read every live cached prefix still in the window, and write
    the new tail only when `choose_tail` finds it cheaper (tool rounds inside the turn follow within
    seconds, so they are written with the 5-minute TTL). `tokens_after(id)` is the size of the stored
    messages after message `id`: what an unmarked tail leaves uncached."""
    index_of = {max(ids): i for i, ids in enumerate(window_ids) if ids}
    live = [
        p
        for p in prefixes
        if p.message_id in index_of and now - p.at <= timedelta(seconds=TTL_SECONDS[p.ttl]) - EXPIRY_MARGIN
    ]
    live.sort(key=lambda p: index_of[p.message_id])
    reads = tuple((index_of[p.message_id], p.ttl) for p in live)
    elapsed = None if last_call_at is None else (now - last_call_at).total_seconds()
    newest = live[-1] if live else None
    live_ttl: CacheTTL | None = None
    if newest is not None:
        live_ttl = "1h" if any(p.ttl == "1h" for p in live) else newest.ttl
    tail = choose_tail(
        gaps_seconds,
        elapsed=elapsed,
        live_ttl=live_ttl,
        prompt_tokens=prompt_tokens,
        new_tokens=prompt_tokens if newest is None else tokens_after(newest.message_id),
        model=model,
    )
    return TurnCachePlan(reads=reads, first_tail=tail, round_tail="5m")


def cache_expired(last_call_at: datetime | None, last_ttl: str | None, now: datetime) -> bool:
    """True when no cache entry of this session can still be read (never cached, no markers, or too old)."""
    if last_call_at is None or last_ttl is None:
        return True
    ttl = TTL_SECONDS.get(last_ttl)
    if ttl is None:
        return True
    return now - last_call_at > timedelta(seconds=ttl)


@dataclass(frozen=True, slots=True)
class CompactDecision:
    fire: bool
    reason: str


def decide_compaction(
    *,
    enabled: bool,
    message_count: int,
    context_tokens: int,
    context_length: int,
    last_call_at: datetime | None,
    last_ttl: str | None,
    now: datetime,
    cache_aware_share: float,
    proactive_share: float | None = None,
) -> CompactDecision:
    """Compact ahead of the next request? Cache-aware: above `cache_aware_share` once the cache expired.

    Proactive (background jobs only, `proactive_share` given): above that share whatever the cache state.
    """
    if not enabled:
        return CompactDecision(False, "compression disabled")
    if message_count < MIN_MESSAGES:
        return CompactDecision(False, f"only {message_count} messages")
    share = context_tokens / context_length
    if proactive_share is not None and share >= proactive_share:
        return CompactDecision(True, f"idle at {share:.0%} of the window (>= {proactive_share:.0%})")
    if share < cache_aware_share:
        return CompactDecision(False, f"{share:.0%} of the window (< {cache_aware_share:.0%})")
    if not cache_expired(last_call_at, last_ttl, now):
        return CompactDecision(False, f"{share:.0%} of the window but the prompt cache is still warm")
    return CompactDecision(True, f"cache expired at {share:.0%} of the window (>= {cache_aware_share:.0%})")

"""When a stored session is compacted outside the loop: hygiene at 85% before a turn, cache-aware once
the prompt cache expired, proactive while idle; never below four messages or when disabled."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from agent.caching.plan import CachedPrefix, CacheState
from gateway.compaction.triggers import CompactionPolicy
from gateway.store import SessionRecord

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
POLICY = CompactionPolicy(
    enabled=True,
    context_length=200_000,
    hygiene_threshold=0.85,
    cache_aware_share=0.35,
    proactive_share=0.60,
    idle=timedelta(minutes=30),
)
SESSION = SessionRecord(
    id=1,
    chat_pk=1,
    active=True,
    created_at=NOW,
    ended_at=None,
    active_message_count=40,
    active_tokens=0,
    tokens_since_call=0,
    last_prompt_tokens=None,
    last_call_message_id=None,
    last_call_at=None,
    rolling_summary=None,
    compaction_count=0,
    engine_state={},
    cache_state={},
    last_activity_at=NOW - timedelta(minutes=31),
)


def session(share: float | None = None, **changes: object) -> SessionRecord:
    if share is not None:
        changes.setdefault("active_tokens", int(200_000 * share))
    return dataclasses.replace(SESSION, **changes)  # type: ignore[arg-type]


def warm(ttl: str = "5m", minutes_ago: float = 2) -> CacheState:
    return CacheState((CachedPrefix(7, "1h" if ttl == "1h" else "5m", NOW - timedelta(minutes=minutes_ago)),))


COLD = CacheState()


def test_hygiene_fires_at_its_share_from_the_reported_size_plus_new_messages() -> None:
    below = session(last_prompt_tokens=160_000, tokens_since_call=9_999, active_tokens=500_000)
    at = session(last_prompt_tokens=160_000, tokens_since_call=10_000)
    assert POLICY.before_turn(below, warm(), now=NOW).trigger is None
    decision = POLICY.before_turn(at, warm(), now=NOW)
    assert decision.trigger == "hygiene"
    assert "reported" in decision.reason


def test_hygiene_falls_back_to_the_estimate_and_applies_the_calibration() -> None:
    assert POLICY.before_turn(session(0.85), warm(), now=NOW).trigger == "hygiene"
    assert POLICY.before_turn(session(0.80), warm(), now=NOW).trigger is None
    doubled = POLICY.before_turn(session(0.45), warm(), now=NOW, calibrate=lambda n: 2 * n)
    assert doubled.trigger == "hygiene"


def test_cache_aware_compaction_waits_for_the_cache_to_expire() -> None:
    cold = POLICY.before_turn(session(0.40), warm(minutes_ago=10), now=NOW)
    assert cold.trigger == "scheduled"
    assert "cache expired" in cold.reason
    assert POLICY.before_turn(session(0.40), warm(minutes_ago=2), now=NOW).trigger is None
    assert POLICY.before_turn(session(0.30), COLD, now=NOW).trigger is None  # too small to be worth it
    assert POLICY.before_turn(session(0.40), warm("1h", minutes_ago=30), now=NOW).trigger is None


def test_idle_sessions_compact_proactively_even_with_a_warm_cache() -> None:
    assert POLICY.when_idle(session(0.65), warm("1h", minutes_ago=31), now=NOW).trigger == "scheduled"
    assert POLICY.when_idle(session(0.50), warm("1h", minutes_ago=31), now=NOW).trigger is None
    assert POLICY.when_idle(session(0.50), COLD, now=NOW).trigger == "scheduled"  # cache-aware
    recent = session(0.65, last_activity_at=NOW - timedelta(minutes=5))
    assert POLICY.when_idle(recent, COLD, now=NOW).trigger is None


def test_never_compacts_tiny_or_disabled_sessions() -> None:
    tiny = session(0.95, active_message_count=3)
    assert POLICY.before_turn(tiny, COLD, now=NOW).trigger is None
    assert POLICY.when_idle(tiny, COLD, now=NOW).trigger is None
    off = dataclasses.replace(POLICY, enabled=False)
    assert off.before_turn(session(0.95), COLD, now=NOW).trigger is None

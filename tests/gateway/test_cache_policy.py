"""Per-chat TTL choice and the cache-aware compaction decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent.models import lookup_model
from gateway.cache_policy import cache_expired, decide_compaction, ttl_for_turn

MODEL = lookup_model("claude-sonnet-4-6")
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_auto_picks_the_ttl_the_gaps_pay_for() -> None:
    busy = [30.0, 60.0, 120.0, 45.0]  # replies within minutes
    sparse_hour = [900.0, 1500.0, 2400.0, 600.0]  # every 10-40 minutes
    overnight = [8 * 3600.0, 10 * 3600.0, 9 * 3600.0]  # once a day
    assert ttl_for_turn("auto", busy, prefix_tokens=20_000, model=MODEL) == "5m"
    assert ttl_for_turn("auto", sparse_hour, prefix_tokens=20_000, model=MODEL) == "1h"
    assert ttl_for_turn("auto", overnight, prefix_tokens=20_000, model=MODEL) is None
    # Below the model's minimum cacheable prefix a marker is pointless.
    assert ttl_for_turn("auto", busy, prefix_tokens=10, model=MODEL) is None


def test_fixed_and_disabled_modes_ignore_the_gaps() -> None:
    sparse = [8 * 3600.0] * 5
    assert ttl_for_turn("5m", sparse, prefix_tokens=20_000, model=MODEL) == "5m"
    assert ttl_for_turn("1h", sparse, prefix_tokens=20_000, model=MODEL) == "1h"
    assert ttl_for_turn(None, [30.0] * 5, prefix_tokens=20_000, model=MODEL) is None


def test_cache_expiry_follows_the_ttl_of_the_last_call() -> None:
    assert cache_expired(NOW - timedelta(minutes=6), "5m", NOW)
    assert not cache_expired(NOW - timedelta(minutes=4), "5m", NOW)
    assert not cache_expired(NOW - timedelta(minutes=50), "1h", NOW)
    assert cache_expired(NOW - timedelta(minutes=61), "1h", NOW)
    assert cache_expired(NOW - timedelta(seconds=5), None, NOW)  # no markers: nothing to keep warm
    assert cache_expired(None, None, NOW)


def _decide(share: float, *, minutes_ago: float, ttl: str | None = "5m", proactive: float | None = None):
    return decide_compaction(
        enabled=True,
        message_count=40,
        context_tokens=int(200_000 * share),
        context_length=200_000,
        last_call_at=NOW - timedelta(minutes=minutes_ago),
        last_ttl=ttl,
        now=NOW,
        cache_aware_share=0.35,
        proactive_share=proactive,
    )


def test_compacts_only_when_the_cache_is_cold_and_the_context_is_big_enough() -> None:
    cold = _decide(0.40, minutes_ago=10)
    assert cold.fire
    assert "cache expired" in cold.reason
    assert not _decide(0.40, minutes_ago=2).fire  # warm cache: compaction would waste a paid prefix
    assert not _decide(0.30, minutes_ago=10).fire  # too small to be worth a summary
    assert not _decide(0.40, minutes_ago=30, ttl="1h").fire


def test_proactive_share_fires_even_with_a_warm_cache() -> None:
    assert _decide(0.65, minutes_ago=31, ttl="1h", proactive=0.60).fire
    assert not _decide(0.50, minutes_ago=31, ttl="1h", proactive=0.60).fire


def test_never_compacts_tiny_or_disabled_sessions() -> None:
    common = {
        "context_tokens": 150_000,
        "context_length": 200_000,
        "last_call_at": None,
        "last_ttl": None,
        "now": NOW,
        "cache_aware_share": 0.35,
    }
    assert not decide_compaction(enabled=True, message_count=3, **common).fire  # type: ignore[arg-type]
    assert not decide_compaction(enabled=False, message_count=50, **common).fire  # type: ignore[arg-type]

"""Cache health of a chat: hit ratios from reported usage and the thrash warning."""

from __future__ import annotations

import logging

import pytest

from agent.caching.health import CacheHealth
from agent.usage import Usage

TTL = 300.0
MISS = Usage(input_tokens=200, cache_creation_input_tokens=5_000)
HIT = Usage(input_tokens=200, cache_read_input_tokens=5_000)


def feed(health: CacheHealth, usages: list[Usage], *, start: float = 0.0, gap: float = 60.0) -> None:
    for i, usage in enumerate(usages):
        health.record(usage, cacheable_prefix_sent=True, at=start + i * gap, ttl_seconds=TTL)


def test_hit_ratios_with_worked_numbers() -> None:
    health = CacheHealth("telegram:42")
    assert health.lifetime_hit_ratio is None
    feed(health, [MISS, HIT, HIT])
    # reads 10,000 of (600 input + 5,000 written + 10,000 read)
    assert health.lifetime_hit_ratio == pytest.approx(10_000 / 15_600)
    assert health.recent_hit_ratio == pytest.approx(10_000 / 15_600)


def test_recent_ratio_covers_only_the_last_ten_calls() -> None:
    health = CacheHealth("c")
    feed(health, [HIT] * 10 + [MISS] * 10)
    assert health.recent_hit_ratio == 0.0
    assert health.lifetime_hit_ratio == pytest.approx(50_000 / (20 * 5_200))


def test_three_warm_misses_in_a_row_are_thrashing_and_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    health = CacheHealth("discord:7")
    with caplog.at_level(logging.WARNING, logger="agent.cache_health"):
        feed(health, [MISS, MISS, MISS])
        assert not health.thrashing  # the first call is a cold write, then only two warm misses
        health.record(MISS, cacheable_prefix_sent=True, at=180.0, ttl_seconds=TTL)
        assert health.thrashing
        health.record(MISS, cacheable_prefix_sent=True, at=240.0, ttl_seconds=TTL)
    warnings = [r for r in caplog.records if "thrashing" in r.getMessage()]
    assert len(warnings) == 1
    assert "discord:7" in warnings[0].getMessage()
    assert health.thrash_events == 1


def test_a_hit_ends_thrashing() -> None:
    health = CacheHealth("c")
    feed(health, [MISS] * 4)
    assert health.thrashing
    health.record(HIT, cacheable_prefix_sent=True, at=240.0, ttl_seconds=TTL)
    assert not health.thrashing


def test_misses_after_the_ttl_expired_are_not_thrashing() -> None:
    health = CacheHealth("c")
    feed(health, [MISS] * 6, gap=TTL + 1)
    assert not health.thrashing
    assert health.warm_miss_streak == 0


def test_misses_with_no_cacheable_prefix_are_not_thrashing() -> None:
    health = CacheHealth("c")
    for i in range(6):
        health.record(Usage(input_tokens=300), cacheable_prefix_sent=False, at=i * 10.0, ttl_seconds=TTL)
    assert not health.thrashing


def test_one_hour_ttl_keeps_a_chat_warm_across_longer_gaps() -> None:
    health = CacheHealth("c")
    for i in range(4):
        health.record(MISS, cacheable_prefix_sent=True, at=i * 1_200.0, ttl_seconds=3_600.0)
    assert health.thrashing


def test_state_round_trips_through_a_dict() -> None:
    health = CacheHealth("c")
    feed(health, [MISS, MISS, MISS])
    restored = CacheHealth.from_dict(health.to_dict())
    assert restored.to_dict() == health.to_dict()
    # the restored state continues the streak exactly where it stopped
    restored.record(MISS, cacheable_prefix_sent=True, at=180.0, ttl_seconds=TTL)
    assert restored.thrashing


def test_the_thrash_warning_quotes_the_api_s_reason(caplog: pytest.LogCaptureFixture) -> None:
    health = CacheHealth("chat 9")
    usage = Usage(input_tokens=5_000)
    with caplog.at_level(logging.WARNING, logger="agent.caching.health"):
        for n in range(4):
            health.record(
                usage,
                cacheable_prefix_sent=True,
                at=60.0 * n,
                ttl_seconds=300.0,
                miss_reason="system_changed",
                missed_tokens=4_800,
            )
    assert health.thrashing
    assert "cache diagnostics say system_changed" in caplog.text
    assert "4,800 tokens" in caplog.text
    assert CacheHealth.from_dict(health.to_dict()).last_miss_reason == "system_changed"

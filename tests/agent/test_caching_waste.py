"""Cache waste from consecutive calls' usage: writes never read and prefixes re-sent just after expiry."""

from __future__ import annotations

import pytest

from agent.caching.waste import CacheCall, between, session_waste

MODEL = "claude-sonnet-4-6"  # $3 per million input tokens
PER_TOKEN = 3.0 / 1_000_000


def call(at: float, *, read: int = 0, write: int = 0, uncached: int = 0, ttl: str | None = "5m") -> CacheCall:
    return CacheCall(at, MODEL, uncached, read, write, ttl)  # type: ignore[arg-type]


def test_a_write_read_by_the_next_call_wastes_nothing() -> None:
    waste = between(call(0, write=5_000), call(120, read=5_000, write=300), now=120)
    assert (waste.unread_write_tokens, waste.expired_resend_tokens, waste.usd) == (0, 0, 0.0)


def test_a_write_the_next_call_comes_too_late_for_is_never_read() -> None:
    # 5m write of 5,000 tokens; the next call 7 minutes later writes the whole prompt again
    waste = between(call(0, write=5_000), call(420, write=5_400), now=420)
    assert waste.unread_write_tokens == 5_000
    assert waste.unread_write_usd == pytest.approx(5_000 * 1.25 * PER_TOKEN)
    # and it had just expired (within twice the TTL): 5,000 re-bought at 1.25 instead of read at 0.1
    assert waste.expired_resend_tokens == 5_000
    assert waste.expired_resend_usd == pytest.approx(5_000 * (1.25 - 0.1) * PER_TOKEN)


def test_a_long_break_is_not_an_expired_resend() -> None:
    waste = between(call(0, write=5_000), call(3_000, uncached=5_400, ttl=None), now=3_000)
    assert (waste.unread_write_tokens, waste.expired_resend_tokens) == (5_000, 0)


def test_a_tail_written_beside_an_hour_entry_and_not_read_is_waste() -> None:
    # a 1h call read 8,000 and wrote a 2,000 tail; 20 minutes later only the 8,000 are read
    waste = between(
        call(0, read=8_000, write=2_000, ttl="1h"), call(1_200, read=8_000, write=2_500), now=1_200
    )
    assert waste.unread_write_tokens == 2_000
    assert waste.expired_resend_tokens == 0


def test_the_last_write_counts_once_its_ttl_passed_without_a_call() -> None:
    calls = [call(0, write=4_000, ttl="1h"), call(600, read=4_000, write=500, ttl="1h")]
    assert session_waste(calls, now=1_000).unread_write_tokens == 0  # still alive
    later = session_waste(calls, now=600 + 3_601)
    assert later.unread_write_tokens == 500
    assert later.unread_write_usd == pytest.approx(500 * 2.0 * PER_TOKEN)
    assert later.hit_ratio == pytest.approx(4_000 / 8_500)


def refresh(at: float, *, read: int) -> CacheCall:
    return CacheCall(at, MODEL, 0, read, 0, "5m", refresh=True)


def test_a_refresh_the_next_message_uses_wastes_nothing_and_stays_out_of_the_hit_ratio() -> None:
    # written at 0, refreshed at 4 minutes, read by the next message at 7.5 minutes
    waste = session_waste(
        [call(0, write=5_000), refresh(240, read=5_000), call(450, read=5_000, write=200)], now=450
    )
    assert (waste.unread_write_tokens, waste.expired_resend_tokens) == (0, 0)
    assert (waste.refreshes, waste.refreshes_unused, waste.unused_refresh_usd) == (1, 0, 0.0)
    assert waste.hit_ratio == pytest.approx(5_000 / 10_200)


def test_a_refresh_no_message_came_in_time_for_is_money_kept_alive_for_nothing() -> None:
    waste = session_waste([call(0, write=5_000), refresh(240, read=5_000), call(900, write=5_300)], now=900)
    assert (waste.refreshes, waste.refreshes_unused) == (1, 1)
    assert waste.unused_refresh_usd == pytest.approx(5_000 * 0.1 * PER_TOKEN)
    assert waste.usd == pytest.approx(
        waste.unread_write_usd + waste.expired_resend_usd + waste.unused_refresh_usd
    )


@pytest.mark.parametrize(
    ("model", "read", "per_token"), [("claude-sonnet-5-5", 0.05, 2.0e-6), ("claude-haiku-5-5", 0.1, 0.5e-6)]
)
def test_waste_is_priced_at_the_models_own_cache_prices(model: str, read: float, per_token: float) -> None:
    # 150,000 tokens written for 5 minutes, bought again 7 minutes later: Sonnet 5.5 reads at 0.05x its
    # $2; Haiku 5.5 reads at 0.1x, and a 150,000-token prompt is over its 100K line, so $0.10 x 5 = $0.50
    before = CacheCall(0, model, 0, 0, 150_000, "5m")
    waste = between(before, CacheCall(420, model, 0, 0, 150_400, "5m"), now=420)
    assert waste.unread_write_usd == pytest.approx(150_000 * 1.25 * per_token)
    assert waste.expired_resend_usd == pytest.approx(150_000 * (1.25 - read) * per_token)

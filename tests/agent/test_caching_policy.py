"""The automatic TTL choice, checked against the price model with worked numbers."""

from __future__ import annotations

import pytest

from agent.caching.policy import choose_tail, expected_costs
from agent.models import lookup_model

SONNET = lookup_model("claude-sonnet-4-6")
MINUTE = 60.0


def choose_ttl(gaps: list[float], *, prefix_tokens: int, model: object = SONNET) -> str | None:
    """The TTL for a prompt with nothing cached, from the chat's overall gap mix."""
    return choose_tail(
        gaps, elapsed=None, live_ttl=None, prompt_tokens=prefix_tokens, new_tokens=prefix_tokens, model=SONNET
    )


def test_gaps_of_eight_to_fifty_five_minutes_pick_the_hour() -> None:
    gaps = [m * MINUTE for m in (8, 12, 20, 25, 31, 40, 47, 55)]
    costs = expected_costs(gaps)
    assert (costs.p5, costs.p60) == (0.0, 1.0)
    # 5m: every request writes at 1.25; 1h: every request reads at 0.1; no marker: 1.0
    assert costs.five_minutes == pytest.approx(1.25)
    assert costs.one_hour == pytest.approx(0.1)
    assert choose_ttl(gaps, prefix_tokens=20_000, model=SONNET) == "1h"


def test_gaps_under_four_minutes_pick_five_minutes() -> None:
    gaps = [m * MINUTE for m in (0.5, 1, 1.5, 2, 3, 3.5, 3.9)]
    costs = expected_costs(gaps)
    assert costs.five_minutes == pytest.approx(0.1)
    assert costs.one_hour == pytest.approx(0.1)
    # a tie goes to the shorter TTL, whose occasional misses cost 1.25 instead of 2.0
    assert choose_ttl(gaps, prefix_tokens=20_000, model=SONNET) == "5m"


def test_gaps_over_two_hours_make_no_marker_cheapest() -> None:
    gaps = [m * MINUTE for m in (130, 180, 240, 600, 900)]
    costs = expected_costs(gaps)
    assert (costs.five_minutes, costs.one_hour, costs.none) == pytest.approx((1.25, 2.0, 1.0))
    assert choose_ttl(gaps, prefix_tokens=20_000, model=SONNET) is None


def test_mixed_gaps_with_worked_numbers() -> None:
    # 3 of 10 within 5 min, 6 of 10 within an hour
    gaps = [m * MINUTE for m in (1, 2, 4, 10, 30, 50, 90, 120, 200, 300)]
    costs = expected_costs(gaps)
    assert costs.p5 == pytest.approx(0.3)
    assert costs.p60 == pytest.approx(0.6)
    assert costs.five_minutes == pytest.approx(0.1 * 0.3 + 1.25 * 0.7)  # 0.905
    assert costs.one_hour == pytest.approx(0.1 * 0.6 + 2.0 * 0.4)  # 0.86
    assert costs.best == "1h"


def test_break_even_points() -> None:
    # 5m pays once p5 > 0.25 / 1.15 (about 0.217): 2 of 10 is below, 3 of 10 above
    below = [60.0] * 2 + [7_200.0] * 8
    above = [60.0] * 3 + [7_200.0] * 7
    assert choose_ttl(below, prefix_tokens=20_000, model=SONNET) is None
    assert choose_ttl(above, prefix_tokens=20_000, model=SONNET) == "5m"


def test_prefix_below_the_model_minimum_is_never_marked() -> None:
    gaps = [60.0] * 10
    assert choose_ttl(gaps, prefix_tokens=SONNET.min_cacheable_tokens - 1, model=SONNET) is None
    assert choose_ttl(gaps, prefix_tokens=SONNET.min_cacheable_tokens, model=SONNET) == "5m"


def test_too_few_gaps_fall_back_to_the_default() -> None:
    assert choose_ttl([], prefix_tokens=20_000, model=SONNET) == "5m"
    assert choose_ttl([9_000.0, 9_000.0], prefix_tokens=20_000, model=SONNET) == "5m"
    with pytest.raises(ValueError):
        expected_costs([])


def test_next_gap_odds_follow_the_gap_that_just_elapsed() -> None:
    from agent.caching.policy import PRIOR_WEIGHT, next_gap_odds

    # a working pattern: bursts of quick turns, each burst after a break of two hours or more
    gaps = [m * MINUTE for m in (2, 3, 2, 150, 1, 2, 3, 180, 2, 2, 1, 200)]
    overall = expected_costs(gaps)
    after_break = next_gap_odds(gaps, elapsed=240 * MINUTE)
    # the two breaks followed by another gap were both followed by a 1-minute or 2-minute gap
    assert after_break.samples == 2
    assert after_break.p5 == pytest.approx((2 + PRIOR_WEIGHT * overall.p5) / (2 + PRIOR_WEIGHT))
    in_burst = next_gap_odds(gaps, elapsed=2 * MINUTE)
    # nine burst gaps, followed by six quick ones and three breaks
    assert in_burst.samples == 9
    assert in_burst.p5 == pytest.approx((6 + PRIOR_WEIGHT * overall.p5) / (9 + PRIOR_WEIGHT))
    assert after_break.p5 > overall.p5 > in_burst.p5
    assert next_gap_odds(gaps, elapsed=None).p5 == pytest.approx(overall.p5)


def test_sparse_private_chat_keeps_the_hour_through_the_day() -> None:
    gaps = [m * MINUTE for m in (12, 40, 25, 55, 9, 600, 30, 18, 44)]
    for elapsed, live in ((20 * MINUTE, "1h"), (50 * MINUTE, "1h"), (9 * 60 * MINUTE, None)):
        choice = choose_tail(
            gaps, elapsed=elapsed, live_ttl=live, prompt_tokens=20_000, new_tokens=400, model=SONNET
        )
        assert choice == "1h", (elapsed, live)

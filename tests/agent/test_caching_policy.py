"""The automatic TTL choice, checked against the price model with worked numbers."""

from __future__ import annotations

import math

import pytest

from agent.caching.forecast import GapForecast, TurnStart, _Sample, another_call, forecast, prior_cdf
from agent.caching.policy import (
    LiveEntry,
    choose_tail,
    expected_costs,
    next_request_cost,
    stationary_costs,
    tail_costs,
    whole_prompt_ttl,
)
from agent.models import lookup_model

SONNET = lookup_model("claude-sonnet-4-6")
MINUTE = 60.0


class Steps:
    """Odds given at a few points (seconds -> probability), a step function in between."""

    def __init__(self, points: dict[float, float]) -> None:
        self.points = sorted(points.items())

    def cdf(self, seconds: float) -> float:
        return max((p for x, p in self.points if x <= seconds), default=0.0)


def test_long_run_costs_with_worked_numbers() -> None:
    # 3 of 10 within 5 min, 6 of 10 within an hour
    gaps = [m * MINUTE for m in (1, 2, 4, 10, 30, 50, 90, 120, 200, 300)]
    costs = expected_costs(gaps)
    assert (costs.p5, costs.p60) == pytest.approx((0.3, 0.6))
    assert costs.five_minutes == pytest.approx(0.1 * 0.3 + 1.25 * 0.7)  # 0.905
    assert costs.one_hour == pytest.approx(0.1 * 0.6 + 2.0 * 0.4)  # 0.86
    assert costs.best == "1h"
    # 5m pays once p5 > 0.25 / 1.15 (about 0.217); 1h once p60 > 1 / 1.9 (about 0.53)
    assert stationary_costs(0.2, 0.2).best is None
    assert stationary_costs(0.25, 0.25).best == "5m"
    assert stationary_costs(0.0, 0.55).best == "1h"
    with pytest.raises(ValueError):
        expected_costs([])


def test_a_new_chat_caches_from_its_first_request() -> None:
    """No slow start: before any history the prior of the chat's kind decides."""
    first = TurnStart(at=1_000_000.0, elapsed=None, chatter=1)
    private = forecast((), first, kind="private")
    # the published timing of human requests: 86% within 5 minutes, 98% within an hour
    assert (private.cdf(300), private.cdf(3600)) == pytest.approx((0.86, 0.98))
    # long-run costs: none 1.0, 5m 0.1 x 0.86 + 1.25 x 0.14 = 0.261, 1h 0.1 x 0.98 + 2 x 0.02 = 0.138
    assert stationary_costs(0.86, 0.98).one_hour == pytest.approx(0.138)
    # 1h wins the long run, but a follow-up within 5 minutes is more likely than not: 5m now (1.25),
    # and the follow-up's one-hour tail carries the prompt into the hour entry
    assert choose_tail(private, layers=[], prompt_tokens=3_000) == "5m"
    group = forecast((), first, kind="group")
    # in a group a quick follow-up is the exception (35%): the prompt goes straight to the hour
    assert (group.cdf(300), group.cdf(3600)) == pytest.approx((0.35, 0.80))
    assert choose_tail(group, layers=[], prompt_tokens=3_000) == "1h"
    # a prompt estimated just under the model's minimum is marked all the same: if it is under, the
    # API writes nothing and charges nothing for the marker; if the estimate fell short, skipping it
    # would pay it in full now and write it on the next request (1.0 + 2.0 instead of 2.0 + 0.1)
    assert SONNET.min_cacheable_tokens == 1024
    assert choose_tail(private, layers=[], prompt_tokens=1_010) == "5m"


def test_the_one_hour_entry_advances_when_the_gap_may_outlast_five_minutes() -> None:
    """The 1h entry holds 10,000 tokens (50 minutes old: 10 left), a 5m entry 14,000 (read now); the
    prompt is 15,000. Odds: half within 5 min, 0.6 within 10, 0.9 within the hour; re-buying costs 2."""
    odds = Steps({300.0: 0.5, 600.0: 0.6, 3600.0: 0.9})
    layers = [LiveEntry(10_000, 600.0), LiveEntry(14_000, 300.0)]
    costs = tail_costs(odds, layers=layers, total_tokens=15_000, rebuy=2.0)
    # none: 1,000 new at 1.0; next: 0.5 x (0.1 x 14,000 + 2 x 1,000) + 0.1 x (0.1 x 10,000 + 2 x 5,000)
    #       + 0.4 x 2 x 15,000 = 1,700 + 1,100 + 12,000
    assert costs.none == pytest.approx(1_000 + 1_700 + 1_100 + 12_000)
    # 5m: 1,000 new at 1.25; next: 0.5 x 1,500 + 0.1 x 11,000 + 0.4 x 30,000
    assert costs.five_minutes == pytest.approx(1_250 + 750 + 1_100 + 12_000)
    # 1h: 1,000 new at 2.0; next: 0.9 x 1,500 (read within the hour) + 0.1 x 30,000
    assert costs.one_hour == pytest.approx(2_000 + 1_350 + 3_000)
    assert costs.best == "1h"


def test_inside_a_burst_the_tail_stays_five_minutes() -> None:
    """95% of the next requests come within 5 minutes and the 1h entry lags by 500 tokens only."""
    odds = Steps({300.0: 0.95, 3600.0: 0.99})
    layers = [LiveEntry(14_500, 3600.0)]
    costs = tail_costs(odds, layers=layers, total_tokens=15_000, rebuy=2.0)
    # none: 500 + 0.99 x (1,450 + 1,000) + 0.01 x 30,000
    assert costs.none == pytest.approx(500 + 0.99 * 2_450 + 300)
    # 5m: 625 + 0.95 x 1,500 + 0.04 x 2,450 + 300
    assert costs.five_minutes == pytest.approx(625 + 1_425 + 98 + 300)
    # 1h: 1,000 + 0.99 x 1,500 + 300
    assert costs.one_hour == pytest.approx(1_000 + 1_485 + 300)
    assert costs.best == "5m"


def test_a_tail_nobody_is_likely_to_read_is_left_unmarked() -> None:
    odds = Steps({300.0: 0.02, 3600.0: 0.1})
    layers = [LiveEntry(19_000, 3600.0)]
    assert tail_costs(odds, layers=layers, total_tokens=20_000, rebuy=1.0).best is None


def test_next_request_cost_counts_only_the_longest_live_layer() -> None:
    odds = Steps({300.0: 1.0})
    layers = [LiveEntry(4_000, 3600.0), LiveEntry(9_000, 300.0)]
    assert next_request_cost(layers, total_tokens=10_000, odds=odds, rebuy=1.25) == pytest.approx(
        0.1 * 9_000 + 1.25 * 1_000
    )


def test_after_a_break_the_prompt_takes_the_five_minute_route_only_when_a_pause_is_unlikely() -> None:
    """Nothing cached. The five-minute route costs -0.75 + (p60 - p5) x (2.0 - 0.1) per token against
    writing the hour (re-buying is priced at the long-run best write, here 1h). p5 0.6, p60 0.95: the
    long run prefers 1h (0.1 x 0.95 + 2 x 0.05 = 0.195 against 0.1 x 0.6 + 1.25 x 0.4 = 0.56), and the
    route costs -0.75 + 0.35 x 1.9 = -0.085: 5m. p5 0.4: -0.75 + 0.55 x 1.9 = +0.295: the hour. A chat
    whose pauses outlast five minutes but not the hour (p5 0.57, p60 0.99: +0.048) goes to the hour
    although a quick follow-up is more likely than not; one that is often gone for more than an hour
    (p5 0.45, p60 0.7: long run 1h at 0.67, route -0.75 + 0.25 x 1.9 = -0.275) takes the route, since
    the hour entry would not be read either."""
    assert whole_prompt_ttl(Steps({300.0: 0.6, 3600.0: 0.95})) == "5m"
    assert whole_prompt_ttl(Steps({300.0: 0.4, 3600.0: 0.95})) == "1h"
    assert whole_prompt_ttl(Steps({300.0: 0.57, 3600.0: 0.99})) == "1h"
    assert whole_prompt_ttl(Steps({300.0: 0.45, 3600.0: 0.7})) == "5m"
    # where the long run says none or 5m, that stands
    assert whole_prompt_ttl(Steps({300.0: 0.1, 3600.0: 0.3})) is None
    assert whole_prompt_ttl(Steps({300.0: 0.9, 3600.0: 0.9})) == "5m"


def test_after_a_long_silence_only_the_chats_gaps_that_long_speak_shrunk_toward_the_prior() -> None:
    # a group chat whose six gaps were four of a minute and two of two hours; an hour has passed.
    # Both gaps that long ended within the next hour, but two observations are shrunk toward the
    # level below with the prior's weight (2): the prior after an hour gives the next hour
    # (0.8436 - 0.80) / 0.20 = 0.218; the chat level (2 + 2 x 0.218) / 4 = 0.609; the similar
    # level (2 + 2 x 0.609) / 4 = 0.805
    gaps = _Sample.of([(60.0, 1.0)] * 4 + [(7_200.0, 1.0)] * 2)
    odds = GapForecast(similar=gaps, overall=gaps, kind="group")
    prior = (prior_cdf("group", 7_200.0) - 0.80) / 0.20
    assert prior == pytest.approx(0.2 * math.log(2) / math.log(24) / 0.2)
    chat = (2 + 2 * prior) / 4
    assert odds.after(3_600.0).cdf(3_600.0) == pytest.approx((2 + 2 * chat) / 4)
    # conditioning the whole forecast instead would claim 0.97
    whole = (odds.cdf(7_200.0) - odds.cdf(3_600.0)) / (1 - odds.cdf(3_600.0))
    assert whole == pytest.approx(0.970, abs=0.001)


def test_after_no_silence_the_forecast_is_unchanged() -> None:
    turns = [TurnStart(1_000.0 + 300.0 * i, 300.0, 2) for i in range(12)]
    odds = forecast(turns[:-1], turns[-1], kind="private")
    for seconds in (30.0, 300.0, 3_000.0):
        assert odds.after(0.0).cdf(seconds) == pytest.approx(odds.cdf(seconds))


def test_a_turn_likely_to_call_a_tool_buys_its_hour_on_the_round() -> None:
    """An hour entry of 8,000 tokens and a five-minute tail of 11,000, both read now; the prompt is
    12,000 (1,000 new). Next turn p5 0.5, p60 0.9 (re-buy 2.0). Writing the tail for an hour instead of
    five minutes costs 0.75 x 1,000 = 750 more and, when the next request comes after 5-60 minutes,
    reads 12,000 at 0.1 instead of 8,000 at 0.1 and 4,000 bought again at 2.0: 7,600 saved. With a
    chance f that the turn's own tool round comes first (and can carry the prompt into the hour for its
    own few tokens), a 5-60 minute gap follows this call with odds (1 - f) x 0.4, so the hour pays while
    (1 - f) x 0.4 x 7,600 > 750: f below 0.753."""
    odds = Steps({300.0: 0.5, 3600.0: 0.9})
    layers = [LiveEntry(8_000, 3600.0), LiveEntry(11_000, 300.0)]
    assert choose_tail(odds, layers=layers, prompt_tokens=12_000) == "1h"
    assert choose_tail(odds, layers=layers, prompt_tokens=12_000, follow_up=0.7) == "1h"
    assert choose_tail(odds, layers=layers, prompt_tokens=12_000, follow_up=0.8) == "5m"


def test_the_chance_of_another_call_is_learned_from_the_chats_turns() -> None:
    """Turns (oldest first) that made 1, 3, 2 and 1 calls: weights from the newest 1, 0.98, 0.9604,
    0.941192; two made more than one call (0.98 + 0.9604), shrunk toward none with the weight of two
    turns: 1.9404 / (3.881592 + 2) = 0.3299."""
    turns = [TurnStart(1_000.0 * i, 60.0, 0, calls=c) for i, c in enumerate([1, 3, 2, 1])]
    assert another_call(turns) == pytest.approx(1.9404 / 5.881592)
    assert another_call([]) == 0.0
    # the number of calls is kept with the turn; a turn stored before it was kept made one
    assert TurnStart.from_json(turns[1].to_json()) == turns[1]
    assert TurnStart.from_json([5.0, -1.0, 2.0]) == TurnStart(5.0, None, 2, calls=1)

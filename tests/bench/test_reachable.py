"""The foresight model with keep-alive refreshes: hand-computed on tiny chats, the markers-only case the
same as `bench.foresight`'s, and the learned odds starting from the kind's prior."""

from __future__ import annotations

import pytest

from agent.caching.forecast import PRIOR_WEIGHT, prior_cdf
from bench.foresight import ChatRequests, hindsight_odds, optimum_cost
from bench.reachable import CLASSES, certain_odds, gap_class, learned_odds, prior_odds, refreshing_cost


def chat(at: list[float], tokens: list[int]) -> ChatRequests:
    """Requests that each extend the one before."""
    return ChatRequests(tuple(at), tuple(tokens), tuple(tokens[:-1]), floor=1_024, price_per_token=1.0)


def test_gap_classes_are_five_minute_steps_to_the_hour_then_hours() -> None:
    assert [gap_class(s) for s in (60.0, 300.0, 301.0, 3_600.0, 3_601.0, 7_200.0, 10_800.0, 10_801.0)] == [
        1,
        1,
        2,
        12,
        13,
        13,
        14,
        15,
    ]


def test_without_refreshes_it_is_the_markers_only_model() -> None:
    requests = chat([0.0, 120.0, 1_920.0], [2_000, 2_500, 3_000])
    markers_only = refreshing_cost(requests, certain_odds(requests), refresh=False)
    assert markers_only == pytest.approx(optimum_cost(requests, hindsight_odds(requests)))
    assert markers_only == pytest.approx(4_450.0)


def test_a_pause_of_eight_minutes_is_bridged_by_one_refresh_of_the_tail() -> None:
    """2,000 tokens, then 2,500 eight minutes later. Markers only, nothing pays for the pause: 4,500
    unmarked (a 5m write expires: 5,000; an hour write: 4,000 + 200 + 500). With refreshes: written for
    5 minutes (2,500), refreshed once at 5 minutes (200), read by the second (200) which pays its 500
    new tokens uncached (the chat's last): 3,400."""
    requests = chat([0.0, 480.0], [2_000, 2_500])
    assert refreshing_cost(requests, certain_odds(requests), refresh=False) == pytest.approx(4_500.0)
    assert refreshing_cost(requests, certain_odds(requests)) == pytest.approx(3_400.0)


def test_an_hour_entry_is_carried_through_ninety_minutes_by_one_refresh() -> None:
    """20,000 tokens; a reply a minute later (20,500); the third request 90 minutes after that (21,000).
    The first is written for 5 minutes (25,000); the second reads it (2,000) and writes its 500 for the
    hour (1,000); one refresh at the hour (2,050) keeps it for the third, which reads 20,500 (2,050) and
    pays 500: 32,600. Markers only the third pays all 21,000: 48,500."""
    requests = chat([0.0, 60.0, 5_460.0], [20_000, 20_500, 21_000])
    assert refreshing_cost(requests, certain_odds(requests), refresh=False) == pytest.approx(48_500.0)
    assert refreshing_cost(requests, certain_odds(requests)) == pytest.approx(32_600.0)


def test_the_learned_odds_start_from_the_kinds_prior_and_follow_the_chat() -> None:
    requests = chat([0.0, 60.0, 120.0, 180.0], [2_000, 2_100, 2_200, 2_300])
    odds = learned_odds(requests, "private")
    prior = prior_odds("private")
    assert len(prior) == CLASSES
    assert sum(prior) == pytest.approx(1.0)
    assert prior[0] == pytest.approx(prior_cdf("private", 300.0))
    assert odds[0] == pytest.approx(prior)
    quick = (1 + PRIOR_WEIGHT * prior[0]) / (1 + PRIOR_WEIGHT)
    assert odds[1][0] == pytest.approx(quick)
    assert odds[2][0] > odds[1][0]


def test_learning_as_it_goes_never_beats_hindsight() -> None:
    at = [0.0, 60.0, 200.0, 900.0, 960.0, 6_000.0, 6_100.0, 6_150.0, 80_000.0, 80_050.0]
    requests = chat(at, [2_000 + 300 * i for i in range(len(at))])
    hindsight = refreshing_cost(requests, certain_odds(requests))
    assert hindsight <= refreshing_cost(requests, learned_odds(requests, "private")) + 1e-9
    assert hindsight <= refreshing_cost(requests, certain_odds(requests), refresh=False) + 1e-9

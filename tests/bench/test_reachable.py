"""What a learning policy with refreshes reaches: its odds start from the kind's prior and follow the
chat, and it never beats hindsight."""

from __future__ import annotations

import pytest

from agent.caching.forecast import PRIOR_WEIGHT, prior_cdf
from bench.foresight import CLASSES, ChatRequests, hindsight_odds, optimum_cost
from bench.reachable import learned_odds, prior_odds


def chat(at: list[float], tokens: list[int]) -> ChatRequests:
    """Requests that each extend the one before."""
    return ChatRequests(tuple(at), tuple(tokens), tuple(tokens[:-1]), floor=1_024, price_per_token=1.0)


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
    hindsight = optimum_cost(requests, hindsight_odds(requests), refresh=True)
    assert hindsight <= optimum_cost(requests, learned_odds(requests, "private"), refresh=True) + 1e-9
    assert hindsight <= optimum_cost(requests, hindsight_odds(requests)) + 1e-9

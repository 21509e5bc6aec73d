"""What a policy that learns as it goes, and may refresh, could reach: the foresight model with keep-alive.

`bench.foresight`'s model of one chat's cache (requests extending one another, a five-minute tail and
one hour entry) with its keep-alive refreshes on (`optimum_cost(..., refresh=True)`: a five-minute tail
refreshed before each five minutes of silence, the hour entry once per hour, up to two).

`reachable_usd` is what the cheapest such policy costs when it decides each request, and each refresh
plan, by the expected cost under `learned_odds`: the chat's class shares among its gaps so far (tool
rounds kept apart), shrunk toward its kind's prior (`agent.caching.forecast.prior_cdf`) with the
policy's `PRIOR_WEIGHT`, i.e. what the chat has shown by then, as the default policy's forecast knows
it (without its similarity kernels and trust). It is an estimate of what is within reach, not a bound:
each later request is valued with the belief it will actually hold, so a little of the realised gap
leaks into the earlier expectation, and a policy with better features could do better; but on a family
whose gaps are drawn independently (help bursts), it shows how close to hindsight a policy can come.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agent.caching.forecast import PRIOR_WEIGHT, ChatKind, prior_cdf
from bench.foresight import BOUNDS, CLASSES, TOOL_ROUND, ChatRequests, Odds, chats_of, gap_class, optimum_cost
from bench.oracle import SentRequest


def prior_odds(kind: ChatKind) -> Odds:
    """The kind's prior share of each gap class."""
    cumulative = [prior_cdf(kind, b) for b in BOUNDS] + [1.0]
    return tuple(b - a for a, b in zip([0.0, *cumulative[:-1]], cumulative, strict=True))


def learned_odds(chat: ChatRequests, kind: ChatKind) -> list[Odds]:
    """Per request, the class shares of the chat's earlier gaps after requests of the same kind (a
    turn's first call, or a tool round), shrunk toward the kind's prior."""
    gaps = chat.gaps()
    rounds = [False] + [g <= TOOL_ROUND for g in gaps]
    prior = prior_odds(kind)
    seen: dict[bool, list[int]] = {False: [0] * CLASSES, True: [0] * CLASSES}
    odds = []
    for t, gap in enumerate(gaps):
        counts = seen[rounds[t]]
        n = sum(counts)
        odds.append(
            tuple((c + PRIOR_WEIGHT * p) / (n + PRIOR_WEIGHT) for c, p in zip(counts, prior, strict=True))
        )
        counts[gap_class(gap) - 1] += 1
    return odds


def reachable_usd(
    requests: Iterable[SentRequest], *, min_cacheable: Mapping[str, int], kind: ChatKind
) -> float:
    """USD of the run's requests under the learning, refreshing policy of the module docstring."""
    return sum(
        optimum_cost(chat, learned_odds(chat, kind), refresh=True) * chat.price_per_token
        for chat in chats_of(requests, min_cacheable=min_cacheable)
    )

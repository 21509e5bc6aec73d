"""Choosing the cache TTL (`prompt_caching.cache_ttl = auto`) from a chat's request gaps and the prices.

Cost model, per request and per token of the resent prefix, in units of the base input price:

    no marker:  every request pays the prefix at 1.0
    5m marker:  a request within 5 min of the previous one reads it (0.1); otherwise it writes (1.25)
    1h marker:  a request within 60 min reads it (0.1); otherwise it writes (2.0)

A read refreshes the entry, so what matters is the gap to the previous request. With p5 and p60 the
empirical probabilities that a gap is at most 5 and 60 minutes:

    E[none] = 1.0      E[5m] = 0.1 p5 + 1.25 (1 - p5)      E[1h] = 0.1 p60 + 2.0 (1 - p60)

The cheapest wins (ties go to the shorter TTL, whose misses cost less). Caching beats no marker when
p5 > 0.25 / 1.15 ≈ 0.22 (5m) or p60 > 1 / 1.9 ≈ 0.53 (1h). The prefix size cancels out, except that a
prefix below the model's minimum cacheable length is never cached, so no marker is worth placing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from agent.models import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
    TTL_SECONDS,
    CacheTTL,
    ModelInfo,
)

FIVE_MINUTES: Final = TTL_SECONDS["5m"]
ONE_HOUR: Final = TTL_SECONDS["1h"]
MIN_SAMPLES: Final = 3
DEFAULT_TTL: Final[CacheTTL] = "5m"
"""Used until a chat has enough gaps to measure: the API's and the seed's default."""


def cheapest(*, five_minutes: float, one_hour: float, none: float) -> CacheTTL | None:
    """The cheapest choice; ties go to 5m, then 1h (shorter entries' misses cost less)."""
    options: list[tuple[float, int, CacheTTL | None]] = [
        (five_minutes, 0, "5m"),
        (one_hour, 1, "1h"),
        (none, 2, None),
    ]
    return min(options, key=lambda o: (o[0], o[1]))[2]


@dataclass(frozen=True, slots=True)
class TtlCosts:
    """Expected prefix cost per request (x base input price) under each choice."""

    p5: float
    p60: float
    none: float
    five_minutes: float
    one_hour: float

    @property
    def best(self) -> CacheTTL | None:
        return cheapest(five_minutes=self.five_minutes, one_hour=self.one_hour, none=self.none)


def stationary_costs(p5: float, p60: float) -> TtlCosts:
    """The cost model of the module docstring for given odds of a gap within 5 and 60 minutes."""
    return TtlCosts(
        p5=p5,
        p60=p60,
        none=1.0,
        five_minutes=CACHE_READ_MULTIPLIER * p5 + CACHE_WRITE_5M_MULTIPLIER * (1.0 - p5),
        one_hour=CACHE_READ_MULTIPLIER * p60 + CACHE_WRITE_1H_MULTIPLIER * (1.0 - p60),
    )


def expected_costs(gaps_seconds: Sequence[float]) -> TtlCosts:
    """The cost model over the given gaps (at least one)."""
    if not gaps_seconds:
        raise ValueError("at least one gap is needed")
    n = len(gaps_seconds)
    p5 = sum(1 for g in gaps_seconds if g <= FIVE_MINUTES) / n
    p60 = sum(1 for g in gaps_seconds if g <= ONE_HOUR) / n
    return stationary_costs(p5, p60)


# --- per request, conditioned on the gap that just elapsed ----------------------------------------------


def _gap_class(gap: float) -> int:
    """0: within 5 min (a burst), 1: within the hour (a pause), 2: longer (a break)."""
    return 0 if gap <= FIVE_MINUTES else 1 if gap <= ONE_HOUR else 2


@dataclass(frozen=True, slots=True)
class NextGapOdds:
    """Probabilities that the next request comes within 5 and 60 minutes, and the evidence behind them."""

    p5: float
    p60: float
    samples: int
    """Past gaps that followed a gap of the same class as the current one."""


PRIOR_WEIGHT: Final = 2.0
"""How many pseudo-samples of the chat's overall gap mix a conditional estimate starts from."""


def next_gap_odds(gaps_seconds: Sequence[float], *, elapsed: float | None) -> NextGapOdds:
    """Odds for the next gap given the gap that just elapsed (None: none yet).

    Counts, in the chat's history, the gaps that followed a gap of the same class (burst, pause,
    break) and blends them with the overall mix, so a handful of pairs cannot swing the choice.
    """
    overall = expected_costs(gaps_seconds)
    if elapsed is None:
        return NextGapOdds(overall.p5, overall.p60, 0)
    state = _gap_class(elapsed)
    following = [b for a, b in itertools.pairwise(gaps_seconds) if _gap_class(a) == state]
    n = len(following)
    within5 = sum(1 for g in following if g <= FIVE_MINUTES)
    within60 = sum(1 for g in following if g <= ONE_HOUR)
    return NextGapOdds(
        p5=(within5 + PRIOR_WEIGHT * overall.p5) / (n + PRIOR_WEIGHT),
        p60=(within60 + PRIOR_WEIGHT * overall.p60) / (n + PRIOR_WEIGHT),
        samples=n,
    )


_WRITE: Final[dict[CacheTTL | None, float]] = {
    None: 1.0,
    "5m": CACHE_WRITE_5M_MULTIPLIER,
    "1h": CACHE_WRITE_1H_MULTIPLIER,
}


@dataclass(frozen=True, slots=True)
class MarkerCosts:
    """Expected cost (token x base price) of this request plus the next one's re-use, per choice."""

    none: float
    five_minutes: float
    one_hour: float

    @property
    def best(self) -> CacheTTL | None:
        return cheapest(five_minutes=self.five_minutes, one_hour=self.one_hour, none=self.none)


# --- per request, with the read of a live prefix separate from the write of the new tail -----------------


def tail_costs(
    odds: NextGapOdds, *, live_ttl: CacheTTL, total_tokens: int, new_tokens: int, rebuy: float
) -> MarkerCosts:
    """This request's new tokens plus the next request's whole prompt, per tail choice, when a marker
    reads the live prefix (`live_ttl`, refreshed now) in every case; the old prefix is read at 0.1 now
    whatever is chosen, so it only counts at the next request.

    Marked with T: the new tokens are written now (1.25 or 2) and, like the old prefix, read at 0.1
    if the next request comes within T (the old prefix also within `live_ttl`), else bought again at
    `rebuy`. Unmarked: the new tokens cost 1x now and are still uncached at the next request, which
    buys them at `rebuy`; the old prefix is read there only within `live_ttl`.
    """
    new = min(max(new_tokens, 0), total_tokens)
    old = total_tokens - new
    p_live = odds.p5 if live_ttl == "5m" else odds.p60

    def next_cost(tokens: int, p: float) -> float:
        return tokens * (CACHE_READ_MULTIPLIER * p + rebuy * (1.0 - p))

    def marked(ttl: CacheTTL, p: float) -> float:
        return _WRITE[ttl] * new + next_cost(new, p) + next_cost(old, max(p, p_live))

    return MarkerCosts(
        none=1.0 * new + rebuy * new + next_cost(old, p_live),
        five_minutes=marked("5m", odds.p5),
        one_hour=marked("1h", odds.p60),
    )


def choose_tail(
    gaps_seconds: Sequence[float],
    *,
    elapsed: float | None,
    live_ttl: CacheTTL | None,
    prompt_tokens: int,
    new_tokens: int,
    model: ModelInfo,
    min_samples: int = MIN_SAMPLES,
) -> CacheTTL | None:
    """The TTL written on this request's newest message, or None to leave it unmarked.

    With a live entry (`live_ttl`, read by its own marker whatever is chosen here) `tail_costs`
    decides over the `new_tokens` after it; with none, the long-run cost per request under the
    odds for the next gap.
    """
    if prompt_tokens < model.min_cacheable_tokens:
        return None
    if len(gaps_seconds) < min_samples:
        return DEFAULT_TTL
    odds = next_gap_odds(gaps_seconds, elapsed=elapsed)
    if live_ttl is None:
        # Nothing cached to read: the whole prompt is new, so the long-run cost per request under the
        # odds for the next gap decides (as `expected_costs` does for the overall mix).
        return stationary_costs(odds.p5, odds.p60).best
    rebuy = _WRITE[expected_costs(gaps_seconds).best]
    costs = tail_costs(
        odds, live_ttl=live_ttl, total_tokens=prompt_tokens, new_tokens=new_tokens, rebuy=rebuy
    )
    return costs.best

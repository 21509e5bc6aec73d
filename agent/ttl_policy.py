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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from agent.models import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
    CacheTTL,
    ModelInfo,
)

FIVE_MINUTES: Final = 300.0
ONE_HOUR: Final = 3600.0
MIN_SAMPLES: Final = 3
DEFAULT_TTL: Final[CacheTTL] = "5m"
"""Used until a chat has enough gaps to measure: the API's and the seed's default."""


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
        options: list[tuple[float, int, CacheTTL | None]] = [
            (self.five_minutes, 0, "5m"),
            (self.one_hour, 1, "1h"),
            (self.none, 2, None),
        ]
        return min(options, key=lambda o: (o[0], o[1]))[2]


def expected_costs(gaps_seconds: Sequence[float]) -> TtlCosts:
    """The cost model of the module docstring over the given gaps (at least one)."""
    if not gaps_seconds:
        raise ValueError("at least one gap is needed")
    n = len(gaps_seconds)
    p5 = sum(1 for g in gaps_seconds if g <= FIVE_MINUTES) / n
    p60 = sum(1 for g in gaps_seconds if g <= ONE_HOUR) / n
    return TtlCosts(
        p5=p5,
        p60=p60,
        none=1.0,
        five_minutes=CACHE_READ_MULTIPLIER * p5 + CACHE_WRITE_5M_MULTIPLIER * (1.0 - p5),
        one_hour=CACHE_READ_MULTIPLIER * p60 + CACHE_WRITE_1H_MULTIPLIER * (1.0 - p60),
    )


def choose_ttl(
    gaps_seconds: Sequence[float], *, prefix_tokens: int, model: ModelInfo, min_samples: int = MIN_SAMPLES
) -> CacheTTL | None:
    """`"5m"`, `"1h"` or None (place no marker), whichever the chat's gaps make cheapest."""
    if prefix_tokens < model.min_cacheable_tokens:
        return None
    if len(gaps_seconds) < min_samples:
        return DEFAULT_TTL
    return expected_costs(gaps_seconds).best

"""Choosing the TTL of a request's new tail (`prompt_caching.cache_ttl = auto`) from the prices and a
forecast of the next request.

Prices, in units of the base input price per token: a 5-minute write 1.25, a one-hour write 2.0, a
read 0.1, uncached input 1.0 (the figures below; every function takes the model's own `CachePrices`
from the model table, whose reads cost less on the newest models). An entry lives for its TTL after
the request that wrote or last read it.

Long-run cost per request with odds p5 and p60 that the next request comes within 5 and 60 minutes
(`stationary_costs`, used when nothing is cached to decide for the whole prompt, and to say what
re-buying a token costs):

    E[none] = 1.0      E[5m] = 0.1 p5 + 1.25 (1 - p5)      E[1h] = 0.1 p60 + 2.0 (1 - p60)

With nothing cached (`whole_prompt_ttl`) that model decides, with one refinement when it picks 1h:
the prompt may instead be written for 5 minutes. A follow-up within 5 minutes reads it and its own
one-hour tail carries the whole prompt into the hour entry for the price of its new tokens only; a
next request after an hour finds neither entry. So the five-minute route saves 0.75 on the prompt
unless the next request comes after 5-60 minutes, when it buys the prompt again at `rebuy` instead of
reading it at 0.1:

    E[5m route] - E[1h] = -0.75 + (p60 - p5) (rebuy - 0.1)

It is taken when that is negative: a one-to-one chat whose next message mostly comes within minutes
(or after a break), not one whose pauses outlast five minutes but not the hour.

Per request (`tail_costs`): this request reads what is live whatever is chosen, so only its new tokens
(after the longest live entry) and the next request's re-use of the whole prompt differ between the
choices. After this request the prompt is held in layers: the entry just read (refreshed), an older
one-hour entry (with the life it has left), and the new tail if it is marked. If the next request
comes after a gap g, the tokens of the longest layer still alive at g are read at 0.1; the rest are
bought again at `rebuy` (what the chat pays for a token it caches again). So a one-hour tail costs
0.75 more than a five-minute one on the new tokens only, and saves re-buying everything after the old
one-hour entry when the next request comes between 5 and 60 minutes: that is how the hour entry
advances with the conversation, exactly when its odds pay for it.

In a chat whose turns usually call tools, the next request after a turn's first call is most likely
the turn's own tool round, seconds later (`WithinTurn`, with the chat's learned chance of another
call): that round reads the whole prompt and can carry it into the hour entry for the price of its
own few new tokens. So the first call is judged against that mix, and the hour the turn needs is
bought on its rounds (`round_tail`, judged against the next turn alone): the first call writes one
hour only when the odds that no round follows, times what the hour entry would save, outweigh 0.75x
its new tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from agent.models import STANDARD_CACHE_PRICES, TTL_SECONDS, CachePrices, CacheTTL

FIVE_MINUTES: Final = TTL_SECONDS["5m"]
ONE_HOUR: Final = TTL_SECONDS["1h"]


def write_multiplier(ttl: CacheTTL | None, prices: CachePrices = STANDARD_CACHE_PRICES) -> float:
    """What a token sent with this request costs, x base price: written for the TTL, or uncached."""
    return 1.0 if ttl is None else prices.write(ttl)


class GapOdds(Protocol):
    """A forecast of the next request (`agent.caching.forecast.GapForecast`)."""

    def cdf(self, seconds: float) -> float:
        """The probability that the next request comes within `seconds`."""
        ...


@dataclass(frozen=True, slots=True)
class WithinTurn:
    """The next request's odds after a turn's first call: with chance `follow_up` it is the turn's own
    next call (a tool round, seconds away), otherwise the next turn, after the forecast gap."""

    follow_up: float
    next_turn: GapOdds

    def cdf(self, seconds: float) -> float:
        return self.follow_up + (1.0 - self.follow_up) * self.next_turn.cdf(seconds)


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


def stationary_costs(p5: float, p60: float, prices: CachePrices = STANDARD_CACHE_PRICES) -> TtlCosts:
    """The long-run cost model of the module docstring for given odds of a gap within 5 and 60 minutes."""
    return TtlCosts(
        p5=p5,
        p60=p60,
        none=1.0,
        five_minutes=prices.read * p5 + prices.write_5m * (1.0 - p5),
        one_hour=prices.read * p60 + prices.write_1h * (1.0 - p60),
    )


def expected_costs(gaps_seconds: Sequence[float], prices: CachePrices = STANDARD_CACHE_PRICES) -> TtlCosts:
    """The long-run cost model over the given gaps (at least one)."""
    if not gaps_seconds:
        raise ValueError("at least one gap is needed")
    n = len(gaps_seconds)
    p5 = sum(1 for g in gaps_seconds if g <= FIVE_MINUTES) / n
    p60 = sum(1 for g in gaps_seconds if g <= ONE_HOUR) / n
    return stationary_costs(p5, p60, prices)


def rebuy_price(odds: GapOdds, prices: CachePrices = STANDARD_CACHE_PRICES) -> float:
    """What a token that fell out of the cache costs the chat when bought again: the write price of the
    long-run best choice under the forecast (1.0 when not caching is best)."""
    best = stationary_costs(odds.cdf(FIVE_MINUTES), odds.cdf(ONE_HOUR), prices).best
    return write_multiplier(best, prices)


def whole_prompt_ttl(odds: GapOdds, prices: CachePrices = STANDARD_CACHE_PRICES) -> CacheTTL | None:
    """The TTL for a prompt with nothing cached to read (after a break, or a new chat): the long-run
    cost per request decides, except that 1h becomes 5m when the five-minute route to the hour entry
    costs less in expectation (module docstring: a quick follow-up moves the prompt into the hour entry
    for the price of its own new tokens; a pause of 5-60 minutes buys it again)."""
    p5, p60 = odds.cdf(FIVE_MINUTES), odds.cdf(ONE_HOUR)
    best = stationary_costs(p5, p60, prices).best
    if best != "1h":
        return best
    rebuy = prices.write_1h  # the long-run best write, as `rebuy_price` prices it
    saved = prices.write_1h - prices.write_5m
    return "5m" if (p60 - p5) * (rebuy - prices.read) < saved else "1h"


@dataclass(frozen=True, slots=True)
class LiveEntry:
    """A cache layer after this request: the prefix tokens it holds and the seconds of life it has left
    (its whole TTL when this request reads or writes it)."""

    tokens: int
    left: float


@dataclass(frozen=True, slots=True)
class MarkerCosts:
    """Expected cost (token x base price) of this request's new tokens plus the next one's re-use of
    the whole prompt, per tail choice."""

    none: float
    five_minutes: float
    one_hour: float

    @property
    def best(self) -> CacheTTL | None:
        return cheapest(five_minutes=self.five_minutes, one_hour=self.one_hour, none=self.none)


def next_request_cost(
    layers: Sequence[LiveEntry],
    *,
    total_tokens: int,
    odds: GapOdds,
    rebuy: float,
    prices: CachePrices = STANDARD_CACHE_PRICES,
) -> float:
    """Expected cost of re-sending this request's `total_tokens` at the next request: per interval of
    the gap, the longest layer alive is read and the rest bought again."""
    cost = 0.0
    previous_p = 0.0
    for left in sorted({layer.left for layer in layers if layer.left > 0}):
        covered = max(min(layer.tokens, total_tokens) for layer in layers if layer.left >= left)
        p = odds.cdf(left)
        band = max(p - previous_p, 0.0)
        cost += band * (prices.read * covered + rebuy * (total_tokens - covered))
        previous_p = max(p, previous_p)
    return cost + (1.0 - previous_p) * rebuy * total_tokens


def tail_costs(
    odds: GapOdds,
    *,
    layers: Sequence[LiveEntry],
    total_tokens: int,
    rebuy: float,
    prices: CachePrices = STANDARD_CACHE_PRICES,
) -> MarkerCosts:
    """The per-request costs of the module docstring; `layers` are the live entries this request
    reads (refreshed) or leaves alone, without the new tail."""
    held = max((min(layer.tokens, total_tokens) for layer in layers), default=0)
    new = total_tokens - held

    def total(ttl: CacheTTL | None) -> float:
        tail = [LiveEntry(total_tokens, TTL_SECONDS[ttl])] if ttl is not None else []
        return write_multiplier(ttl, prices) * new + next_request_cost(
            [*layers, *tail], total_tokens=total_tokens, odds=odds, rebuy=rebuy, prices=prices
        )

    return MarkerCosts(none=total(None), five_minutes=total("5m"), one_hour=total("1h"))


def choose_tail(
    odds: GapOdds,
    *,
    layers: Sequence[LiveEntry],
    prompt_tokens: int,
    follow_up: float = 0.0,
    prices: CachePrices = STANDARD_CACHE_PRICES,
) -> CacheTTL | None:
    """The TTL written on this request's newest message, or None to leave it unmarked. `odds` forecast
    the next turn; `follow_up` is the chance that this request is followed by another call of its own
    turn first (`WithinTurn`; 0 for a turn's last possible call). The prompt's size before the request
    is an estimate, so a prompt near the model's minimum cacheable length is marked like any other:
    below the minimum the API writes nothing and charges nothing for the marker (and the turn records
    no entry, `CacheCursor.called`), while skipping a prompt that turns out a few tokens over it pays
    that prompt in full and writes it on the next request."""
    held = max((layer.tokens for layer in layers), default=0)
    if held >= prompt_tokens:
        return None
    following = WithinTurn(follow_up, odds) if follow_up > 0.0 else odds
    if not layers:
        return whole_prompt_ttl(following, prices)
    rebuy = rebuy_price(odds, prices)  # what a token bought again costs the chat in the long run
    return tail_costs(following, layers=layers, total_tokens=prompt_tokens, rebuy=rebuy, prices=prices).best

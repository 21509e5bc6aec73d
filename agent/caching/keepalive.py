"""Keeping a chat's newest prompt-cache entry alive between its requests (`prompt_caching.keep_alive`).

An entry lives for its TTL after the request that wrote or last read it. Resending the cached prompt
with `max_tokens: 0` reads it (at the model's cache-read price, `CachePrices.read`; nothing generated)
and restarts that life. Just before the chat's newest entry expires, a refresh is worth its price when

    value = E[next request's re-use cost | not refreshed] - E[same | refreshed] - read price x prefix

is positive. Both expectations are `policy.next_request_cost`, under the chat's forecast of the gap
after its last turn given the silence so far (`GapForecast.after`), scaled by how far the chat's
earlier refresh decisions held (`agent.caching.trust`): the decision learns from each chat.

Rules the code keeps:
- Within the hour (`PRIOR_SPAN`) a refresh is valued as the first of a run (`best_refresh_value`);
  past it each refresh is judged alone, and only through silences the chat has come back from
  (`MIN_SUPPORT`: a group needs less such evidence than a one-to-one chat, whose long silences often
  end it).
- A one-to-one conversation may have ended: the forecast's prior mixes a conversation that goes on and
  one that ended (`forecast.ENDS`, learned per chat), so refreshes stop within a few of its end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from agent.caching.forecast import PRIOR_SPAN, ChatKind, ended_share, forecast
from agent.caching.plan import CachedPrefix, CacheState
from agent.caching.policy import GapOdds, LiveEntry, next_request_cost, rebuy_price
from agent.models import STANDARD_CACHE_PRICES, TTL_SECONDS, CachePrices

LEAD: Final = 90.0
"""Seconds before its expiry from which an entry is considered for a refresh (the job runs every
`gateway.jobs.cache_keeper.SCAN_EVERY`, so every entry is looked at at least once in that span)."""
SAFETY: Final = 10.0
"""An entry with less life left than this is let go: the refresh might arrive after it expired and
write the whole prompt again."""
MIN_SUPPORT: Final[Mapping[ChatKind, float]] = {"private": 2.0, "group": 0.5}
"""The chat's own gaps (recency-weighted: a gap 35 turns old counts half) longer than the present
silence needed before a refresh that reaches past `PRIOR_SPAN` is judged at all, per chat kind. Past
them the forecast is its prior's tail, which cannot tell a night from a chat that ended; a chat is kept
warm that long only through silences it has been seen to come back from: a group once within about its
last 35 turns, a one-to-one chat twice."""
HORIZON: Final = 86_400.0
"""No refresh a day or more after the chat's last turn, whatever the forecast says."""


@dataclass(frozen=True, slots=True)
class Trusted:
    """A forecast's odds scaled by how far the chat's past refresh decisions held (`trust`,
    `agent.caching.trust`), capped at certainty."""

    odds: GapOdds
    trust: float

    def cdf(self, seconds: float) -> float:
        return min(self.trust * self.odds.cdf(seconds), 1.0)


def refresh_value(
    odds: GapOdds,
    *,
    newest: LiveEntry,
    others: Sequence[LiveEntry],
    ttl: float,
    rebuy: float,
    prices: CachePrices = STANDARD_CACHE_PRICES,
    rounds: int = 1,
) -> float:
    """Expected saving (token x base input price; negative: not worth it) of refreshing the `newest`
    layer now and then again at each expiry, `rounds` times in all unless a request comes first, with
    `others` (older layers) left as they are. Refresh `j` (from 0) is paid only if no request came in the
    `j` lives before it."""
    total = newest.tokens
    kept = next_request_cost([*others, newest], total_tokens=total, odds=odds, rebuy=rebuy, prices=prices)
    refreshed = next_request_cost(
        [*others, LiveEntry(total, ttl * rounds)], total_tokens=total, odds=odds, rebuy=rebuy, prices=prices
    )
    reads = sum(1.0 - odds.cdf(ttl * j) for j in range(rounds))
    return kept - refreshed - prices.read * total * reads


def best_refresh_value(
    odds: GapOdds,
    *,
    newest: LiveEntry,
    others: Sequence[LiveEntry],
    ttl: float,
    rebuy: float,
    prices: CachePrices = STANDARD_CACHE_PRICES,
    reach: float,
) -> float:
    """The best `refresh_value` over plans of one refresh up to as many as fit in `reach` seconds (at
    least one). A single refresh is judged on the next life alone; a chat that comes back after a
    pause longer than one life (a return half an hour or an hour after its last answer, which its own
    history shows) is worth a run of refreshes whose first alone would not pay. Each refresh is judged
    again when its entry is about to expire, so a plan is a way of valuing the first, not a promise.
    Plans longer than `rebuy / read` refreshes are not weighed: their reads alone cost more than
    writing the prompt again."""
    rounds = max(1, min(int(reach // ttl), math.ceil(rebuy / prices.read)))  # more reads cost a re-buy
    return max(
        refresh_value(odds, newest=newest, others=others, ttl=ttl, rebuy=rebuy, prices=prices, rounds=k)
        for k in range(1, rounds + 1)
    )


@dataclass(frozen=True, slots=True)
class Refresh:
    """The decision on a session's newest cache entry: `value` as in `refresh_value`, `due` when it is
    worth sending now; `odds`, the forecast's chance (before trust) that the next request comes
    within the renewed life, is what the refresh's outcome is later compared with."""

    prefix: CachedPrefix
    tokens: int
    left: float
    value: float
    odds: float = 0.0

    @property
    def due(self) -> bool:
        return self.value > 0.0


def plan_refresh(
    state: CacheState,
    *,
    now: datetime,
    prefix_tokens: Callable[[int], int],
    kind: ChatKind,
    min_cacheable: int,
    prices: CachePrices,
) -> Refresh | None:
    """The session's newest live entry when it is about to expire (None when no entry is, or when
    there is nothing to judge it by), with the value of refreshing it. `prefix_tokens(id)` is the size
    of the prompt up to and including stored message `id`."""
    live = [p for p in state.live(now) if p.message_id != state.refresh_missed]
    if not live or not state.turns:
        return None
    elapsed = now.timestamp() - state.turns[-1].at
    if elapsed >= HORIZON:
        return None
    sizes = {p.message_id: prefix_tokens(p.message_id) for p in live}
    newest = max(live, key=lambda p: (sizes[p.message_id], p.at))
    tokens = sizes[newest.message_id]
    left = _left(newest, now)
    if left > LEAD or left < SAFETY or tokens < min_cacheable:
        return None
    odds = forecast(state.turns[:-1], state.turns[-1], kind=kind)
    ttl = TTL_SECONDS[newest.ttl]
    if elapsed + ttl > PRIOR_SPAN and odds.seen_beyond(elapsed) < MIN_SUPPORT[kind]:
        return Refresh(newest, tokens, left, value=0.0)  # the chat has not come back from such silences
    ends = ended_share(state.turns[:-1], state.turns[-1], kind=kind) if kind == "private" else 0.0
    silence = odds.after(elapsed, ends=ends)
    others = [LiveEntry(sizes[p.message_id], _left(p, now)) for p in live if p is not newest]
    value = best_refresh_value(
        Trusted(silence, state.refreshes.trust()),
        newest=LiveEntry(tokens, left),
        others=others,
        ttl=ttl,
        rebuy=rebuy_price(odds, prices),
        prices=prices,
        reach=max(PRIOR_SPAN - elapsed, ttl),
    )
    return Refresh(newest, tokens, left, value, odds=silence.cdf(ttl))


def next_look(state: CacheState, now: datetime) -> datetime | None:
    """When the keep-alive job should next look at the session: the opening of the earliest refresh
    window (an entry's last `LEAD` seconds, until `SAFETY` before its end) that is not over at `now`
    (at or before `now` while one is open). None when there is nothing to look at: no entry left to
    refresh (expired, or its refresh read nothing), no turn yet, or the windows open a `HORIZON` or
    more after the chat's last turn. `plan_refresh` judges the entries this schedules."""
    if not state.turns:
        return None
    horizon = datetime.fromtimestamp(state.turns[-1].at + HORIZON, UTC)
    opens = []
    for prefix in state.prefixes:
        end = prefix.at + timedelta(seconds=TTL_SECONDS[prefix.ttl])
        opening = end - timedelta(seconds=LEAD)
        closed = end - timedelta(seconds=SAFETY) <= now
        if prefix.message_id != state.refresh_missed and not closed and opening < horizon:
            opens.append(opening)
    return min(opens, default=None)


def _left(prefix: CachedPrefix, now: datetime) -> float:
    return TTL_SECONDS[prefix.ttl] - (now - prefix.at).total_seconds()

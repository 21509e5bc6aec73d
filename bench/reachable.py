"""What a policy that learns as it goes, and may refresh, could reach: the foresight model with keep-alive.

`bench.foresight` prices markers only. Here the same model of one chat's cache (requests extending one
another, a five-minute tail and one hour entry, the hour entry kept by every request within its hour)
also lets the chat keep an entry alive through a silence with refreshes, as the keep-alive job does:

- after a request that wrote a five-minute tail, a refresh just before each five minutes of silence
  (0.1x the request's prompt) keeps the tail alive for five more; the plan is how many to send at most
  (information during a silence is only "nobody came yet", so a plan is a number);
- the hour entry likewise, once per hour of silence (0.1x the entry's tokens), up to two;
- gaps fall in classes fine enough for those plans: five-minute steps up to an hour, then one to two
  hours, two to three, longer.

`reachable_usd` is what the cheapest such policy costs when it decides each request, and each refresh
plan, by the expected cost under `learned_odds`: the chat's class shares among its gaps so far (tool
rounds kept apart), shrunk toward its kind's prior (`agent.caching.forecast.prior_cdf`) with the
policy's `PRIOR_WEIGHT`, i.e. what the chat has shown by then, as the default policy's forecast knows
it (without its similarity kernels and trust). It is an estimate of what is within reach, not a bound:
each later request is valued with the belief it will actually hold, so a little of the realised gap
leaks into the earlier expectation, and a policy with better features could do better; but on a family
whose gaps are drawn independently (help bursts), it shows how close to hindsight a policy can come.
Costs are in base-price tokens until `reachable_usd`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from agent.caching.forecast import PRIOR_WEIGHT, ChatKind, prior_cdf
from agent.models import CACHE_READ_MULTIPLIER
from bench.foresight import NO_HOUR, PRICE, TOOL_ROUND, ChatRequests, Covers, chats_of
from bench.oracle import SentRequest

STEP: Final = 300.0
"""A five-minute entry's life, and the silence between two refreshes of it."""
HOUR: Final = 3_600.0
SHORT: Final = 12
"""Classes 1..12: a gap within 5, 10, ..., 60 minutes."""
HOURS: Final = 2
"""Classes 13, 14: within two hours, within three; class 15: longer."""
CLASSES: Final = SHORT + HOURS + 1
BOUNDS: Final = tuple([STEP * k for k in range(1, SHORT + 1)] + [HOUR * (h + 1) for h in range(1, HOURS + 1)])

ClassOdds = tuple[float, ...]
"""The chances that the next gap falls in each class (1..CLASSES, index 0..CLASSES-1)."""


def gap_class(seconds: float) -> int:
    for k, bound in enumerate(BOUNDS, start=1):
        if seconds <= bound:
            return k
    return CLASSES


def prior_odds(kind: ChatKind) -> ClassOdds:
    cumulative = [prior_cdf(kind, b) for b in BOUNDS] + [1.0]
    return tuple(b - a for a, b in zip([0.0, *cumulative[:-1]], cumulative, strict=True))


def learned_odds(chat: ChatRequests, kind: ChatKind) -> list[ClassOdds]:
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


def certain_odds(chat: ChatRequests) -> list[ClassOdds]:
    """Per request, certainty about the class of the gap that follows it."""
    return [tuple(float(k == gap_class(g)) for k in range(1, CLASSES + 1)) for g in chat.gaps()]


def refreshing_cost(chat: ChatRequests, odds: Sequence[ClassOdds], *, refresh: bool = True) -> float:
    """What the chat's requests cost (base-price tokens, refreshes included) when each request's marker
    and the refresh plans after it are the cheapest in expectation under `odds[t]` (later choices
    included), paid at the real gaps. `refresh` False: markers only (`bench.foresight`'s model)."""
    n = len(chat.tokens)
    if n == 0:
        return 0.0
    covers = Covers(chat)
    value: dict[tuple[int, int, bool], float] = {}
    tail_plans = range(SHORT) if refresh else range(1)
    hour_plans = range(HOURS + 1) if refresh else range(1)

    def decide(t: int, read: int, hour: int) -> tuple[float, str]:
        best = (math.inf, "none")
        for ttl in ("none", "5m", "1h"):
            if ttl != "none" and chat.tokens[t] < chat.floor:
                continue
            after = value[(t, t, False)] if ttl == "1h" else value[(t, hour, ttl == "5m")]
            cost = CACHE_READ_MULTIPLIER * read + PRICE[ttl] * (chat.tokens[t] - read) + after
            if cost < best[0]:
                best = (cost, ttl)
        return best

    def outcomes(t: int, hour: int, tail: bool) -> list[list[float]]:
        """cost[k - 1][plan]: refreshes plus the rest of the chat after a gap of class k, per plan
        (the tail plan for classes up to an hour, the hour plan beyond)."""
        whole = chat.common[t]
        by_hour = covers(hour, t + 1) if hour not in (NO_HOUR, t) else whole if hour == t else 0
        warm = decide(t + 1, whole, hour)[0]
        cool = decide(t + 1, by_hour, hour)[0]
        cold = decide(t + 1, 0, NO_HOUR)[0]
        refreshable = tail and hour != t
        tail_read = CACHE_READ_MULTIPLIER * chat.tokens[t]
        hour_read = CACHE_READ_MULTIPLIER * chat.tokens[hour] if hour != NO_HOUR else 0.0
        rows: list[list[float]] = []
        for k in range(1, SHORT + 1):
            if hour == t or (tail and k == 1):
                rows.append([warm for _ in tail_plans])
            elif refreshable:
                rows.append(
                    [warm + tail_read * (k - 1) if r >= k - 1 else cool + tail_read * r for r in tail_plans]
                )
            else:
                rows.append([cool for _ in tail_plans])
        for k in range(SHORT + 1, CLASSES + 1):
            need = k - SHORT if k < CLASSES else math.inf
            row = []
            for h in hour_plans:
                if hour == NO_HOUR:
                    row.append(cold)
                elif h >= need:
                    row.append(cool + hour_read * need)
                else:
                    row.append(cold + hour_read * h)
            rows.append(row)
        return rows

    def plan(t: int, hour: int, tail: bool) -> tuple[float, int, int]:
        """The expected cost after request t, with the best tail and hour refresh plans."""
        p = odds[t]
        rows = outcomes(t, hour, tail)
        beyond = sum(p[SHORT:])
        tail_read = CACHE_READ_MULTIPLIER * chat.tokens[t] if tail and hour != t else 0.0
        short = [sum(p[k] * rows[k][r] for k in range(SHORT)) + beyond * tail_read * r for r in tail_plans]
        long = [sum(p[k] * rows[k][h] for k in range(SHORT, CLASSES)) for h in hour_plans]
        r = min(tail_plans, key=lambda i: (short[i], i))
        h = min(hour_plans, key=lambda i: (long[i], i))
        return short[r] + long[h], r, h

    for t in range(n - 1, -1, -1):
        for hour in range(NO_HOUR, t + 1):
            for tail in (False, True):
                value[(t, hour, tail)] = 0.0 if t == n - 1 else plan(t, hour, tail)[0]
    paid = 0.0
    read, hour = 0, NO_HOUR
    for t in range(n):
        _, ttl = decide(t, read, hour)
        paid += CACHE_READ_MULTIPLIER * read + PRICE[ttl] * (chat.tokens[t] - read)
        hour = t if ttl == "1h" else hour
        if t == n - 1:
            break
        _, r, h = plan(t, hour, ttl == "5m")
        read, hour, spent = _arrive(
            chat, covers, t, hour, ttl == "5m", gap_class(chat.at[t + 1] - chat.at[t]), r, h
        )
        paid += spent
    return paid


def _arrive(
    chat: ChatRequests, covers: Covers, t: int, hour: int, tail: bool, k: int, r: int, h: int
) -> tuple[int, int, float]:
    """After request t and a gap of class k under tail plan r and hour plan h: the tokens request t + 1
    reads, the hour entry it finds, and the refreshes paid."""
    whole = chat.common[t]
    by_hour = covers(hour, t + 1) if hour not in (NO_HOUR, t) else whole if hour == t else 0
    refreshable = tail and hour != t
    tail_read = CACHE_READ_MULTIPLIER * chat.tokens[t]
    if k <= SHORT:
        if hour == t or (tail and k == 1):
            return whole, hour, 0.0
        if refreshable and r >= k - 1:
            return whole, hour, tail_read * (k - 1)
        return by_hour, hour, tail_read * r if refreshable else 0.0
    spent = tail_read * r if refreshable else 0.0
    if hour == NO_HOUR:
        return 0, NO_HOUR, spent
    need = k - SHORT if k < CLASSES else math.inf
    hour_read = CACHE_READ_MULTIPLIER * chat.tokens[hour]
    if h >= need:
        return by_hour, hour, spent + hour_read * (k - SHORT)
    return 0, NO_HOUR, spent + hour_read * h


def reachable_usd(
    requests: Iterable[SentRequest], *, min_cacheable: Mapping[str, int], kind: ChatKind
) -> float:
    """USD of the run's requests under the learning, refreshing policy of the module docstring."""
    return sum(
        refreshing_cost(chat, learned_odds(chat, kind)) * chat.price_per_token
        for chat in chats_of(requests, min_cacheable=min_cacheable)
    )

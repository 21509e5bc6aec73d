"""What knowing when the next message comes is worth to a marking policy: per chat, the cheapest
marking with hindsight against the cheapest one that knows only the mix of the chat's gaps.

The oracle of `bench.oracle` sees every request at once, so part of any real policy's distance to it is
information no policy has: whether this answer is followed by a quick reply, a pause or a break. This
module measures that part on a run's own requests, in a model of one chat's cache simple enough to
solve exactly:

- each chat's requests (grouped by their first message) extend one another; request t shares
  `common[t]` tokens with request t + 1, and an entry written at request j covers the smallest of the
  shares between j and the request that reads it;
- after request t the chat holds at most two entries: the tail it marked (five minutes) and its
  one-hour entry (written at some request h <= t, kept alive by every request within the hour after
  it). A request reads the longest one alive at its gap, pays 0.1 for those tokens and writes the rest
  at the price of the TTL it marks (1.25 for five minutes, 2.0 for an hour, 1.0 unmarked, and unmarked
  only under the model's minimum cacheable length); marking for an hour moves the hour entry to it;
- optionally (`refresh`), the chat may keep an entry alive through a silence, as the keep-alive job
  does: after a request that wrote a five-minute tail, a refresh just before each five minutes of
  silence (0.1x the request's prompt) keeps it for five more, and the hour entry likewise once per
  hour (0.1x its tokens), up to two; a refresh plan is a number of refreshes at most (during a silence
  the only news is that nobody came yet);
- a gap falls in a class: five-minute steps up to an hour, then one to two hours, two to three, longer
  (without refreshes only three matter: within five minutes, within the hour, longer).

`hindsight` is the cheapest marking when every gap's class is known; `mix_informed` decides each request
by the expected cost over the chat's own mix of gap classes (the shares it has over the whole run, kept
apart for tool rounds, whose follow-up is the next round or the next turn) and pays what the real
gaps then cost. Both are exact optima of the model (backward induction over the hour entry's position),
so their ratio is the price of not knowing when the next message comes, in that model: a marking
policy (without keep-alive refreshes) whose information is the chat's gap mix cannot come closer to the
hindsight optimum than that. The mix-informed optimum still knows more than any real policy (every
request's size, and which request is the chat's last), so the ratio is a floor, not an estimate; a
policy with better features (time of day, chatter) or with keep-alive refreshes can go below it.
`bench.reachable` uses the same model with refreshes. Costs are in units of base-price tokens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from agent.models import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
    lookup_model,
)
from bench.oracle import SentRequest, is_refresh
from tests.fakes.anthropic.cache import serialize_prefix

STEP: Final = 300.0
"""A five-minute entry's life, and the silence between two refreshes of it."""
HOUR: Final = 3_600.0
SHORT: Final = 12
"""Classes 1..12: a gap within 5, 10, ..., 60 minutes."""
HOURS: Final = 2
"""Classes 13, 14: within two hours, within three; class 15: longer."""
CLASSES: Final = SHORT + HOURS + 1
BOUNDS: Final = tuple([STEP * k for k in range(1, SHORT + 1)] + [HOUR * (h + 1) for h in range(1, HOURS + 1)])
TOOL_ROUND: Final = 10.0
"""A request this soon after the previous one is a tool round of the same turn (the policy knows it is
one when it marks it)."""
PRICE: Final = {"none": 1.0, "5m": CACHE_WRITE_5M_MULTIPLIER, "1h": CACHE_WRITE_1H_MULTIPLIER}
NO_HOUR: Final = -1

Odds = tuple[float, ...]
"""The chances that the next gap falls in each class (1..CLASSES, index 0..CLASSES-1)."""


def gap_class(seconds: float) -> int:
    for k, bound in enumerate(BOUNDS, start=1):
        if seconds <= bound:
            return k
    return CLASSES


@dataclass(frozen=True, slots=True)
class ChatRequests:
    """One chat's requests in order: their times, prompt sizes, the tokens each shares with the next,
    and the model's minimum cacheable length."""

    at: tuple[float, ...]
    tokens: tuple[int, ...]
    common: tuple[int, ...]
    floor: int
    price_per_token: float
    """USD per base-price token."""

    def gaps(self) -> list[float]:
        return [b - a for a, b in pairwise(self.at)]


def chats_of(requests: Iterable[SentRequest], *, min_cacheable: Mapping[str, int]) -> list[ChatRequests]:
    """The run's answered requests (keep-alive refreshes left out) grouped by chat."""
    grouped: dict[str, list[tuple[SentRequest, list[tuple[int, int]]]]] = {}
    for request in requests:
        if is_refresh(request) or not request.body.get("messages"):
            continue
        chain: list[tuple[int, int]] = []
        running, total = 0, 0
        for block in serialize_prefix(request.body):
            running, total = hash((running, block.fingerprint)), total + block.tokens
            chain.append((running, total))
        grouped.setdefault(_chat_key(request.body["messages"][0]), []).append((request, chain))
    chats = []
    for members in grouped.values():
        model = str(members[0][0].body["model"])
        chains = [chain for _, chain in members]
        chats.append(
            ChatRequests(
                at=tuple(r.at for r, _ in members),
                tokens=tuple(chain[-1][1] if chain else 0 for chain in chains),
                common=tuple(_shared(a, b) for a, b in pairwise(chains)),
                floor=min_cacheable.get(model, lookup_model(model).min_cacheable_tokens),
                price_per_token=lookup_model(model).input_per_mtok / 1_000_000,
            )
        )
    return chats


def _chat_key(first: object) -> str:
    """A chat's first message without its cache markers (a chat's first request carries its tail
    marker there; the later requests do not)."""

    def bare(value: object) -> object:
        if isinstance(value, dict):
            return {k: bare(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [bare(v) for v in value]
        return value

    return repr(bare(first))


def _shared(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    shared = 0
    for (hash_a, tokens), (hash_b, _) in zip(a, b, strict=False):
        if hash_a != hash_b:
            break
        shared = tokens
    return shared


def mix_of(chat: ChatRequests) -> list[Odds]:
    """Per request, the odds the mix-informed policy decides it by: the chat's share of each gap class
    after requests of the same kind (a turn's first call, or a tool round)."""
    gaps = chat.gaps()
    rounds = [False] + [g <= TOOL_ROUND for g in gaps]
    shares: dict[bool, Odds] = {}
    for kind in (False, True):
        after = [gap_class(g) for t, g in enumerate(gaps) if rounds[t] == kind]
        n = len(after)
        shares[kind] = tuple(after.count(k) / n if n else float(k == 1) for k in range(1, CLASSES + 1))
    return [shares[rounds[t]] for t in range(len(gaps))]


def hindsight_odds(chat: ChatRequests) -> list[Odds]:
    """Per request, certainty about the class of the gap that follows it."""
    return [tuple(float(k == gap_class(g)) for k in range(1, CLASSES + 1)) for g in chat.gaps()]


def optimum_cost(chat: ChatRequests, odds: Sequence[Odds], *, refresh: bool = False) -> float:
    """What the chat's requests cost (base-price tokens, refreshes included) when each request's marker
    and the refresh plans after it are the cheapest in expectation under `odds[t]` (later choices
    included), paid at the real gaps; `refresh` lets the chat keep entries alive (module docstring)."""
    n = len(chat.tokens)
    if n == 0:
        return 0.0
    covers = _Covers(chat)
    value: dict[tuple[int, int, bool], float] = {}
    tail_plans = range(SHORT) if refresh else range(1)
    hour_plans = range(HOURS + 1) if refresh else range(1)

    def decide(t: int, read: int, hour: int) -> tuple[float, str]:
        """The cheapest choice at request t reading `read` tokens with the hour entry at `hour`."""
        best = (math.inf, "none")
        for ttl in ("none", "5m", "1h"):
            if ttl != "none" and chat.tokens[t] < chat.floor:
                continue
            after = value[(t, t, False)] if ttl == "1h" else value[(t, hour, ttl == "5m")]
            cost = CACHE_READ_MULTIPLIER * read + PRICE[ttl] * (chat.tokens[t] - read) + after
            if cost < best[0]:  # ties go to the cheaper write
                best = (cost, ttl)
        return best

    def plan(t: int, hour: int, tail: bool) -> tuple[float, int, int]:
        """The expected cost after request t, with the best tail and hour refresh plans. The tail plan
        decides the classes up to an hour and only pays its refreshes beyond; the hour plan decides the
        classes beyond, so the two are chosen apart."""
        p = odds[t]
        cheapest: dict[tuple[int, int], float] = {}  # request t + 1 arrives with one of a few states

        def after(k: int, r: int, h: int) -> float:
            read, found, spent = _arrive(chat, covers, t, hour, tail, k, r, h)
            if (read, found) not in cheapest:
                cheapest[(read, found)] = decide(t + 1, read, found)[0]
            return cheapest[(read, found)] + spent

        beyond = [k for k in range(SHORT + 1, CLASSES + 1) if p[k - 1] > 0.0]
        unplanned = {k: after(k, 0, 0) for k in beyond}
        short = [
            sum(p[k - 1] * after(k, r, 0) for k in range(1, SHORT + 1) if p[k - 1] > 0.0)
            + sum(p[k - 1] * (after(k, r, 0) - unplanned[k]) for k in beyond)
            for r in tail_plans
        ]
        long = [sum(p[k - 1] * after(k, 0, h) for k in beyond if p[k - 1] > 0.0) for h in hour_plans]
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
    chat: ChatRequests, covers: _Covers, t: int, hour: int, tail: bool, k: int, r: int, h: int
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


class _Covers:
    """covers(j, t): the tokens of request t that an entry written at request j holds (the smallest
    share along the way), computed once per j."""

    def __init__(self, chat: ChatRequests) -> None:
        self.chat = chat
        self.rows: dict[int, list[int]] = {}

    def __call__(self, j: int, t: int) -> int:
        row = self.rows.get(j)
        if row is None:
            row, smallest = [], self.chat.tokens[j]
            for share in self.chat.common[j:]:
                smallest = min(smallest, share)
                row.append(smallest)
            self.rows[j] = row
        return row[t - j - 1]


@dataclass(frozen=True, slots=True)
class Foresight:
    """USD of the run's requests under the two optima of the module docstring."""

    hindsight: float
    mix_informed: float

    @property
    def ratio(self) -> float:
        return self.mix_informed / self.hindsight if self.hindsight else 1.0


def foresight(requests: Iterable[SentRequest], *, min_cacheable: Mapping[str, int]) -> Foresight:
    hindsight = mixed = 0.0
    for chat in chats_of(requests, min_cacheable=min_cacheable):
        hindsight += optimum_cost(chat, hindsight_odds(chat)) * chat.price_per_token
        mixed += optimum_cost(chat, mix_of(chat)) * chat.price_per_token
    return Foresight(hindsight, mixed)

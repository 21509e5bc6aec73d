"""When will a chat's next turn start? A forecast of the gap to its next request, learned per chat.

Each turn start is remembered as a `TurnStart` (when, how long since the previous request, how many
messages arrived since then). A past turn is an observation: its features and the gap that followed
it (until the next turn started). The forecast for now is the distribution of those gaps, each
weighted by how much its turn resembled the present one:

- the gap that just elapsed (a quick follow-up, a pause, a break: compared on a log scale),
- the chatter since the last request (messages stored since then, also on a log scale: in a group, a
  busy stretch brings the next mention sooner than a lone question at night),
- the time of day (a circular distance in hours: the last question of the evening is followed by a
  night; the chat's own history says when its evenings end),
- recency (older turns count less, so a chat that changes its habits is followed).

Before a chat has history, or where its history is thin, a prior for its kind fills in (`PRIORS`),
with the weight of `PRIOR_WEIGHT` observations. The one-to-one prior is the published timing of
human requests to chat assistants (median 60 s apart, 86% within 5 minutes, 98% within an hour); in a
group only the messages that address the bot are requests, a thinned stream of the same timing, so
its prior puts less weight on the next minutes and more past the hour.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

ChatKind = Literal["private", "group"]

HISTORY_KEPT: Final = 96
"""Turn starts remembered per session (about a week of a busy chat's turns)."""
PRIOR_WEIGHT: Final = 2.0
"""How many observations the prior counts as."""
ELAPSED_SCALE: Final = 1.0
"""Kernel width on ln(elapsed): a turn after 10 minutes resembles one after 4-27 minutes."""
CHATTER_SCALE: Final = 1.0
"""Kernel width on ln(1 + messages since the last request)."""
HOUR_SCALE: Final = 2.0
"""Kernel width on the time of day, hours."""
RECENCY: Final = 0.98
"""Weight kept per newer turn: an observation 35 turns old counts half."""
NO_PREVIOUS: Final = 86_400.0
"""The elapsed time a chat's first turn is compared as (nothing before it: like a day's break)."""

PRIORS: Final[Mapping[ChatKind, tuple[tuple[float, float], ...]]] = {
    "private": ((60.0, 0.50), (300.0, 0.86), (3_600.0, 0.98), (86_400.0, 1.0)),
    "group": ((60.0, 0.15), (300.0, 0.35), (3_600.0, 0.80), (86_400.0, 1.0)),
}
"""Cumulative probability that the next request comes within each gap (seconds), per chat kind;
log-linear in between, 0 at 1 s."""
ENDS: Final[Mapping[ChatKind, float]] = {"private": 1 / 3, "group": 0.0}
"""The prior share of a chat's turns after which its conversation ends (the next request, if any, is a
new conversation more than `PRIOR_SPAN` later). One-to-one: a conversation with an assistant lasts about
two to three requests on public logs (2.0 turns on average in LMSYS-Chat-1M, 2.5 in WildChat), taken as
one end in three turns; each chat's own ends soon outweigh it. A group is a standing conversation: its
silences are lulls, already in its prior."""
ENDS_WEIGHT: Final = 9.0
"""How many turns `ENDS` counts as: three conversations of the public logs' length, so a chat's first
quick exchange does not talk the prior out of ends before the chat has finished one."""
PRIOR_SPAN: Final = 3_600.0
"""The silences the priors know about: up to an hour they are the measured timing of requests within a
conversation; past it they only say that a silence ends within a day, which cannot tell a night from
a conversation that ended."""


@dataclass(frozen=True, slots=True)
class TurnStart:
    """One turn's first request: when (seconds since the epoch, UTC), the gap since the previous
    request (None: the session's first), the messages stored since the previous request, and the
    model calls the turn made (its first and its tool rounds: known once it ended, 1 until then)."""

    at: float
    elapsed: float | None
    chatter: int
    calls: int = 1

    def to_json(self) -> list[float]:
        elapsed = -1.0 if self.elapsed is None else self.elapsed
        return [self.at, elapsed, float(self.chatter), float(self.calls)]

    @classmethod
    def from_json(cls, raw: Sequence[float]) -> TurnStart:
        at, elapsed, chatter, *rest = (float(x) for x in raw)  # three fields before `calls` was kept
        return cls(at, None if elapsed < 0 else elapsed, int(chatter), int(rest[0]) if rest else 1)


def prior_cdf(kind: ChatKind, seconds: float) -> float:
    """The prior probability that the next request comes within `seconds`."""
    points = PRIORS[kind]
    if seconds <= 1.0:
        return 0.0
    previous = (1.0, 0.0)
    for x, p in points:
        if seconds <= x:
            share = math.log(seconds / previous[0]) / math.log(x / previous[0])
            return previous[1] + share * (p - previous[1])
        previous = (x, p)
    return 1.0


@dataclass(frozen=True, slots=True)
class _Sample:
    """Gaps (sorted) with the running sum of their weights."""

    gaps: tuple[float, ...] = ()
    cumulative: tuple[float, ...] = ()

    @classmethod
    def of(cls, weighted: Sequence[tuple[float, float]]) -> _Sample:
        ordered = sorted(weighted)
        running = 0.0
        cumulative: list[float] = []
        for _, weight in ordered:
            running += weight
            cumulative.append(running)
        return cls(tuple(g for g, _ in ordered), tuple(cumulative))

    @property
    def weight(self) -> float:
        return self.cumulative[-1] if self.cumulative else 0.0

    def within(self, seconds: float) -> float:
        index = bisect.bisect_right(self.gaps, seconds)
        return self.cumulative[index - 1] if index > 0 else 0.0


@dataclass(frozen=True, slots=True)
class GapForecast:
    """`cdf(x)`: the probability that the next request comes within x seconds. Three levels, each
    shrunk toward the one below with the weight of `PRIOR_WEIGHT` observations: the turns like this
    one, the chat's turns overall, the prior of its kind."""

    similar: _Sample
    overall: _Sample
    kind: ChatKind

    @property
    def evidence(self) -> float:
        """The weight of the chat's own observations (0 before it has any)."""
        return self.overall.weight

    def seen_beyond(self, seconds: float) -> float:
        """The weight of the chat's own gaps longer than `seconds`: how often it came back after a
        silence this long."""
        return self.overall.weight - self.overall.within(seconds)

    def chat_cdf(self, seconds: float) -> float:
        """The chat's overall mix, shrunk toward the prior."""
        prior = PRIOR_WEIGHT * prior_cdf(self.kind, seconds)
        return (self.overall.within(seconds) + prior) / (self.overall.weight + PRIOR_WEIGHT)

    def cdf(self, seconds: float) -> float:
        chat = PRIOR_WEIGHT * self.chat_cdf(seconds)
        return (self.similar.within(seconds) + chat) / (self.similar.weight + PRIOR_WEIGHT)

    def after(self, elapsed: float, *, ends: float = 0.0) -> SilenceForecast:
        """The forecast given that the next request has not come in the first `elapsed` seconds. With
        `ends` (the chance a turn ends its conversation, `ended_share`), the prior is a mixture: a
        conversation that goes on, timed as the prior says, or one that ended; the longer the silence,
        the likelier the end (`_prior_after`)."""
        return SilenceForecast(self, elapsed, ends)


@dataclass(frozen=True, slots=True)
class SilenceForecast:
    """`cdf(x)`: the probability that the next request comes within x more seconds, after `elapsed`
    seconds without one. Each level of the forecast is conditioned on the silence and shrunk toward the
    level below with `PRIOR_WEIGHT` against the weight of its own gaps longer than the silence, not
    against all of them: after a long silence only those few gaps speak, and two lunch breaks of three
    hours say less about the next hour than their share of a thin tail would claim."""

    forecast: GapForecast
    elapsed: float
    ends: float = 0.0

    def cdf(self, seconds: float) -> float:
        prior = _prior_after(self.forecast.kind, self.elapsed, seconds, self.ends)
        chat = _sample_after(self.forecast.overall, self.elapsed, seconds, prior)
        return _sample_after(self.forecast.similar, self.elapsed, seconds, chat)


def _prior_after(kind: ChatKind, elapsed: float, seconds: float, ends: float = 0.0) -> float:
    """The prior chance of a request within `seconds` more after a silence of `elapsed`. With a share
    `ends` of conversations ending, the silence is evidence of an end (Bayes: an ended conversation
    stays silent for certain, a going one only with the prior's survival), so the chance falls steeply
    once the silence outlasts most of a conversation's pauses."""
    gone = prior_cdf(kind, elapsed)
    if gone >= 1.0 - 1e-9:
        return 0.0  # the prior gives no chance to a silence this long: it knows nothing more
    going = 1.0 if ends <= 0.0 else (1.0 - ends) * (1.0 - gone) / (ends + (1.0 - ends) * (1.0 - gone))
    return going * (prior_cdf(kind, elapsed + seconds) - gone) / (1.0 - gone)


def _sample_after(sample: _Sample, elapsed: float, seconds: float, below: float) -> float:
    gone = sample.within(elapsed)
    came = sample.within(elapsed + seconds) - gone
    return (came + PRIOR_WEIGHT * below) / (sample.weight - gone + PRIOR_WEIGHT)


def _log_distance(a: float, b: float) -> float:
    return math.log(max(a, 1.0) / max(b, 1.0))


def _hour_distance(a: float, b: float) -> float:
    hours = abs(a - b) / 3_600.0 % 24.0
    return min(hours, 24.0 - hours)


def similarity(past: TurnStart, now: TurnStart) -> float:
    """How much a past turn's following gap says about the present one (0..1]."""
    elapsed = _log_distance(past.elapsed or NO_PREVIOUS, now.elapsed or NO_PREVIOUS) / ELAPSED_SCALE
    chatter = _log_distance(1.0 + past.chatter, 1.0 + now.chatter) / CHATTER_SCALE
    hour = _hour_distance(past.at, now.at) / HOUR_SCALE
    return math.exp(-0.5 * (elapsed * elapsed + chatter * chatter + hour * hour))


def forecast(history: Sequence[TurnStart], now: TurnStart, *, kind: ChatKind) -> GapForecast:
    """The forecast for the gap after the turn starting `now`, from the chat's earlier turn starts
    (oldest first; each observation's gap is the time to the turn after it)."""
    similar: list[tuple[float, float]] = []
    overall: list[tuple[float, float]] = []
    turns = (*history, now)
    observations = len(turns) - 1
    for i in range(observations):
        past, following = turns[i], turns[i + 1]
        gap = following.at - past.at
        if gap <= 0:
            continue
        recency = RECENCY ** (observations - 1 - i)
        overall.append((gap, recency))
        similar.append((gap, recency * similarity(past, now)))
    return GapForecast(_Sample.of(similar), _Sample.of(overall), kind)


def another_call(history: Sequence[TurnStart]) -> float:
    """The chance that a turn's first call is followed by another call of the same turn (a tool round,
    seconds later): the recency-weighted share of the chat's turns that made more than one call, shrunk
    toward none with the weight of `PRIOR_WEIGHT` turns (a chat is not assumed to use tools until it
    has been seen to)."""
    weight = more = 0.0
    for age, turn in enumerate(reversed(history)):
        w = RECENCY**age
        weight += w
        more += w if turn.calls > 1 else 0.0
    return more / (weight + PRIOR_WEIGHT)


def ended_share(history: Sequence[TurnStart], now: TurnStart, *, kind: ChatKind) -> float:
    """The chance that a turn of this chat ends its conversation: the recency-weighted share of its
    turns followed by a silence longer than `PRIOR_SPAN`, shrunk toward its kind's `ENDS` with the
    weight of `ENDS_WEIGHT` turns. The present conversation's turns count as turns that did not end it,
    so a long exchange makes an end after its next turn less likely than a short one."""
    turns = (*history, now)
    weight = ended = 0.0
    for age, (past, following) in enumerate(zip(reversed(turns[:-1]), reversed(turns[1:]), strict=True)):
        w = RECENCY**age
        weight += w
        ended += w if following.at - past.at > PRIOR_SPAN else 0.0
    return (ended + ENDS_WEIGHT * ENDS[kind]) / (weight + ENDS_WEIGHT)


def remember(history: Sequence[TurnStart], turn: TurnStart) -> tuple[TurnStart, ...]:
    """The history with `turn` appended, at most `HISTORY_KEPT` long."""
    return (*history, turn)[-HISTORY_KEPT:]

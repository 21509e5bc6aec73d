"""The prompt-cache plan (pure): what a session has cached, how each call of a turn is marked, and what
is cached after the turn.

`CacheState` is the session's durable cache knowledge (the cached prefixes by stored message id, when
each was last written or read, and the cache health); the gateway stores it with the session, so a
restart or another worker plans from the same facts. `plan_turn` turns it into a `TurnCachePlan`;
the agent loop's `CacheCursor` places each call's markers from that plan and decides the call's TTL;
`advance` folds what the turn cached back into a new `CacheState`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Literal, TypeVar

from agent.caching.forecast import ChatKind, TurnStart, another_call, forecast, remember
from agent.caching.health import CacheHealth
from agent.caching.markers import (
    CachedRequest,
    MarkerPlan,
    apply_cache_control,
    apply_marker_plan,
    strip_cache_control,
)
from agent.caching.policy import LiveEntry, choose_tail
from agent.caching.trust import RefreshRecord
from agent.models import TTL_SECONDS, CachePrices, CacheTTL
from agent.tokens import Calibration
from agent.types import Message

R = TypeVar("R")
CacheMode = Literal["5m", "1h", "auto", "api"]
EXPIRY_MARGIN = timedelta(seconds=5)
"""An entry this close to its expiry counts as expired: the request is sent a moment after deciding.
Only a moment: an entry given up while live is bought again whole (a one-hour prefix at 2x), while a
read marker on one that expired just before the request arrives writes that prefix at its own TTL,
which the request would have written anyway."""


@dataclass(frozen=True, slots=True)
class CachedPrefix:
    """A stored message whose prompt prefix has a cache entry: its TTL and when it was last written or
    read (each restarts the TTL)."""

    message_id: int
    ttl: CacheTTL
    at: datetime

    def live(self, now: datetime, margin: timedelta = EXPIRY_MARGIN) -> bool:
        return now - self.at <= timedelta(seconds=TTL_SECONDS[self.ttl]) - margin


@dataclass(frozen=True, slots=True)
class CacheState:
    """What a session's prompt cache holds (JSON with the session row)."""

    prefixes: tuple[CachedPrefix, ...] = ()
    health: Mapping[str, Any] = field(default_factory=dict)
    """`CacheHealth.to_dict()` of the session's chat."""
    calibration: Mapping[str, Any] = field(default_factory=dict)
    """`Calibration.to_dict()` as of the session's last turn: the token estimates its plan was made with,
    so a new process starts from them instead of from an unlearned factor."""
    turns: tuple[TurnStart, ...] = ()
    """The session's recent turn starts, oldest first: what the forecast of the next request learns from."""
    last_message_id: str | None = None
    """The id of the session's last response (cache diagnostics compare the next request with it)."""
    refresh_missed: int | None = None
    """A cached prefix (stored message id) whose keep-alive refresh found nothing to read: it is not
    refreshed again (`agent.caching.keepalive`); the next turn starts afresh."""
    refreshes: RefreshRecord = field(default_factory=RefreshRecord)
    """How the session's keep-alive refreshes have turned out (`agent.caching.trust`)."""

    def live(self, now: datetime) -> list[CachedPrefix]:
        return [p for p in self.prefixes if p.live(now, margin=timedelta(0))]

    def expired(self, now: datetime) -> bool:
        """True when no cache entry of the session can still be read."""
        return not self.live(now)

    def refreshed(
        self, message_id: int, at: datetime, *, read: bool, odds: float, health: CacheHealth
    ) -> CacheState:
        """The state after a keep-alive refresh of prefix `message_id` at `at`, sent on the forecast's
        `odds` of a request within the renewed life (`health` has recorded the call): its life restarts
        when the refresh read it; when it read nothing, the prefix is not refreshed again."""
        if not read:
            return dataclasses.replace(self, refresh_missed=message_id, health=health.to_dict())
        prefixes = tuple(
            CachedPrefix(p.message_id, p.ttl, at) if p.message_id == message_id else p for p in self.prefixes
        )
        before = [p for p in self.prefixes if p.message_id == message_id]
        life = TTL_SECONDS[before[0].ttl] if before else 0.0
        entry = (message_id, before[0].at.timestamp()) if before else (message_id, 0.0)
        refreshes = self.refreshes.predicted(at.timestamp(), life=life, odds=odds, entry=entry)
        return dataclasses.replace(self, prefixes=prefixes, refreshes=refreshes, health=health.to_dict())

    def judged(self, prefix: CachedPrefix, at: datetime, *, odds: float) -> CacheState:
        """The state after a refresh decision at `at` that let `prefix` go although the forecast gave
        the next request `odds` of coming within a renewed life: an outcome to learn from too (once per
        life of the entry: a later look at the same entry is the same forecast). A decision the forecast
        took no part in (`odds` 0: a silence longer than the chat has come back from) teaches nothing.
        An older entry let go after a newer one (a one-hour entry outliving a five-minute tail) is a
        decision of its own."""
        pending = self.refreshes.pending
        life_began = prefix.at.timestamp()
        if odds <= 0.0 or (pending is not None and pending.about(prefix.message_id, life_began)):
            return self
        life = TTL_SECONDS[prefix.ttl]
        refreshes = self.refreshes.predicted(
            at.timestamp(), life=life, odds=odds, entry=(prefix.message_id, life_began)
        )
        return dataclasses.replace(self, refreshes=refreshes)

    def to_json(self) -> dict[str, Any]:
        return {
            "prefixes": [[p.message_id, p.ttl, p.at.timestamp()] for p in self.prefixes],
            "health": dict(self.health),
            "calibration": dict(self.calibration),
            "turns": [t.to_json() for t in self.turns],
            "last_message_id": self.last_message_id,
            "refresh_missed": self.refresh_missed,
            "refreshes": self.refreshes.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> CacheState:
        if not data:
            return cls()
        prefixes = tuple(
            CachedPrefix(int(mid), "1h" if ttl == "1h" else "5m", datetime.fromtimestamp(float(at), UTC))
            for mid, ttl, at in data.get("prefixes", [])
        )
        return cls(
            prefixes=prefixes,
            health=dict(data.get("health") or {}),
            calibration=dict(data.get("calibration") or {}),
            turns=tuple(TurnStart.from_json(t) for t in data.get("turns") or []),
            last_message_id=data.get("last_message_id"),
            refresh_missed=data.get("refresh_missed"),
            refreshes=RefreshRecord.from_json(data.get("refreshes")),
        )

    def health_for(self, chat_key: str) -> CacheHealth:
        return CacheHealth.from_dict(self.health) if self.health else CacheHealth(chat_key)


@dataclass(frozen=True, slots=True)
class TurnCachePlan:
    """How one turn marks its calls.

    `rolling` set: `system_and_3` at that TTL on every call (a fixed `prompt_caching.cache_ttl`).
    Otherwise `read_and_tail`: the first call reads `reads` (window indices whose prefix is cached and
    live, with their TTL) and writes `first_tail`; each later call (a tool round, seconds later) reads
    what the turn cached so far and writes `round_tail`. All empty: no markers (caching off).
    """

    rolling: CacheTTL | None = None
    reads: tuple[tuple[int, CacheTTL], ...] = ()
    first_tail: CacheTTL | None = None
    round_tail: CacheTTL | None = None
    previous_message_id: str | None = None
    """The session's last response: cache diagnostics compare this turn's first request with it."""
    diagnose: bool = False
    """Ask the API's cache diagnostics why a prefix was not reused (whenever caching is on)."""
    automatic: bool = False
    """With `rolling`: no markers of ours, one top-level `cache_control` that the API places on the last
    cacheable block itself (its automatic caching)."""
    turn: TurnStart | None = None
    """This turn's start, remembered in `CacheState.turns` by `advance`."""


OFF = TurnCachePlan()


def plan_turn(
    mode: CacheMode | None,
    state: CacheState,
    *,
    window_ids: Sequence[int | None],
    tokens_after: Callable[[int], int],
    prompt_tokens: int,
    now: datetime,
    last_call_at: datetime | None,
    chatter: int,
    kind: ChatKind,
    prices: CachePrices,
) -> TurnCachePlan:
    """The turn's plan. Fixed modes roll `system_and_3`; `auto` reads every live cached prefix still in
    the window (`window_ids[i]` is the newest stored message of window message i) and writes the new
    tail only when `choose_tail` finds it cheaper under the forecast of the next turn: the tool rounds'
    tail against the next turn alone, the first call's against the chance that a round of its own
    follows first (`another_call`: a chat that calls tools buys the turn's hour on its rounds, whose
    new tokens are few). `tokens_after(id)`
    is the size of the stored messages after message `id`; `chatter` counts the messages stored since
    the previous request."""
    elapsed = None if last_call_at is None else max((now - last_call_at).total_seconds(), 0.0)
    turn = TurnStart(now.timestamp(), elapsed, chatter)
    if mode is None:
        return TurnCachePlan(turn=turn)
    previous = state.last_message_id
    if mode == "api":
        return TurnCachePlan(
            rolling="5m", automatic=True, turn=turn, previous_message_id=previous, diagnose=True
        )
    if mode != "auto":
        return TurnCachePlan(rolling=mode, turn=turn, previous_message_id=previous, diagnose=True)
    index_of = {mid: i for i, mid in enumerate(window_ids) if mid is not None}
    live = sorted(
        (p for p in state.prefixes if p.message_id in index_of and p.live(now)),
        key=lambda p: index_of[p.message_id],
    )
    reads = tuple((index_of[p.message_id], p.ttl) for p in live)
    layers = _layers(live, tokens_after, prompt_tokens=prompt_tokens, now=now)
    odds = forecast(state.turns, turn, kind=kind)
    tail = choose_tail(odds, layers=layers, prompt_tokens=prompt_tokens, prices=prices)
    follow_up = another_call(state.turns)
    first = (
        choose_tail(odds, layers=layers, prompt_tokens=prompt_tokens, follow_up=follow_up, prices=prices)
        if follow_up > 0.0
        else tail  # a chat not seen calling tools: the same choice
    )
    return TurnCachePlan(
        reads=reads,
        first_tail=first,
        round_tail=tail or "5m",
        turn=turn,
        previous_message_id=previous,
        diagnose=True,
    )


def _layers(
    live: Sequence[CachedPrefix], tokens_after: Callable[[int], int], *, prompt_tokens: int, now: datetime
) -> list[LiveEntry]:
    """The live entries as cache layers after this request: the newest is read, so its life restarts;
    the others keep what is left of theirs."""
    layers: list[LiveEntry] = []
    for n, prefix in enumerate(live):
        ttl = TTL_SECONDS[prefix.ttl]
        left = ttl if n == len(live) - 1 else ttl - (now - prefix.at).total_seconds()
        layers.append(LiveEntry(max(prompt_tokens - tokens_after(prefix.message_id), 0), left))
    return layers


@dataclass(frozen=True, slots=True)
class CachePoint(Generic[R]):
    """A window message whose prefix has a cache entry after the turn; `touched` when this turn wrote
    or read it (its expiry restarted)."""

    ref: R | None
    ttl: CacheTTL
    touched: bool


class CacheCursor:
    """One turn's cache bookkeeping in the loop: places each call's markers from the plan, decides the
    call's TTL (the longest marker it carries), and tracks which window prefixes are cached."""

    def __init__(self, plan: TurnCachePlan) -> None:
        self.plan = plan
        self.points: list[tuple[int, CacheTTL]] = list(plan.reads)
        """Window indices with a cache entry, oldest first (reset by a compaction)."""
        self.touched: set[int] = set()
        self.calls = 0
        self._placed: MarkerPlan | None = None

    def place(
        self, system: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> tuple[CachedRequest, CacheTTL | None]:
        """The call's request parts with their markers, and the call's TTL (None: no marker)."""
        plan = self.plan
        self._placed = None
        if plan.rolling is not None and plan.automatic:
            bare = strip_cache_control(system, messages, tools=tools)
            return dataclasses.replace(bare, automatic=plan.rolling, breakpoints=1), plan.rolling
        if plan.rolling is not None:
            return apply_cache_control(system, messages, ttl=plan.rolling, tools=tools), plan.rolling
        tail = plan.first_tail if self.calls == 0 else plan.round_tail
        if not plan.reads and tail is None and not self.points:
            return strip_cache_control(system, messages, tools=tools), None
        reads = tuple(r for r in self._readers() if r[0] < len(messages))
        self._placed = MarkerPlan(reads=reads, tail=tail if messages else None)
        ttls = [t for _, t in reads] + ([tail] if tail is not None and messages else [])
        call_ttl: CacheTTL | None = "1h" if "1h" in ttls else "5m" if ttls else None
        return apply_marker_plan(system, messages, plan=self._placed, tools=tools), call_ttl

    def called(self, count: int, *, cached: bool) -> None:
        """After a call of `count` messages: the newest read point was refreshed and the tail written.
        `cached` False: the call's usage reported neither a read nor a write (a prompt under the
        model's minimum cacheable length), so its markers left no entry."""
        self.calls += 1
        if not cached:
            return
        if self.plan.rolling is not None and count > 0:
            self.points = [(count - 1, self.plan.rolling)]
            self.touched = {count - 1}
            return
        placed = self._placed
        if placed is None:
            return
        if placed.reads:
            self.touched.add(max(i for i, _ in placed.reads))
        if placed.tail is not None and count > 0:
            self.points = [p for p in self.points if p[0] != count - 1] + [(count - 1, placed.tail)]
            self.touched.add(count - 1)

    def reset(self) -> None:
        """The prompt changed (a compaction): no cached prefix matches it any more."""
        self.points = []
        self.touched = set()

    def _readers(self) -> tuple[tuple[int, CacheTTL], ...]:
        """The newest cached point, and the newest one-hour point when older (the fallback read)."""
        if not self.points:
            return ()
        newest = self.points[-1]
        hour = next((p for p in reversed(self.points[:-1]) if p[1] == "1h"), None)
        return (newest,) if hour is None or newest[1] == "1h" else (hour, newest)

    def cache_points(self, refs: Sequence[R | None]) -> list[CachePoint[R]]:
        """The cached points after the turn, with the window's refs (`refs[i]` of window message i)."""
        return [CachePoint(refs[i], ttl, i in self.touched) for i, ttl in self._readers() if i < len(refs)]


def advance(
    state: CacheState,
    points: Sequence[tuple[int, CacheTTL, bool]],
    *,
    now: datetime,
    health: CacheHealth | None = None,
    calibration: Calibration | None = None,
    turn: TurnStart | None = None,
    last_message_id: str | None = None,
) -> CacheState:
    """The session's cache after a turn: `points` are (message id, TTL, touched) of the prefixes cached
    at its end; an untouched one keeps the time it was last written or read; `turn` (its start) joins
    the history the forecast learns from."""
    before = {p.message_id: p for p in state.prefixes}
    prefixes: list[CachedPrefix] = []
    for message_id, ttl, touched in points:
        old = before.get(message_id)
        if touched or old is not None:
            at = now if touched or old is None else old.at
            prefixes.append(CachedPrefix(message_id, ttl, at))
    return CacheState(
        prefixes=tuple(prefixes),
        health=health.to_dict() if health is not None else state.health,
        calibration=calibration.to_dict() if calibration is not None else state.calibration,
        turns=state.turns if turn is None else remember(state.turns, turn),
        last_message_id=last_message_id or state.last_message_id,
        refreshes=state.refreshes if turn is None else state.refreshes.settled(turn.at),
    )


def adopt_calibration(calibration: Calibration, state: CacheState) -> None:
    """A process that has learned nothing yet starts from the factor the session's last turn used."""
    if calibration.samples == 0 and state.calibration:
        stored = Calibration.from_dict(state.calibration)
        if stored.model == calibration.model:
            calibration.factor, calibration.samples = stored.factor, stored.samples

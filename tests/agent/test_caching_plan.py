"""`plan_turn`: which cached prefixes a turn reads and whether its new tail is written; the cache state
round-trips through JSON and advances after a turn."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from agent.caching.forecast import TurnStart
from agent.caching.health import CacheHealth
from agent.caching.plan import CachedPrefix, CacheState, TurnCachePlan, advance, plan_turn
from agent.models import STANDARD_CACHE_PRICES, lookup_model

MODEL = lookup_model("claude-sonnet-4-6")
NOW = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)
WINDOW = [1, 2, 4, 5, 8]
"""The newest stored message of each window message."""


def history(gaps: list[float], *, last_at: datetime) -> tuple[TurnStart, ...]:
    """Turn starts separated by `gaps` (seconds), the last one at `last_at`, each after the gap before it."""
    starts = [last_at.timestamp()]
    for gap in reversed(gaps):
        starts.insert(0, starts[0] - gap)
    elapsed: list[float | None] = [None, *gaps]
    return tuple(TurnStart(at, e, 1) for at, e in zip(starts, elapsed, strict=True))


def plan(prefixes: list[CachedPrefix], gaps: list[float], *, new: int, elapsed: float) -> TurnCachePlan:
    last = NOW - timedelta(seconds=elapsed)
    return plan_turn(
        "auto",
        CacheState(tuple(prefixes), turns=history(gaps, last_at=last)),
        window_ids=WINDOW,
        tokens_after=lambda _message_id: new,
        prompt_tokens=20_000,
        now=NOW,
        last_call_at=last,
        chatter=1,
        kind="private",
        prices=STANDARD_CACHE_PRICES,
    )


def test_live_prefixes_are_read_and_expired_or_vanished_ones_are_not() -> None:
    prefixes = [
        CachedPrefix(2, "1h", NOW - timedelta(minutes=50)),
        CachedPrefix(4, "5m", NOW - timedelta(minutes=6)),  # expired
        CachedPrefix(9, "1h", NOW - timedelta(minutes=1)),  # compacted away: not in the window
    ]
    result = plan(prefixes, [1_200.0] * 10, new=500, elapsed=360.0)
    assert result.reads == ((1, "1h"),)
    # Every gap is 20 min: the next call comes within the hour, so the tail is written for an hour.
    assert result.first_tail == "1h"
    assert result.round_tail == "1h"  # the turn's tool rounds keep the hour entry advancing


def test_a_chat_whose_turns_call_tools_buys_the_hour_on_the_rounds() -> None:
    prefixes = [CachedPrefix(2, "1h", NOW - timedelta(minutes=50))]
    last = NOW - timedelta(seconds=360.0)
    turns = tuple(replace(t, calls=3) for t in history([1_200.0] * 10, last_at=last))
    result = plan_turn(
        "auto", CacheState(tuple(prefixes), turns=turns), window_ids=WINDOW,
        tokens_after=lambda _message_id: 500, prompt_tokens=20_000, now=NOW, last_call_at=last,
        chatter=1, kind="private", prices=STANDARD_CACHE_PRICES,
    )  # fmt: skip
    # the same gaps as above, but every turn went on to a tool round: the first call is most likely
    # read seconds later by its own round, which writes the hour for its few new tokens
    assert result.first_tail == "5m"
    assert result.round_tail == "1h"


def test_a_tail_is_left_unmarked_when_the_chat_rarely_returns_within_the_hour() -> None:
    prefixes = [CachedPrefix(5, "1h", NOW - timedelta(minutes=40))]
    gaps = [2_400.0, 9_000.0, 9_000.0, 9_000.0, 9_000.0, 9_000.0]  # one 40-minute gap, then 2.5 h breaks
    result = plan(prefixes, gaps, new=3_000, elapsed=2_400.0)
    assert result.reads == ((3, "1h"),)
    assert result.first_tail is None


def test_an_entry_about_to_expire_is_not_counted_on() -> None:
    prefixes = [CachedPrefix(5, "5m", NOW - timedelta(seconds=297))]
    result = plan(prefixes, [60.0] * 10, new=500, elapsed=297.0)
    assert result.reads == ()
    assert result.first_tail is not None  # nothing to read: the whole prompt is written again


def test_an_hour_entry_with_twenty_seconds_left_is_read_not_written_again() -> None:
    # the request reaches the API within moments of the decision: giving up an entry with 20 s of
    # life would buy its whole prefix again at the one-hour price
    prefixes = [CachedPrefix(5, "1h", NOW - timedelta(seconds=3_580))]
    result = plan(prefixes, [3_580.0] * 10, new=500, elapsed=3_580.0)
    assert result.reads == ((3, "1h"),)


def test_fixed_modes_roll_and_disabled_caching_marks_nothing() -> None:
    state = CacheState((CachedPrefix(5, "1h", NOW),))
    args = {
        "chatter": 1,
        "kind": "private",
        "prices": STANDARD_CACHE_PRICES,
        "window_ids": WINDOW,
        "tokens_after": lambda _id: 0,
        "prompt_tokens": 20_000,
        "now": NOW,
        "last_call_at": NOW,
    }
    turn = TurnStart(NOW.timestamp(), 0.0, 1)
    fixed = plan_turn("1h", state, **args)  # type: ignore[arg-type]
    assert fixed == TurnCachePlan(rolling="1h", turn=turn, diagnose=True)
    assert plan_turn(None, state, **args) == TurnCachePlan(turn=turn)  # type: ignore[arg-type]
    automatic = plan_turn("api", state, **args)  # type: ignore[arg-type]
    assert automatic == TurnCachePlan(rolling="5m", automatic=True, turn=turn, diagnose=True)


def test_state_round_trips_and_advances_after_a_turn() -> None:
    health = CacheHealth("chat 1")
    old = CacheState((CachedPrefix(2, "1h", NOW - timedelta(minutes=50)), CachedPrefix(4, "5m", NOW)))
    later = NOW + timedelta(minutes=3)
    turn = TurnStart(later.timestamp(), 180.0, 2)
    new = advance(old, [(2, "1h", False), (9, "5m", True)], now=later, health=health, turn=turn)
    assert new.prefixes == (CachedPrefix(2, "1h", NOW - timedelta(minutes=50)), CachedPrefix(9, "5m", later))
    assert new.turns == (turn,)
    assert CacheState.from_json(new.to_json()) == new
    assert new.health_for("chat 1").chat_key == "chat 1"
    assert not new.expired(later + timedelta(minutes=4))
    assert new.expired(later + timedelta(minutes=11))
    assert CacheState.from_json(None) == CacheState()


def test_a_new_chat_caches_from_its_first_turn_and_its_follow_up_moves_it_to_the_hour() -> None:
    """Hand-computed on a tiny sequence: 3,000 tokens, 3,400 two minutes later, 3,800 twenty minutes
    after that."""
    state = CacheState()
    first = plan_turn(
        "auto", state, window_ids=[1], tokens_after=lambda _id: 3_000, prompt_tokens=3_000,
        now=NOW, last_call_at=None, chatter=1, kind="private", prices=STANDARD_CACHE_PRICES,
    )  # fmt: skip
    assert first.reads == ()
    # the prior of a one-to-one chat: a follow-up within 5 minutes is 86% likely, so the prompt is
    # written for 5 minutes and the follow-up carries it into the hour entry (no slow start either)
    assert first.first_tail == "5m"
    state = advance(state, [(1, "5m", True)], now=NOW, turn=first.turn)
    follow_up = NOW + timedelta(minutes=2)
    second = plan_turn(
        "auto", state, window_ids=[1, 2, 3], tokens_after=lambda _id: 400, prompt_tokens=3_400,
        now=follow_up, last_call_at=NOW, chatter=1, kind="private", prices=STANDARD_CACHE_PRICES,
    )  # fmt: skip
    assert second.reads == ((0, "5m"),)
    assert second.first_tail == "1h"
    state = advance(state, [(3, "1h", True)], now=follow_up, turn=second.turn)
    later = follow_up + timedelta(minutes=20)
    third = plan_turn(
        "auto", state, window_ids=[1, 2, 3, 4, 5], tokens_after=lambda i: {3: 400}.get(i, 0),
        prompt_tokens=3_800, now=later, last_call_at=follow_up, chatter=1, kind="private",
        prices=STANDARD_CACHE_PRICES,
    )  # fmt: skip
    assert third.reads == ((2, "1h"),)
    # billed, in token-units: 3,000 x 1.25 = 3,750; then 3,000 x 0.1 + 400 x 2.0 = 1,100; then the
    # 3,400 of the hour entry are read (340) twenty minutes later. Fixed 1h pays 6,000 for the first
    # turn instead of 3,750 (the rest is the same); with no marker until the chat had history the three
    # turns would have cost 3,000 + 3,400 + 3,800 = 10,200.
    assert [t.at for t in state.turns] == [NOW.timestamp(), follow_up.timestamp()]
    assert state.live(follow_up + timedelta(minutes=59)) != []


def test_the_hour_entry_advances_past_a_lagging_one() -> None:
    """A 1h entry 50 minutes old holds the first 10,000 tokens; a 5m entry (read now) 19,000; the chat
    alternates quick replies with 10-30 minute pauses, so a 5m tail would leave 10,000 tokens to buy
    again after a pause: the tail is written for the hour."""
    prefixes = [
        CachedPrefix(2, "1h", NOW - timedelta(minutes=50)),
        CachedPrefix(5, "5m", NOW - timedelta(minutes=2)),
    ]
    sizes = {2: 10_000, 5: 1_000}
    gaps = [60.0, 1_200.0, 90.0, 900.0, 60.0, 1_800.0, 120.0, 1_500.0, 60.0, 1_000.0]
    last = NOW - timedelta(minutes=2)
    result = plan_turn(
        "auto",
        CacheState(tuple(prefixes), turns=history(gaps, last_at=last)),
        window_ids=WINDOW,
        tokens_after=lambda message_id: sizes[message_id],
        prompt_tokens=20_000,
        now=NOW,
        last_call_at=last,
        chatter=1,
        kind="private",
        prices=STANDARD_CACHE_PRICES,
    )
    assert result.reads == ((1, "1h"), (3, "5m"))
    assert result.first_tail == "1h"

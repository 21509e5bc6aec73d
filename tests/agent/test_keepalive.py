"""Keeping a chat's newest cache entry alive: a refresh is sent only when the chat's own timing says it
pays, with costs computed by hand on tiny cases (token x base input price)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from agent.caching.forecast import ChatKind, TurnStart, ended_share, forecast
from agent.caching.health import CacheHealth
from agent.caching.keepalive import (
    HORIZON,
    LEAD,
    Refresh,
    Trusted,
    best_refresh_value,
    next_look,
    plan_refresh,
    refresh_value,
)
from agent.caching.plan import CachedPrefix, CacheState, advance
from agent.caching.policy import LiveEntry
from agent.caching.trust import Pending, RefreshRecord
from agent.models import STANDARD_CACHE_PRICES as PRICES

T0 = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Uniform:
    """The next request comes uniformly between `low` and `high` seconds."""

    low: float
    high: float

    def cdf(self, seconds: float) -> float:
        return min(max((seconds - self.low) / (self.high - self.low), 0.0), 1.0)


def test_trusted_odds_are_the_forecasts_scaled_and_capped_at_certainty() -> None:
    assert Trusted(Uniform(0.0, 600.0), 0.5).cdf(300.0) == pytest.approx(0.25)
    assert Trusted(Uniform(0.0, 600.0), 2.0).cdf(450.0) == 1.0


def test_a_refresh_is_worth_the_read_it_costs_when_the_next_request_surely_comes_within_its_life() -> None:
    # 10,000 cached tokens, 60 s left, the next request 200-300 s from now; re-buying costs 1.25.
    # not refreshed: expired by then, bought again: 12,500; refreshed: read at 0.1: 1,000, plus the
    # refresh's own read, 1,000; saving 10,500
    value = refresh_value(
        Uniform(200.0, 300.0), newest=LiveEntry(10_000, 60.0), others=[], ttl=300.0, rebuy=1.25
    )
    assert value == pytest.approx(12_500 - 1_000 - 1_000)


def test_a_refresh_is_not_worth_it_when_the_next_request_comes_after_its_life_either_way() -> None:
    value = refresh_value(
        Uniform(400.0, 500.0), newest=LiveEntry(10_000, 60.0), others=[], ttl=300.0, rebuy=1.25
    )
    assert value == pytest.approx(-1_000)


def test_an_older_hour_entry_makes_a_refresh_of_the_newest_worth_only_the_tokens_after_it() -> None:
    # 8,000 of the 10,000 tokens are held for the next 50 minutes anyway: a refresh saves re-buying the
    # last 2,000 (2,500 - 200 read), and its own read is of all 10,000 (1,000)
    value = refresh_value(
        Uniform(200.0, 300.0),
        newest=LiveEntry(10_000, 60.0),
        others=[LiveEntry(8_000, 3_000.0)],
        ttl=300.0,
        rebuy=1.25,
    )
    assert value == pytest.approx((800 + 2_500) - 1_000 - 1_000)


def history(gap: float, count: int, *, last: datetime) -> tuple[TurnStart, ...]:
    """`count` turn starts `gap` seconds apart, the last at `last`."""
    end = last.timestamp()
    return tuple(TurnStart(end - (count - 1 - i) * gap, gap, 0) for i in range(count))


def cached(state_turns: tuple[TurnStart, ...], *, written: datetime, ttl: str = "5m") -> CacheState:
    return CacheState(prefixes=(CachedPrefix(7, "5m" if ttl == "5m" else "1h", written),), turns=state_turns)


def decide(state: CacheState, now: datetime, *, tokens: int = 6_000) -> Refresh | None:
    return plan_refresh(
        state, now=now, prefix_tokens=lambda _id: tokens, kind="private", min_cacheable=1_024, prices=PRICES
    )


def test_a_chat_that_comes_back_every_six_minutes_is_kept_warm_before_its_entry_expires() -> None:
    state = cached(history(360.0, 20, last=T0), written=T0)
    refresh = decide(state, T0 + timedelta(seconds=240))
    assert refresh is not None
    assert refresh.due
    assert (refresh.prefix.message_id, refresh.tokens) == (7, 6_000)
    assert refresh.left == pytest.approx(60.0)


def test_an_entry_with_life_left_is_not_looked_at_yet() -> None:
    state = cached(history(360.0, 20, last=T0), written=T0)
    assert decide(state, T0 + timedelta(seconds=300 - LEAD - 30)) is None


def test_a_chat_whose_pauses_are_hours_lets_its_five_minute_entry_go() -> None:
    state = cached(history(3 * 3_600.0, 20, last=T0), written=T0)
    refresh = decide(state, T0 + timedelta(seconds=240))
    assert refresh is not None
    assert not refresh.due


def test_a_silence_longer_than_the_chat_has_come_back_from_is_not_bridged() -> None:
    # every gap of this chat was 6 minutes; an hour entry about to expire after 59 minutes of silence
    state = cached(history(360.0, 20, last=T0), written=T0, ttl="1h")
    refresh = decide(state, T0 + timedelta(seconds=3_540))
    assert refresh is not None
    assert not refresh.due


def test_a_new_one_to_one_chats_first_pause_is_judged_on_the_prior_but_not_past_the_hour() -> None:
    # ten quick turns, no pause yet: within the hour the prior's measured timing says a person who
    # has been silent four minutes is back within the next five about one time in three if the
    # conversation goes on; weighing that it may have ended (`forecast.ENDS`) leaves about one in five,
    # which still pays for the refresh; an hour entry's refresh would reach past the hour, where the
    # prior knows nothing
    state = cached(history(60.0, 10, last=T0), written=T0)
    tail = decide(state, T0 + timedelta(seconds=240))
    assert tail is not None
    assert tail.due
    assert 0.15 < tail.odds < 0.3
    hour = decide(cached(history(60.0, 10, last=T0), written=T0, ttl="1h"), T0 + timedelta(seconds=3_540))
    assert hour is not None
    assert not hour.due
    assert hour.value == 0.0


def test_a_group_is_kept_warm_through_a_silence_it_came_back_from_once_a_one_to_one_chat_is_not() -> None:
    # six-minute gaps, and one lull of an hour and a half five turns ago; an hour entry about to expire
    # after 59 minutes of silence
    quick = history(360.0, 20, last=T0 - timedelta(seconds=5 * 360 + 5_400))
    lull = TurnStart(quick[-1].at + 5_400.0, 5_400.0, 0)
    after = tuple(TurnStart(lull.at + (i + 1) * 360.0, 360.0, 0) for i in range(5))
    state = cached((*quick, lull, *after), written=T0, ttl="1h")
    assert after[-1].at == T0.timestamp()
    now = T0 + timedelta(seconds=3_540)

    def refresh(kind: ChatKind) -> Refresh | None:
        return plan_refresh(
            state, now=now, prefix_tokens=lambda _id: 6_000, kind=kind, min_cacheable=1_024, prices=PRICES
        )

    group, private = refresh("group"), refresh("private")
    assert group is not None
    assert private is not None
    assert group.due
    assert not private.due


def test_a_prompt_below_the_cacheable_minimum_is_never_refreshed() -> None:
    state = cached(history(360.0, 20, last=T0), written=T0)
    assert decide(state, T0 + timedelta(seconds=240), tokens=800) is None


def test_a_refresh_that_read_nothing_is_not_repeated_and_the_next_turn_starts_afresh() -> None:
    state = cached(history(360.0, 20, last=T0), written=T0)
    now = T0 + timedelta(seconds=240)
    missed = state.refreshed(7, now, read=False, odds=0.5, health=CacheHealth("chat"))
    assert decide(missed, now) is None
    after_turn = advance(missed, [(9, "5m", True)], now=now + timedelta(seconds=60))
    assert after_turn.refresh_missed is None
    assert CacheState.from_json(missed.to_json()).refresh_missed == 7


def test_a_refresh_that_read_restarts_the_entry_life() -> None:
    state = cached(history(360.0, 20, last=T0), written=T0)
    now = T0 + timedelta(seconds=240)
    kept = state.refreshed(7, now, read=True, odds=0.5, health=CacheHealth("chat"))
    assert kept.prefixes == (CachedPrefix(7, "5m", now),)
    assert decide(kept, now + timedelta(seconds=60)) is None  # 240 s left: not due again yet


def unused(count: int, *, odds: float) -> RefreshRecord:
    """A record of `count` refreshes sent on `odds` each, none followed by a request in time."""
    record = RefreshRecord()
    for i in range(count):
        record = record.predicted(T0.timestamp() - 3_600.0 * (count - i), life=300.0, odds=odds)
    return record.settled(T0.timestamp())


def test_how_far_the_chat_has_trusted_its_forecast_decides_between_refreshing_and_letting_go() -> None:
    # the next request uniform over the next 1,000 s; 10,000 tokens with 60 s left, re-bought at 1.25.
    # value = (p(300) - p(60)) x (12,500 - 1,000) - 1,000 for the refresh's own read
    def value(trust: float) -> float:
        return refresh_value(
            Trusted(Uniform(0.0, 1_000.0), trust),
            newest=LiveEntry(10_000, 60.0),
            others=[],
            ttl=300.0,
            rebuy=1.25,
        )

    assert value(1.0) == pytest.approx(0.24 * 11_500 - 1_000)  # 1,760: refreshed
    assert value(0.25) == pytest.approx(0.06 * 11_500 - 1_000)  # -310: let go


def test_unused_refreshes_lower_the_value_of_the_next_one_and_leave_the_forecast_as_it_is() -> None:
    gaps = [450.0, 3 * 3_600.0] * 6
    turns: list[TurnStart] = []
    at = T0.timestamp() - sum(gaps)
    for i, gap in enumerate([None, *gaps]):
        at += gap or 0.0
        turns.append(TurnStart(at, gap if i else None, 0))
    state = cached(tuple(turns), written=T0)
    now = T0 + timedelta(seconds=240)
    fresh = decide(state, now)
    assert fresh is not None
    assert fresh.due
    values = []
    for count in (1, 3, 10):
        doubted = decide(dataclasses.replace(state, refreshes=unused(count, odds=fresh.odds)), now)
        assert doubted is not None
        assert doubted.odds == pytest.approx(fresh.odds)  # the forecast itself: only trusted less
        values.append(doubted.value)
    assert fresh.value > values[0] > values[1] > values[2]


def test_a_let_go_decision_is_recorded_once_per_entry_life_and_settled_by_the_next_turn() -> None:
    state = cached(history(360.0, 20, last=T0), written=T0)
    prefix = state.prefixes[0]
    now = T0 + timedelta(seconds=240)
    judged = state.judged(prefix, now, odds=0.4)
    assert judged.refreshes.pending == Pending(now.timestamp(), 300.0, 0.4, 7, T0.timestamp())
    assert judged.judged(prefix, now + timedelta(seconds=30), odds=0.3) is judged  # same entry, same life
    assert state.judged(prefix, now, odds=0.0) is state  # the forecast took no part: nothing to learn
    # the chat came back 100 s later, within the life a refresh would have bought: trust rises
    back = now + timedelta(seconds=100)
    after = advance(judged, [(9, "5m", True)], now=back, turn=TurnStart(back.timestamp(), 340.0, 0))
    assert after.refreshes.pending is None
    assert (after.refreshes.expected, after.refreshes.came) == (pytest.approx(0.4), 1.0)
    assert after.refreshes.trust() == pytest.approx(2.0 / 1.4)
    assert CacheState.from_json(after.to_json()).refreshes == after.refreshes


def test_an_hour_entry_let_go_after_a_newer_five_minute_tail_is_a_decision_of_its_own() -> None:
    hour = CachedPrefix(5, "1h", T0 - timedelta(minutes=50))
    tail = CachedPrefix(7, "5m", T0)
    state = CacheState(prefixes=(hour, tail), turns=history(360.0, 20, last=T0))
    tail_let_go = state.judged(tail, T0 + timedelta(seconds=240), odds=0.4)
    later = T0 + timedelta(minutes=9)
    hour_let_go = tail_let_go.judged(hour, later, odds=0.2)
    assert hour_let_go is not tail_let_go
    # the tail's decision was settled as not followed; the hour entry's is now the pending one
    assert hour_let_go.refreshes.expected == pytest.approx(0.4)
    assert hour_let_go.refreshes.came == 0.0
    assert hour_let_go.refreshes.pending == Pending(later.timestamp(), 3_600.0, 0.2, 5, hour.at.timestamp())


def test_a_refreshed_entry_is_judged_again_at_the_end_of_its_renewed_life() -> None:
    state = cached(history(360.0, 20, last=T0), written=T0)
    at = T0 + timedelta(seconds=250)
    kept = state.refreshed(7, at, read=True, odds=0.5, health=CacheHealth("chat"))
    assert kept.refreshes.pending == Pending(at.timestamp(), 300.0, 0.5, 7, T0.timestamp())
    renewed = kept.prefixes[0]
    let_go = kept.judged(renewed, at + timedelta(seconds=250), odds=0.3)
    assert let_go is not kept
    assert let_go.refreshes.expected == pytest.approx(0.5)  # the refresh went unused


def test_the_next_look_is_when_the_earliest_refresh_window_still_open_opens() -> None:
    turn = (TurnStart(T0.timestamp(), None, 0),)
    tail = CachedPrefix(9, "5m", T0)
    hour = CachedPrefix(5, "1h", T0)
    state = CacheState(prefixes=(hour, tail), turns=turn)
    window = T0 + timedelta(seconds=300 - LEAD)  # the tail's last 90 s, until 10 s before its end
    assert next_look(state, T0) == window
    assert next_look(state, T0 + timedelta(seconds=250)) == window  # open: a look may judge it again
    assert next_look(state, T0 + timedelta(seconds=290)) == T0 + timedelta(seconds=3_600 - LEAD)
    assert next_look(state, T0 + timedelta(seconds=3_590)) is None
    # a refresh that read nothing is not tried again; without a turn there is nothing to judge by
    assert next_look(dataclasses.replace(state, refresh_missed=9), T0) == T0 + timedelta(seconds=3_510)
    assert next_look(CacheState(prefixes=(tail,)), T0) is None


def test_no_look_is_scheduled_a_horizon_after_the_chats_last_turn() -> None:
    last = T0 - timedelta(seconds=HORIZON - 200)  # the tail's window would open 10 s past the horizon
    state = CacheState(prefixes=(CachedPrefix(9, "5m", T0),), turns=(TurnStart(last.timestamp(), None, 0),))
    assert next_look(state, T0) is None
    later_turn = dataclasses.replace(state, turns=(TurnStart(last.timestamp() + 20, None, 0),))
    assert next_look(later_turn, T0) == T0 + timedelta(seconds=210)


@dataclass(frozen=True)
class _Within:
    """The next request comes between 100 s and 300 s from now with chance `p`, else much later."""

    p: float

    def cdf(self, seconds: float) -> float:
        return self.p if seconds >= 100.0 else 0.0


def test_a_cheaper_cache_read_makes_a_long_shot_refresh_pay() -> None:
    # a five-minute entry of 10,000 tokens with 30 s left, re-bought at 1.25x when it expires: a refresh
    # costs one read and saves (1.25 - read) x 10,000 with chance p, so it pays from
    # p = read / (1.25 - read): 0.087 at 0.1x, 0.042 at 0.05x (Opus 5.5, Sonnet 5.5); at p = 0.06
    # hand-computed: 0.06 x 1.15 - 0.1 = -0.031 and 0.06 x 1.20 - 0.05 = +0.022 per token
    newest = LiveEntry(10_000, 30.0)

    def value(read: float) -> float:
        prices = dataclasses.replace(PRICES, read=read)
        return refresh_value(_Within(0.06), newest=newest, others=[], ttl=300.0, rebuy=1.25, prices=prices)

    assert value(0.1) == pytest.approx(-0.031 * 10_000)
    assert value(0.05) == pytest.approx(0.022 * 10_000)


def quick_exchange(*, last: datetime) -> tuple[TurnStart, ...]:
    """A new one-to-one chat's first conversation: nine requests over twelve minutes."""
    offsets = (0, 60, 150, 200, 300, 420, 500, 620, 720)
    start = last.timestamp() - offsets[-1]
    return tuple(
        TurnStart(start + o, None if i == 0 else float(o - offsets[i - 1]), 0) for i, o in enumerate(offsets)
    )


def test_a_short_conversation_is_let_go_within_a_few_refreshes_of_its_end() -> None:
    # Sonnet 5.5's read price; each look is the last 90 s of an entry renewed every five minutes
    sonnet55 = dataclasses.replace(PRICES, read=0.05)
    turns = quick_exchange(last=T0)
    due = []
    for silence in range(210, 3_600, 300):
        state = cached(turns, written=T0 + timedelta(seconds=silence - 210))
        refresh = plan_refresh(
            state, now=T0 + timedelta(seconds=silence), prefix_tokens=lambda _id: 6_000, kind="private",
            min_cacheable=1_024, prices=sonnet55,
        )  # fmt: skip
        assert refresh is not None
        due.append(refresh.due)
    # the first pauses are bridged, then the conversation is taken to have ended (before the weighing
    # of ends, every look of the hour refreshed)
    assert due[0]
    assert 1 <= sum(due) <= 5
    assert due == sorted(due, reverse=True)


def test_a_chat_whose_conversations_run_long_keeps_its_pauses_warm() -> None:
    # three earlier conversations of thirty requests each, hours apart: this chat's turns rarely end one
    turns: list[TurnStart] = []
    at = T0.timestamp() - 3 * 6 * 3_600
    for _ in range(3):
        for n in range(30):
            gap = (30.0, 90.0, 240.0, 420.0)[n % 4]
            turns.append(TurnStart(at, gap, 0))
            at += gap
        at += 5 * 3_600
    turns += quick_exchange(last=T0)
    assert ended_share(turns[:-1], turns[-1], kind="private") < 0.1
    refresh = decide(cached(tuple(turns), written=T0), T0 + timedelta(seconds=240))
    assert refresh is not None
    assert refresh.due
    # the same pause in a chat whose conversations were two requests long is let go
    short: list[TurnStart] = []
    at = T0.timestamp() - 20 * 3 * 3_600
    for _ in range(20):
        short += [TurnStart(at, 3 * 3_600.0, 0), TurnStart(at + 60.0, 60.0, 0)]
        at += 3 * 3_600
    short += quick_exchange(last=T0)[-2:]
    assert ended_share(short[:-1], short[-1], kind="private") > 0.4
    brief = decide(cached(tuple(short), written=T0), T0 + timedelta(seconds=240))
    assert brief is not None
    assert brief.value < refresh.value


def test_the_share_of_ending_turns_learns_from_the_chat() -> None:
    turns = quick_exchange(last=T0)
    assert ended_share(turns[:1], turns[1], kind="private") == pytest.approx(9 / 3 / (1 + 9))
    assert ended_share(turns[:-1], turns[-1], kind="group") == 0.0
    # a conversation that ended after two turns, two hours before: more ends than the quick exchange alone
    earlier = (TurnStart(turns[0].at - 7_260, None, 0), TurnStart(turns[0].at - 7_200, 60.0, 0))
    shifted = (*earlier, *turns)
    assert ended_share(shifted[:-1], shifted[-1], kind="private") > ended_share(
        turns[:-1], turns[-1], kind="private"
    )


def test_the_silence_forecast_falls_faster_when_conversations_end() -> None:
    turns = quick_exchange(last=T0)
    odds = forecast(turns[:-1], turns[-1], kind="private")
    for silence in (210.0, 810.0, 3_000.0):
        assert odds.after(silence, ends=1 / 3).cdf(300.0) < odds.after(silence).cdf(300.0)
    ratio = [odds.after(s, ends=1 / 3).cdf(300.0) / odds.after(s).cdf(300.0) for s in (210.0, 810.0, 3_000.0)]
    assert ratio == sorted(ratio, reverse=True)  # the longer the silence, the likelier an end


def test_a_run_of_refreshes_is_weighed_where_one_alone_would_not_pay() -> None:
    # the next request surely comes 12-14 minutes from now: one refresh (five more minutes) never
    # reaches it, three do; the reads are paid only while nobody has come: 3 x 1,000 here
    odds = Uniform(720.0, 840.0)
    newest = LiveEntry(10_000, 60.0)
    one = refresh_value(odds, newest=newest, others=[], ttl=300.0, rebuy=1.25)
    three = refresh_value(odds, newest=newest, others=[], ttl=300.0, rebuy=1.25, rounds=3)
    assert one == pytest.approx(-1_000)
    assert three == pytest.approx(12_500 - 1_000 - 3 * 1_000)
    best = best_refresh_value(
        odds, newest=newest, others=[], ttl=300.0, rebuy=1.25, prices=PRICES, reach=3_600
    )
    assert best == pytest.approx(three)
    # the same return out of reach (past the silences the chat has come back from) is not paid for
    near = best_refresh_value(odds, newest=newest, others=[], ttl=300.0, rebuy=1.25, prices=PRICES, reach=600)
    assert near < 0


def test_a_chat_that_comes_back_after_half_an_hour_is_kept_warm_through_it() -> None:
    # six conversations of four quick requests, each followed by a 35-minute break; the seventh has
    # just ended: ten minutes into the silence, its own history says the return is 25 minutes away
    turns: list[TurnStart] = []
    at = T0.timestamp() - 6 * (3 * 60 + 2_100)
    for _ in range(6):
        for n in range(4):
            turns.append(TurnStart(at, 2_100.0 if n == 0 else 60.0, 0))
            at += 60.0 if n < 3 else 2_100.0
    turns += history(60.0, 4, last=T0)
    refresh = decide(cached(tuple(turns), written=T0 + timedelta(seconds=300)), T0 + timedelta(seconds=540))
    assert refresh is not None
    assert refresh.due
    # a new chat's first conversation with no such history is let go at the same point
    new = decide(
        cached(history(60.0, 4, last=T0), written=T0 + timedelta(seconds=300)), T0 + timedelta(seconds=540)
    )
    assert new is not None
    assert not new.due

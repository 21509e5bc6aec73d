"""What foresight is worth: both optima hand-computed on a tiny chat, with and without keep-alive
refreshes, tool rounds' odds kept apart, and a run's requests grouped into chats."""

from __future__ import annotations

from typing import Any

import pytest

from bench.foresight import (
    CLASSES,
    ChatRequests,
    chats_of,
    foresight,
    gap_class,
    hindsight_odds,
    mix_of,
    optimum_cost,
)
from bench.oracle import SentRequest

MODEL = "claude-sonnet-4-6"


def chat(at: list[float], tokens: list[int]) -> ChatRequests:
    """Requests that each extend the one before."""
    return ChatRequests(tuple(at), tuple(tokens), tuple(tokens[:-1]), floor=1_024, price_per_token=1.0)


def test_both_optima_on_three_requests() -> None:
    """2,000, 2,500 and 3,000 tokens; the second 2 minutes after the first, the third 30 minutes later.
    Hindsight: 5m on the first (2,500), the second reads it (200) and writes its 500 new for an hour
    (1,000), the third reads the hour (250) and pays its 500 uncached (last): 4,450.
    Knowing only that half the gaps are quick and half are pauses, the first request is best written for
    an hour (expected 5,800 against 5,975 for five minutes, 7,000 unmarked); the second reads 2,000 and
    writes its 500 for five minutes (825, expecting a quick third half the time); the pause comes, the
    third reads the first's hour entry (200) and pays 1,000: 4,000 + 825 + 1,200 = 6,025."""
    requests = chat([0.0, 120.0, 1_920.0], [2_000, 2_500, 3_000])
    assert optimum_cost(requests, hindsight_odds(requests)) == pytest.approx(4_450.0)
    assert optimum_cost(requests, mix_of(requests)) == pytest.approx(6_025.0)


def test_under_the_minimum_nothing_is_marked() -> None:
    requests = chat([0.0, 60.0, 120.0], [500, 600, 700])
    assert optimum_cost(requests, hindsight_odds(requests)) == pytest.approx(1_800.0)


def test_tool_rounds_are_judged_by_what_follows_tool_rounds() -> None:
    # a first call, its round 2 s later, the next turn 2 minutes after that, its round, then a break
    requests = chat([0.0, 2.0, 122.0, 125.0, 4_125.0], [2_000, 2_100, 2_400, 2_500, 2_800])
    first = tuple(float(k == 1) for k in range(1, CLASSES + 1))  # always followed within 5 minutes
    rounds = tuple(0.5 if k in (1, 13) else 0.0 for k in range(1, CLASSES + 1))  # 2 minutes, or over an hour
    assert mix_of(requests) == [first, rounds, first, rounds]


def _body(*texts: str) -> dict[str, Any]:
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": text} for i, text in enumerate(texts)]
    return {"model": MODEL, "system": "you are helpful " * 200, "messages": messages}


def test_a_runs_requests_are_grouped_into_chats_and_hindsight_is_never_dearer() -> None:
    words = "the deploy failed again after the config moved " * 40
    a, b = [f"chat a {words}", "ok", "more"], [f"chat b {words}", "sure", "then"]
    sent = [
        SentRequest(0.0, _body(a[0]), {}),
        SentRequest(30.0, _body(b[0]), {}),
        SentRequest(90.0, _body(*a), {}),
        SentRequest(2_000.0, _body(*b), {}),
        SentRequest(2_100.0, {**_body(*b), "max_tokens": 0}, {}),  # a keep-alive refresh: not a use
    ]
    chats = chats_of(sent, min_cacheable={MODEL: 1_024})
    assert sorted(len(c.at) for c in chats) == [2, 2]
    assert all(c.common[0] < c.tokens[1] for c in chats)  # the second request extends the first
    result = foresight(sent, min_cacheable={MODEL: 1_024})
    assert 0.0 < result.hindsight <= result.mix_informed


def test_a_chats_first_request_is_grouped_with_the_rest_although_it_carries_its_marker() -> None:
    words = "the deploy failed again after the config moved " * 40
    first = _body(f"chat a {words}")
    first["messages"][0]["content"] = [
        {"type": "text", "text": f"chat a {words}", "cache_control": {"type": "ephemeral"}}
    ]
    later = _body(f"chat a {words}", "ok", "more")
    later["messages"][0]["content"] = [{"type": "text", "text": f"chat a {words}"}]
    chats = chats_of(
        [SentRequest(0.0, first, {}), SentRequest(60.0, later, {})], min_cacheable={MODEL: 1_024}
    )
    assert [len(c.at) for c in chats] == [2]


def test_gap_classes_are_five_minute_steps_to_the_hour_then_hours() -> None:
    seconds = (60.0, 300.0, 301.0, 3_600.0, 3_601.0, 7_200.0, 10_800.0, 10_801.0)
    assert [gap_class(s) for s in seconds] == [1, 1, 2, 12, 13, 13, 14, 15]


def test_a_pause_of_eight_minutes_is_bridged_by_one_refresh_of_the_tail() -> None:
    """2,000 tokens, then 2,500 eight minutes later. Markers only, nothing pays for the pause: 4,500
    unmarked (a 5m write expires: 5,000; an hour write: 4,000 + 200 + 500). With refreshes: written for
    5 minutes (2,500), refreshed once at 5 minutes (200), read by the second (200) which pays its 500
    new tokens uncached (the chat's last): 3,400."""
    requests = chat([0.0, 480.0], [2_000, 2_500])
    assert optimum_cost(requests, hindsight_odds(requests)) == pytest.approx(4_500.0)
    assert optimum_cost(requests, hindsight_odds(requests), refresh=True) == pytest.approx(3_400.0)


def test_an_hour_entry_is_carried_through_ninety_minutes_by_one_refresh() -> None:
    """20,000 tokens; a reply a minute later (20,500); the third request 90 minutes after that (21,000).
    The first is written for 5 minutes (25,000); the second reads it (2,000) and writes its 500 for the
    hour (1,000); one refresh at the hour (2,050) keeps it for the third, which reads 20,500 (2,050) and
    pays 500: 32,600. Markers only the third pays all 21,000: 48,500."""
    requests = chat([0.0, 60.0, 5_460.0], [20_000, 20_500, 21_000])
    assert optimum_cost(requests, hindsight_odds(requests)) == pytest.approx(48_500.0)
    assert optimum_cost(requests, hindsight_odds(requests), refresh=True) == pytest.approx(32_600.0)

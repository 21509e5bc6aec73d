"""The `read_and_tail` placement: reads of live cache entries plus an optional tail, on the fake cache."""

from __future__ import annotations

import copy
from typing import Any

from agent.caching.markers import (
    CachedRequest,
    MarkerPlan,
    apply_cache_control,
    apply_marker_plan,
    count_breakpoints,
)
from agent.types import Message
from tests.fakes.anthropic.cache import PrefixCache, serialize_prefix

SYSTEM = "You are a helpful assistant. " * 200
FIVE = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def chatter(count: int) -> Message:
    """One merged user message of `count` text blocks (more than the 20-block lookback when > 20)."""
    return {
        "role": "user",
        "content": [{"type": "text", "text": f"line {i} " + "word " * 30} for i in range(count)],
    }


def markers(request: CachedRequest) -> list[tuple[int, dict[str, str]]]:
    found: list[tuple[int, dict[str, str]]] = []
    for i, message in enumerate(request.messages):
        content = message["content"]
        if isinstance(content, list):
            found += [(i, dict(b["cache_control"])) for b in content if "cache_control" in b]
    return found


def body(request: CachedRequest) -> dict[str, Any]:
    return {"system": request.system_blocks, "messages": request.messages, "tools": request.tools or []}


def test_the_live_prefix_is_read_and_the_unmarked_tail_is_billed_once() -> None:
    cache = PrefixCache()
    first_messages: list[Message] = [{"role": "user", "content": "question " + "detail " * 400}]
    first = apply_cache_control(SYSTEM, first_messages, ttl="1h")
    written = cache.process("chat", serialize_prefix(body(first)), min_cacheable=1024, now=0.0)
    assert written.cache_creation_1h == written.prompt_tokens  # the whole first prompt is cached for an hour

    later: list[Message] = [*first_messages, {"role": "assistant", "content": "answer " * 50}, chatter(30)]
    request = apply_marker_plan(SYSTEM, later, plan=MarkerPlan(reads=((0, "1h"),), tail=None))
    assert markers(request) == [(0, HOUR)]
    assert request.breakpoints == 1
    usage = cache.process("chat", serialize_prefix(body(request)), min_cacheable=1024, now=1_800.0)
    # Worked split: everything the first call cached is read at 0.1, the new answer and 30 lines are
    # uncached input at 1x, and nothing is written (a 1.25x or 2x write would not be read in time).
    assert usage.cache_read_input_tokens == written.prompt_tokens
    assert usage.cache_creation_input_tokens == 0
    assert usage.input_tokens == usage.prompt_tokens - written.prompt_tokens


def test_without_the_reader_a_tail_beyond_the_lookback_misses_the_live_prefix() -> None:
    cache = PrefixCache()
    first_messages: list[Message] = [{"role": "user", "content": "question " + "detail " * 400}]
    first = apply_cache_control(SYSTEM, first_messages, ttl="5m")
    cache.process("chat", serialize_prefix(body(first)), min_cacheable=1024, now=0.0)
    later: list[Message] = [*first_messages, {"role": "assistant", "content": "ok"}, chatter(30)]
    tail_only = apply_marker_plan(None, later, plan=MarkerPlan(tail="5m"))
    probe = copy.deepcopy(cache)  # same entries, so the request below leaves `cache` untouched
    miss = probe.process("chat", serialize_prefix(body(tail_only)), min_cacheable=1024, now=60.0)
    assert miss.cache_read_input_tokens == 0
    both = apply_marker_plan(SYSTEM, later, plan=MarkerPlan(reads=((0, "5m"),), tail="5m"))
    usage = cache.process("chat", serialize_prefix(body(both)), min_cacheable=1024, now=60.0)
    assert usage.cache_read_input_tokens > 0
    assert usage.cache_read_input_tokens + usage.cache_creation_5m == usage.prompt_tokens


def alternating(n: int) -> list[Message]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)]


def test_at_most_four_breakpoints_the_tail_and_newest_reads_first() -> None:
    messages = alternating(9)
    tools: list[dict[str, Any]] = [
        {"name": "a", "input_schema": {"type": "object"}, "cache_control": FIVE},
        {"name": "b", "input_schema": {"type": "object"}},
    ]
    plan = MarkerPlan(reads=((2, "1h"), (4, "5m"), (6, "5m")), tail="5m")
    request = apply_marker_plan("sys", messages, plan=plan, tools=tools)
    assert count_breakpoints(request) == request.breakpoints == 4
    assert [i for i, _ in markers(request)] == [4, 6, 8]  # one tool marker + the tail + two newest reads
    assert "cache_control" not in request.system_blocks[0]


def test_a_one_hour_marker_never_follows_a_five_minute_one() -> None:
    messages = alternating(5)
    request = apply_marker_plan("sys", messages, plan=MarkerPlan(reads=((2, "5m"),), tail="1h"))
    assert request.system_blocks[0]["cache_control"] == HOUR
    assert markers(request) == [(2, HOUR), (4, HOUR)]
    only_reads = apply_marker_plan("sys", messages, plan=MarkerPlan(reads=((0, "1h"), (2, "5m"))))
    assert markers(only_reads) == [(0, HOUR), (2, FIVE)]
    assert "cache_control" not in only_reads.system_blocks[0]  # nothing written: no system marker


def test_inputs_are_not_changed_and_an_empty_plan_places_nothing() -> None:
    messages: list[Message] = [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": HOUR}]},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "more"},
    ]
    tools: list[dict[str, Any]] = [{"name": "a", "input_schema": {"type": "object"}}]
    before = copy.deepcopy((messages, tools))
    request = apply_marker_plan("sys", messages, plan=MarkerPlan(reads=((1, "5m"),), tail="5m"), tools=tools)
    assert (messages, tools) == before
    assert [i for i, _ in markers(request)] == [1, 2]
    empty = apply_marker_plan("sys", messages, plan=MarkerPlan(), tools=tools)
    assert count_breakpoints(empty) == empty.breakpoints == 0

"""The system_and_3 cache policy, marker placement, idempotency, and tagged context blocks."""

from __future__ import annotations

import copy
import itertools
import logging
from typing import Any

import pytest

from agent.caching.markers import (
    CachedRequest,
    apply_cache_control,
    cache_marker,
    count_breakpoints,
    strip_cache_control,
)
from agent.types import Message
from tests.fakes.anthropic.cache import PrefixCache, serialize_prefix

FIVE = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def history(n: int) -> list[Message]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(n)]


def marked_indices(request: CachedRequest) -> list[int]:
    found = []
    for i, message in enumerate(request.messages):
        raw: dict[str, Any] = dict(message)
        content = raw["content"]
        if "cache_control" in raw or (
            isinstance(content, list) and any("cache_control" in b for b in content)
        ):
            found.append(i)
    return found


def markers_in_order(request: CachedRequest) -> list[dict[str, Any]]:
    """Every marker in the order the API reads the prompt: tools, system, messages."""
    found = [t["cache_control"] for t in request.tools or [] if "cache_control" in t]
    found += [b["cache_control"] for b in request.system_blocks if "cache_control" in b]
    for message in request.messages:
        content = message["content"]
        if isinstance(content, list):
            found += [b["cache_control"] for b in content if "cache_control" in b]
        raw: dict[str, Any] = dict(message)
        if "cache_control" in raw:
            found.append(raw["cache_control"])
    return found


# --- strategy -------------------------------------------------------------------------------------


def test_system_and_last_three_messages_are_marked() -> None:
    request = apply_cache_control("You are helpful.", history(6), ttl="5m")
    assert request.system_blocks == [{"type": "text", "text": "You are helpful.", "cache_control": FIVE}]
    assert marked_indices(request) == [3, 4, 5]
    assert request.messages[:3] == history(6)[:3]
    assert request.breakpoints == count_breakpoints(request) == 4


def test_short_histories_mark_every_message() -> None:
    request = apply_cache_control("sys", history(2), ttl="5m")
    assert marked_indices(request) == [0, 1]
    assert request.breakpoints == 3


def test_system_as_blocks_is_marked_on_its_last_block() -> None:
    system = [{"type": "text", "text": "rules"}, {"type": "text", "text": "persona"}]
    request = apply_cache_control(system, history(1), ttl="5m")
    assert request.system_blocks == [
        {"type": "text", "text": "rules"},
        {"type": "text", "text": "persona", "cache_control": FIVE},
    ]


def test_without_a_system_prompt_only_messages_are_marked() -> None:
    request = apply_cache_control("", history(5), ttl="5m")
    assert request.system_blocks == []
    assert marked_indices(request) == [2, 3, 4]
    assert request.breakpoints == 3


@pytest.mark.parametrize("tool_markers", [0, 1, 2, 3, 4])
def test_tool_markers_count_against_the_limit_and_oldest_messages_give_way(tool_markers: int) -> None:
    tools = [{"name": f"tool{i}", "input_schema": {"type": "object"}} for i in range(5)]
    for tool in tools[-tool_markers:] if tool_markers else []:
        tool["cache_control"] = {"type": "ephemeral"}
    request = apply_cache_control("sys", history(8), ttl="5m", tools=tools)
    assert count_breakpoints(request) == 4
    assert request.breakpoints == 4
    message_marks = max(0, 3 - tool_markers)
    assert marked_indices(request) == list(range(8 - message_marks, 8))
    system_marked = "cache_control" in request.system_blocks[0]
    assert system_marked == (tool_markers < 4)
    assert sum("cache_control" in t for t in request.tools or []) == tool_markers


def test_more_than_four_tool_markers_are_cut_to_the_last_four(caplog: pytest.LogCaptureFixture) -> None:
    tools = [{"name": f"t{i}", "cache_control": {"type": "ephemeral"}} for i in range(6)]
    with caplog.at_level(logging.WARNING, logger="agent.prompt_caching"):
        request = apply_cache_control("sys", history(3), ttl="5m", tools=tools)
    assert [("cache_control" in t) for t in request.tools or []] == [False, False, True, True, True, True]
    assert count_breakpoints(request) == 4
    assert marked_indices(request) == []
    assert "breakpoints" in caplog.text


# --- placement by content type --------------------------------------------------------------------


def test_string_content_becomes_one_marked_text_block() -> None:
    request = apply_cache_control(None, [{"role": "user", "content": "hi"}], ttl="5m")
    assert request.messages == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": FIVE}]}
    ]


def test_list_content_is_marked_on_its_last_block() -> None:
    message: Message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}},
        ],
    }
    request = apply_cache_control(None, [message], ttl="5m")
    blocks = request.messages[0]["content"]
    assert isinstance(blocks, list)
    assert "cache_control" not in blocks[0]
    assert blocks[1]["cache_control"] == FIVE


def test_tool_results_carry_the_marker_on_the_result_block() -> None:
    message: Message = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]}
        ],
    }
    request = apply_cache_control(None, [message], ttl="5m")
    block = request.messages[0]["content"][0]
    assert isinstance(block, dict)
    assert block["cache_control"] == FIVE
    assert "cache_control" not in block["content"][0]


@pytest.mark.parametrize("empty", ["", []])
def test_empty_content_is_marked_on_the_message(empty: Any) -> None:
    request = apply_cache_control(None, [{"role": "assistant", "content": empty}], ttl="5m")
    assert request.messages == [{"role": "assistant", "content": empty, "cache_control": FIVE}]


def test_thinking_and_empty_text_blocks_are_skipped() -> None:
    message: Message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "answer"},
            {"type": "redacted_thinking", "data": "abc"},
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": ""},
        ],
    }
    request = apply_cache_control(None, [message], ttl="5m")
    blocks = request.messages[0]["content"]
    assert isinstance(blocks, list)
    assert [("cache_control" in b) for b in blocks] == [True, False, False, False]


def test_only_thinking_falls_back_to_the_message() -> None:
    message: Message = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "x", "signature": "s"}],
    }
    request = apply_cache_control(None, [message], ttl="5m")
    raw: dict[str, Any] = dict(request.messages[0])
    assert raw["cache_control"] == FIVE
    assert "cache_control" not in raw["content"][0]


def test_openai_shaped_tool_messages_are_marked_only_on_the_native_path() -> None:
    tool_message: Any = {"role": "tool", "tool_call_id": "c1", "content": "result"}
    native = apply_cache_control(None, [tool_message], ttl="5m")
    assert dict(native.messages[0])["cache_control"] == FIVE
    assert native.messages[0]["content"] == "result"
    other = apply_cache_control(None, [tool_message], ttl="5m", native_anthropic=False)
    assert other.messages == [tool_message]
    assert other.breakpoints == 0


# --- TTL ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ttl", "marker"), [("5m", FIVE), ("1h", HOUR)])
def test_every_marker_uses_the_requested_ttl(ttl: Any, marker: dict[str, str]) -> None:
    tools = [{"name": "t", "cache_control": {"type": "ephemeral"}}]
    request = apply_cache_control("sys", history(5), ttl=ttl, tools=tools)
    assert markers_in_order(request) == [marker] * 4


def test_a_one_hour_marker_never_follows_a_five_minute_one() -> None:
    tools = [{"name": "t", "cache_control": {"type": "ephemeral"}}]
    request = apply_cache_control("sys", history(5), ttl="1h", tools=tools)
    ttls = [m.get("ttl", "5m") for m in markers_in_order(request)]
    assert all(not (a == "5m" and b == "1h") for a, b in itertools.pairwise(ttls))


def test_invalid_ttl_is_rejected() -> None:
    with pytest.raises(ValueError):
        cache_marker("10m")  # type: ignore[arg-type]


# --- copying and idempotency ----------------------------------------------------------------------


def rich_history() -> list[Message]:
    return [
        {"role": "user", "content": "first"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": ["a", "b"]}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "r"}]}
            ],
        },
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "last"},
    ]


def test_caller_data_is_never_mutated_and_results_are_independent() -> None:
    messages = rich_history()
    system = [{"type": "text", "text": "sys"}]
    tools = [{"name": "t", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]
    before = copy.deepcopy((system, messages, tools))
    request = apply_cache_control(system, messages, ttl="1h", tools=tools)
    assert (system, messages, tools) == before
    tool_use = request.messages[1]["content"][1]
    assert isinstance(tool_use, dict)
    tool_use["input"]["q"].append("mutated")
    request.system_blocks[0]["text"] = "changed"
    assert (system, messages, tools) == before
    stripped = strip_cache_control(system, messages, tools=tools)
    assert (system, messages, tools) == before
    assert stripped.tools == [{"name": "t", "input_schema": {"type": "object"}}]


def test_applying_twice_equals_applying_once() -> None:
    tools = [{"name": "t", "cache_control": {"type": "ephemeral"}}]
    once = apply_cache_control("sys", rich_history(), ttl="5m", tools=tools)
    twice = apply_cache_control(once.system_blocks, once.messages, ttl="5m", tools=once.tools)
    assert twice == once


def test_stale_markers_from_earlier_turns_are_replaced_not_added() -> None:
    first = apply_cache_control("sys", history(4), ttl="5m")
    grown = [*first.messages, *history(3)]
    second = apply_cache_control(first.system_blocks, grown, ttl="1h")
    assert count_breakpoints(second) == 4
    assert marked_indices(second) == [4, 5, 6]
    assert markers_in_order(second) == [HOUR] * 4


def test_strip_removes_every_marker() -> None:
    marked = apply_cache_control("sys", rich_history(), ttl="5m", tools=[{"name": "t"}])
    nested: Message = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t9",
                "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}],
            }
        ],
    }
    tools = [{"name": "t", "cache_control": {"type": "ephemeral"}}]
    stripped = strip_cache_control(marked.system_blocks, [*marked.messages, nested], tools=tools)
    assert count_breakpoints(stripped) == 0
    assert stripped.breakpoints == 0
    assert stripped.system_blocks == [{"type": "text", "text": "sys"}]


def test_rolling_window_reads_the_previous_turn_from_the_fake_api_cache() -> None:
    """Each new turn reads everything up to the previous turn's last message from cache."""
    cache = PrefixCache()
    system = "You are a helpful assistant. " * 200
    conversation: list[Message] = []
    reads: list[int] = []
    prompts: list[int] = []
    for turn in range(5):
        conversation.append({"role": "user", "content": f"question {turn} " + "detail " * 150})
        request = apply_cache_control(system, conversation, ttl="5m")
        body = {"system": request.system_blocks, "messages": request.messages}
        usage = cache.process("chat", serialize_prefix(body), min_cacheable=1024, now=float(turn * 30))
        reads.append(usage.cache_read_input_tokens)
        prompts.append(usage.prompt_tokens)
        conversation.append({"role": "assistant", "content": f"answer {turn} " + "words " * 100})
    assert reads[0] == 0
    for turn in range(1, 5):
        # the whole previous prompt came from cache; only the new answer and question are not
        assert reads[turn] == prompts[turn - 1]


# --- tagged context -------------------------------------------------------------------------------

"""Worked examples of the fake API's prefix-cache model (pure: explicit blocks, explicit times)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fakes.anthropic.cache import CacheUsage, PrefixBlock, PrefixCache, serialize_prefix

NS = ("test-key", "claude-sonnet-4-6")
MIN = 1024


def block(name: str, tokens: int, ttl: str | None = None) -> PrefixBlock:
    return PrefixBlock(fingerprint=name, tokens=tokens, ttl=ttl)


def run(cache: PrefixCache, blocks: list[PrefixBlock], now: float, minimum: int = MIN) -> CacheUsage:
    usage = cache.process(NS, blocks, min_cacheable=minimum, now=now)
    assert usage.prompt_tokens == sum(b.tokens for b in blocks)
    return usage


def test_first_call_writes_and_an_identical_call_within_the_ttl_reads() -> None:
    cache = PrefixCache()
    request = [block("system", 2000, "5m"), block("user-1", 100)]

    first = run(cache, request, now=0)
    assert (first.cache_read_input_tokens, first.cache_creation_5m, first.input_tokens) == (0, 2000, 100)

    second = run(cache, request, now=200)
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens, second.input_tokens) == (
        2000,
        0,
        100,
    )


def test_after_the_ttl_expires_the_prefix_is_written_again() -> None:
    cache = PrefixCache()
    request = [block("system", 2000, "5m"), block("user-1", 100)]
    run(cache, request, now=0)

    late = run(cache, request, now=301)

    assert late.cache_read_input_tokens == 0
    assert late.cache_creation_5m == 2000


def test_a_hit_refreshes_the_entry_so_steady_traffic_keeps_it_warm() -> None:
    cache = PrefixCache()
    request = [block("system", 2000, "5m"), block("user-1", 100)]
    run(cache, request, now=0)
    run(cache, request, now=250)  # read: expiry moves to 550

    assert run(cache, request, now=500).cache_read_input_tokens == 2000
    assert run(cache, request, now=801).cache_read_input_tokens == 0  # 500 + 300 passed


def test_a_one_hour_entry_survives_thirty_minutes_where_a_five_minute_one_does_not() -> None:
    cache = PrefixCache()
    long_lived = [block("system-a", 2000, "1h"), block("user", 50)]
    short_lived = [block("system-b", 2000, "5m"), block("user", 50)]
    assert run(cache, long_lived, now=0).cache_creation_1h == 2000
    assert run(cache, short_lived, now=0).cache_creation_5m == 2000

    assert run(cache, long_lived, now=1800).cache_read_input_tokens == 2000
    assert run(cache, short_lived, now=1800).cache_read_input_tokens == 0


def test_growing_conversation_with_rolling_markers_reads_the_previous_prefix_and_writes_the_delta() -> None:
    cache = PrefixCache()
    sys = block("system", 2000, "5m")
    turn1 = [sys, block("u1", 100, "5m")]
    turn2 = [sys, block("u1", 100, "5m"), block("a1", 150, "5m"), block("u2", 120, "5m")]
    turn3 = [sys, block("u1", 100), block("a1", 150), block("u2", 120, "5m"), block("a2", 80, "5m")]
    turn3 += [block("u3", 60, "5m")]

    first = run(cache, turn1, now=0)
    second = run(cache, turn2, now=30)
    third = run(cache, turn3, now=60)

    assert (first.cache_read_input_tokens, first.cache_creation_input_tokens) == (0, 2100)
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens) == (2100, 270)
    assert (third.cache_read_input_tokens, third.cache_creation_input_tokens) == (2370, 140)
    assert third.input_tokens == 0


def test_a_prefix_below_the_minimum_is_never_cached_and_raises_no_error() -> None:
    cache = PrefixCache()
    request = [block("system", 500, "5m"), block("user", 100)]

    for now in (0, 10, 20):
        usage = run(cache, request, now=now)
        assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens, usage.input_tokens) == (
            0,
            0,
            600,
        )


def test_a_small_first_breakpoint_is_skipped_while_a_later_one_is_written() -> None:
    cache = PrefixCache()
    request = [block("system", 500, "5m"), block("u1", 700, "5m"), block("u2", 40)]

    usage = run(cache, request, now=0)

    assert (usage.cache_creation_input_tokens, usage.input_tokens) == (1200, 40)
    assert run(cache, request, now=1).cache_read_input_tokens == 1200


def test_changing_the_system_prompt_misses_everything() -> None:
    cache = PrefixCache()
    conversation = [block("u1", 100, "5m"), block("a1", 100), block("u2", 100, "5m")]
    run(cache, [block("system v1", 2000, "5m"), *conversation], now=0)

    changed = run(cache, [block("system v2", 2000, "5m"), *conversation], now=10)

    assert changed.cache_read_input_tokens == 0
    assert changed.cache_creation_input_tokens == 2300


def test_lookback_finds_a_cached_prefix_up_to_twenty_blocks_before_a_breakpoint() -> None:
    def request(extra: int) -> list[PrefixBlock]:
        tail = [block(f"m{i}", 10) for i in range(extra)]
        return [block("system", 2000, "5m"), *tail[:-1], block(tail[-1].fingerprint, 10, "5m")]

    near, far = PrefixCache(), PrefixCache()
    run(near, [block("system", 2000, "5m")], now=0)
    run(far, [block("system", 2000, "5m")], now=0)

    # Only the last block carries a marker, so the system entry is found only by looking back.
    near_request = request(20)
    near_request[0] = block("system", 2000)
    far_request = request(21)
    far_request[0] = block("system", 2000)
    assert run(near, near_request, now=1).cache_read_input_tokens == 2000
    assert run(far, far_request, now=1).cache_read_input_tokens == 0


def test_ttl_split_attributes_each_segment_to_the_breakpoint_closing_it() -> None:
    cache = PrefixCache()
    request = [block("tools", 1500, "1h"), block("system", 500, "5m"), block("u1", 30)]

    usage = run(cache, request, now=0)

    assert (usage.cache_creation_1h, usage.cache_creation_5m, usage.input_tokens) == (1500, 500, 30)


def test_caches_are_separate_per_namespace() -> None:
    cache = PrefixCache()
    request = [block("system", 2000, "5m")]
    cache.process(("key-a", "m"), request, min_cacheable=MIN, now=0)

    other = cache.process(("key-b", "m"), request, min_cacheable=MIN, now=1)

    assert other.cache_read_input_tokens == 0


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(1, 900), st.sampled_from([None, None, "5m", "1h"])),
        min_size=1,
        max_size=30,
    ),
    st.lists(st.floats(0, 4000), min_size=1, max_size=5),
)
def test_the_three_input_fields_always_sum_to_the_prompt(
    shape: list[tuple[int, int, str | None]], times: list[float]
) -> None:
    cache = PrefixCache()
    blocks = [block(f"b{name}", tokens, ttl) for name, tokens, ttl in shape]
    for now in sorted(times):
        usage = run(cache, blocks, now=now)
        assert min(usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) >= 0


def _body(markers: list[int], *, message_level: bool = False) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for i, text in enumerate(["one", "two", "three", "four"]):
        content: Any = [{"type": "text", "text": text}]
        message: dict[str, Any] = {"role": "user" if i % 2 == 0 else "assistant", "content": content}
        if i in markers:
            if message_level:
                message["cache_control"] = {"type": "ephemeral"}
            else:
                content[0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
        messages.append(message)
    return {"system": "be brief", "messages": messages}


def test_moving_markers_does_not_change_what_the_prefix_hashes_as() -> None:
    early = serialize_prefix(_body([0]))
    late = serialize_prefix(_body([3]))

    assert [b.fingerprint for b in early] == [b.fingerprint for b in late]
    assert [b.ttl for b in early] == [None, "1h", None, None, None]
    assert [b.ttl for b in late] == [None, None, None, None, "1h"]


def test_a_message_level_marker_is_a_breakpoint_on_its_last_block() -> None:
    blocks = serialize_prefix(_body([1], message_level=True))

    assert [b.ttl for b in blocks] == [None, None, "5m", None, None]


def test_string_content_and_a_single_text_block_are_the_same_prefix() -> None:
    as_string = serialize_prefix({"messages": [{"role": "user", "content": "hello"}]})
    as_block = serialize_prefix(
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]}
    )

    assert as_string == as_block


def test_automatic_caching_marks_the_last_block_and_moves_forward() -> None:
    """One top-level cache_control: the API puts the breakpoint on the last block of each request."""
    first = {"system": "s" * 4_000, "messages": [{"role": "user", "content": "q" * 2_000}]}
    second = {
        "system": "s" * 4_000,
        "messages": [
            {"role": "user", "content": "q" * 2_000},
            {"role": "assistant", "content": "a" * 700},
            {"role": "user", "content": "next question"},
        ],
    }
    cache = PrefixCache()
    auto = {"cache_control": {"type": "ephemeral"}}
    one = cache.process("ns", serialize_prefix({**first, **auto}), min_cacheable=1024, now=0.0)
    assert one.cache_read_input_tokens == 0
    assert one.cache_creation_5m == one.prompt_tokens
    two = cache.process("ns", serialize_prefix({**second, **auto}), min_cacheable=1024, now=60.0)
    assert two.cache_read_input_tokens == one.prompt_tokens
    assert two.cache_creation_5m == two.prompt_tokens - one.prompt_tokens
    assert two.input_tokens == 0
    # without it nothing is cached
    plain = cache.process("ns2", serialize_prefix(second), min_cacheable=1024, now=0.0)
    assert plain.input_tokens == plain.prompt_tokens


def test_automatic_caching_takes_a_breakpoint_slot_and_must_match_the_last_block() -> None:
    from tests.fakes.anthropic.tokens import default_models
    from tests.fakes.anthropic.validation import InvalidRequest, validate_request

    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "cache_control": {"type": "ephemeral", "ttl": "1h"},
        "system": [dict(marked) for _ in range(4)],
        "messages": [{"role": "user", "content": "hi"}],
    }
    with pytest.raises(InvalidRequest, match="maximum of 4"):
        validate_request(body, default_models())
    body["system"] = "s"
    body["messages"] = [{"role": "user", "content": [dict(marked)]}]
    with pytest.raises(InvalidRequest, match="must match"):
        validate_request(body, default_models())
    body["cache_control"] = {"type": "ephemeral"}
    validate_request(body, default_models())

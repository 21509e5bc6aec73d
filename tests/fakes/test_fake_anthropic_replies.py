"""What the fake Anthropic API answers through the real SDK: echoed and scripted replies, streaming,
default summaries, prefix-cache usage and lean records, in process and as a separate process."""

from __future__ import annotations

import anthropic
import pytest

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.anthropic.process import spawn_fake_anthropic
from tests.fakes.fake_anthropic_support import (
    MODEL,
    TOOLS,
    ask,
    cached_system,
    fake_anthropic,  # noqa: F401 - a fixture, found by pytest as `fake`
    sdk_client,  # noqa: F401 - a fixture, found by pytest as `client`
    text_of,
    user,
)


async def test_reply_echoes_the_newest_user_text_with_full_usage(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    raw = await client.messages.with_raw_response.create(
        model=MODEL,
        max_tokens=256,
        messages=[*user("first"), {"role": "assistant", "content": "ok"}, *user("the second")],
    )
    message = await raw.parse()

    assert raw.headers["content-type"] == "application/json"
    assert raw.headers["request-id"].startswith("req_")
    assert message.content[0].type == "text"
    assert text_of(message.content[0]) == "echo: the second"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0
    assert message.usage.cache_read_input_tokens == 0
    assert message.usage.cache_creation_input_tokens == 0
    recorded = fake.requests[-1]
    assert (recorded.kind, recorded.status) == ("reply", 200)
    assert "authorization" not in {k.lower() for k in recorded.headers}
    assert fake.total_usage().output_tokens == message.usage.output_tokens


async def test_tagged_metadata_blocks_are_not_echoed(client: anthropic.AsyncAnthropic) -> None:
    content = [
        {"type": "text", "text": "<context>chat: Ops, speaker: Ana</context>"},
        {"type": "text", "text": "hi"},
    ]

    message = await ask(client, [{"role": "user", "content": content}])

    assert text_of(message.content[0]) == "echo: hi"


async def test_streaming_delivers_text_and_tool_calls_with_usage(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    long_text = "Checking the order status in the billing system now. " * 4
    fake.script_reply(
        long_text, tool_uses=[{"name": "lookup_order", "input": {"order_id": "ORD-99", "deep": True}}]
    )

    async with client.messages.stream(
        model=MODEL, max_tokens=512, tools=TOOLS, messages=user("status of ORD-99?")
    ) as stream:
        deltas = [text async for text in stream.text_stream]
        final = await stream.get_final_message()

    assert "".join(deltas) == long_text
    assert len(deltas) > 1
    assert final.stop_reason == "tool_use"
    assert final.content[1].type == "tool_use"
    assert final.content[1].input == {"order_id": "ORD-99", "deep": True}
    usage = fake.requests[-1].usage
    assert usage is not None
    assert final.usage.output_tokens == usage["output_tokens"]
    assert final.usage.input_tokens == usage["input_tokens"]


async def test_scripted_text_longer_than_max_tokens_is_cut_with_stop_reason_max_tokens(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("word " * 400)

    message = await client.messages.create(model=MODEL, max_tokens=20, messages=user("talk"))

    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens <= 20


async def test_scripted_replies_are_kept_for_reply_calls_while_summaries_use_the_default(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("scripted answer")
    summary_prompt = (
        "Summarize these turns.\n[user] please fix ORDER-7731 in src/billing/invoice.py using retry_budget\n"
        "## Goal\n## Progress\n## Critical Context\n"
    )

    summary = await client.messages.create(model=MODEL, max_tokens=300, messages=user(summary_prompt))
    reply = await ask(client, user("and now?"))

    text = text_of(summary.content[0])
    for heading in ("## Goal", "## Progress", "### Done", "## Relevant Files", "## Critical Context"):
        assert heading in text
    assert "src/billing/invoice.py" in text
    assert "ORDER-7731" in text
    assert "retry_budget" in text
    assert summary.usage.output_tokens <= 300
    assert text_of(reply.content[0]) == "scripted answer"
    assert [r.kind for r in fake.requests] == ["summary", "reply"]


async def test_a_default_summary_fits_a_small_max_tokens(client: anthropic.AsyncAnthropic) -> None:
    ids = " ".join(f"TICKET-{n}" for n in range(500))
    summary = await client.messages.create(
        model=MODEL, max_tokens=150, messages=user(f"{ids}\n## Goal\nsummarize")
    )

    assert summary.usage.output_tokens <= 150
    assert "## Critical Context" in text_of(summary.content[0])
    assert "TICKET-0" in text_of(summary.content[0])


async def test_prefix_cache_through_the_sdk_writes_reads_and_expires(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    first = await ask(client, user("one"), system=cached_system())
    fake.advance(120)
    second = await ask(client, user("two"), system=cached_system())
    fake.advance(301)
    third = await ask(client, user("three"), system=cached_system())

    written = first.usage.cache_creation_input_tokens
    assert written is not None
    assert written > 1024
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation is not None
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == written
    assert (second.usage.cache_read_input_tokens, second.usage.cache_creation_input_tokens) == (written, 0)
    assert (third.usage.cache_read_input_tokens, third.usage.cache_creation_input_tokens) == (0, written)
    assert fake.total_usage().cache_read_input_tokens == written


async def test_a_one_hour_marker_survives_half_an_hour_and_is_reported_as_1h(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    first = await ask(client, user("one"), system=cached_system("1h"))
    fake.advance(1800)
    later = await ask(client, user("two"), system=cached_system("1h"))

    assert first.usage.cache_creation is not None
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == first.usage.cache_creation_input_tokens
    assert later.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


async def test_separate_process_mode_answers_and_obeys_its_control_endpoints() -> None:
    async with (
        spawn_fake_anthropic("--context-window", f"{MODEL}=8000") as remote,
        anthropic.AsyncAnthropic(api_key="test-key", base_url=remote.base_url, max_retries=0) as sdk,
    ):
        assert text_of((await ask(sdk, user("ping"))).content[0]) == "echo: ping"

        await remote.script_reply("from the script")
        assert text_of((await ask(sdk, user("x"))).content[0]) == "from the script"

        await remote.script_fault("rate_limit", retry_after=3)
        with pytest.raises(anthropic.RateLimitError):
            await ask(sdk, user("x"))

        first = await ask(sdk, user("cache me"), system=cached_system())
        await remote.advance(400)
        expired = await ask(sdk, user("cache me"), system=cached_system())
        assert first.usage.cache_creation_input_tokens == expired.usage.cache_creation_input_tokens
        assert expired.usage.cache_read_input_tokens == 0

        with pytest.raises(anthropic.BadRequestError):
            await ask(sdk, user("lorem ipsum " * 3000))

        records = await remote.requests()
        assert [r["status"] for r in records] == [200, 200, 429, 200, 200, 400]
        usage = await remote.total_usage()
        assert usage.cache_creation_input_tokens == 2 * (first.usage.cache_creation_input_tokens or 0)

        await remote.reset()
        assert await remote.requests() == []
        with pytest.raises(ValueError, match="unknown fault kind"):
            await remote.script_fault("meteor")


async def test_bodies_can_be_left_out_of_the_records_for_long_replays() -> None:
    async with (
        FakeAnthropic(keep_bodies=False) as lean,
        anthropic.AsyncAnthropic(api_key="test-key", base_url=lean.base_url, max_retries=0) as sdk,
    ):
        await ask(sdk, user("hello"))

    assert lean.requests[0].body is None
    assert lean.requests[0].usage is not None
    assert lean.total_usage().output_tokens > 0

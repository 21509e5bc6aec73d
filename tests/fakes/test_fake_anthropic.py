"""The fake Anthropic API driven through the real ``anthropic`` SDK: replies, validation, faults, caching."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anthropic
import pytest

from tests.fakes.anthropic_process import spawn_fake_anthropic
from tests.fakes.anthropic_server import FakeAnthropic

MODEL = "claude-sonnet-4-6"
TOOLS: list[Any] = [
    {
        "name": "lookup_order",
        "description": "Look an order up by id.",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]
LONG_SYSTEM = "You are a careful assistant for the billing team. " * 120  # ~1,700 tokens


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(context_windows={MODEL: 8000}) as server:
        yield server


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.base_url, max_retries=0, timeout=5.0)
    yield sdk
    await sdk.close()


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


async def ask(client: anthropic.AsyncAnthropic, messages: list[Any], **extra: Any) -> anthropic.types.Message:
    message: anthropic.types.Message = await client.messages.create(
        model=MODEL, max_tokens=512, messages=messages, **extra
    )
    return message


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
    assert message.content[0].text == "echo: the second"
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

    assert message.content[0].text == "echo: hi"  # type: ignore[union-attr]


async def test_a_wrong_key_is_refused_with_an_authentication_error(fake: FakeAnthropic) -> None:
    async with anthropic.AsyncAnthropic(api_key="wrong", base_url=fake.base_url, max_retries=0) as sdk:
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await ask(sdk, user("hi"))
    assert caught.value.status_code == 401
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    assert caught.value.request_id is not None


async def test_the_x_api_key_header_is_accepted(fake: FakeAnthropic) -> None:
    body = {"model": MODEL, "max_tokens": 10, "messages": user("raw")}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{fake.base_url}/v1/messages", json=body, headers={"x-api-key": "test-key"}
        ) as response,
    ):
        assert response.status == 200
        assert (await response.json())["content"][0]["text"] == "echo: raw"


def _marked(text: str, ttl: str = "5m") -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral", "ttl": ttl}}


INVALID_REQUESTS: list[tuple[str, dict[str, Any], str]] = [
    (
        "five cache markers",
        {
            "system": [_marked("s1"), _marked("s2")],
            "messages": [
                {"role": "user", "content": [_marked("a"), _marked("b")]},
                {"role": "assistant", "content": [_marked("c")]},
                *user("d"),
            ],
        },
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    (
        "orphan tool_result",
        {
            "tools": TOOLS,
            "messages": [
                *user("hi"),
                {"role": "assistant", "content": "no tools used"},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}],
                },
            ],
        },
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1",
    ),
    (
        "1h marker after a 5m marker",
        {"system": [_marked("sys", "5m")], "messages": [{"role": "user", "content": [_marked("hi", "1h")]}]},
        "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block",
    ),
    (
        "tool_use without a tool_result",
        {
            "tools": TOOLS,
            "messages": [
                *user("find order 7"),
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_9", "name": "lookup_order", "input": {}}],
                },
                *user("never mind"),
            ],
        },
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_9",
    ),
    (
        "tool_result after other content",
        {
            "tools": TOOLS,
            "messages": [
                *user("find order 7"),
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_9", "name": "lookup_order", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "here"},
                        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "shipped"},
                    ],
                },
            ],
        },
        "tool_result blocks must come before any other content",
    ),
    ("two user messages in a row", {"messages": [*user("a"), *user("b")]}, "roles must alternate"),
    (
        "first message from the assistant",
        {"messages": [{"role": "assistant", "content": "hi"}]},
        "first message",
    ),
    (
        "empty content",
        {"messages": [*user(""), {"role": "assistant", "content": "x"}, *user("y")]},
        "non-empty",
    ),
    (
        "cache_control on an empty text block",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}],
                }
            ]
        },
        "cache_control cannot be set for empty text blocks",
    ),
    (
        "unknown ttl",
        {"messages": [{"role": "user", "content": [_marked("hi", "10m")]}]},
        "cache_control.ttl: Input should be '5m' or '1h'",
    ),
    (
        "tool_use of an undefined tool",
        {
            "tools": TOOLS,
            "messages": [
                *user("go"),
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "rm_rf", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}],
                },
            ],
        },
        "tool_use name 'rm_rf' is not defined",
    ),
    ("max_tokens above the model's cap", {"max_tokens": 64_001, "messages": user("hi")}, "64001 > 64000"),
    ("max_tokens negative", {"max_tokens": -1, "messages": user("hi")}, "greater than or equal to 0"),
    ("system with an image block", {"system": [{"type": "image"}], "messages": user("hi")}, "system.0.type"),
]


@pytest.mark.parametrize(
    ("case", "fields", "expected"), INVALID_REQUESTS, ids=[c[0] for c in INVALID_REQUESTS]
)
async def test_invalid_requests_get_400_like_the_real_api(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, case: str, fields: dict[str, Any], expected: str
) -> None:
    request = {"model": MODEL, "max_tokens": 100, **fields}

    with pytest.raises(anthropic.BadRequestError) as caught:
        await client.messages.create(**request)

    assert caught.value.status_code == 400
    assert caught.value.type == "invalid_request_error"
    assert expected in (caught.value.api_message or "")
    assert fake.requests[-1].status == 400


async def test_a_valid_tool_round_trip_and_a_final_assistant_prefill_are_accepted(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_reply("Let me look.", tool_uses=[{"name": "lookup_order", "input": {"order_id": "ORD-7"}}])
    first = await ask(client, user("where is ORD-7?"), tools=TOOLS)
    call = first.content[1]
    assert first.stop_reason == "tool_use"
    assert call.type == "tool_use"
    assert call.input == {"order_id": "ORD-7"}

    history = [
        *user("where is ORD-7?"),
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "shipped Monday"}],
        },
    ]
    second = await ask(client, history, tools=TOOLS)
    prefill = await ask(client, [*user("say yes"), {"role": "assistant", "content": "Yes"}])

    assert second.content[0].text == "echo: shipped Monday"  # type: ignore[union-attr]
    assert prefill.stop_reason == "end_turn"


async def test_unknown_model_is_not_found(client: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(anthropic.NotFoundError):
        await client.messages.create(model="claude-nonexistent-9", max_tokens=10, messages=user("hi"))


async def test_a_prompt_over_the_window_is_too_long_with_the_real_message(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    text = "lorem ipsum dolor " * 2000  # ~10,300 tokens against an 8,000 window
    counted = await client.messages.count_tokens(model=MODEL, messages=user(text))

    with pytest.raises(anthropic.BadRequestError) as caught:
        await ask(client, user(text))

    assert counted.input_tokens > 8000
    assert caught.value.api_message == f"prompt is too long: {counted.input_tokens} tokens > 8000 maximum"


async def test_count_tokens_matches_the_prompt_size_in_usage(client: anthropic.AsyncAnthropic) -> None:
    messages = [*user("ni hao 你好"), {"role": "assistant", "content": "hello"}, *user("more")]
    counted = await client.messages.count_tokens(model=MODEL, system="sys", messages=messages, tools=TOOLS)
    reply = await ask(client, messages, system="sys", tools=TOOLS)

    usage = reply.usage
    prompt = (
        usage.input_tokens + (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
    )
    assert counted.input_tokens == prompt


async def test_models_are_listed(client: anthropic.AsyncAnthropic) -> None:
    page = await client.models.list()
    assert {MODEL, "claude-opus-4-5", "claude-haiku-4-5"} <= {model.id for model in page.data}


FAULTS: list[tuple[str, type[Exception], int | None]] = [
    ("rate_limit", anthropic.RateLimitError, 429),
    ("overloaded", anthropic.OverloadedError, 529),
    ("server_error", anthropic.InternalServerError, 500),
    ("overflow", anthropic.BadRequestError, 400),
    ("auth", anthropic.AuthenticationError, 401),
    ("reset", anthropic.APIConnectionError, None),
]


@pytest.mark.parametrize(("kind", "error", "status"), FAULTS, ids=[f[0] for f in FAULTS])
async def test_each_fault_surfaces_as_the_sdk_exception_once(
    fake: FakeAnthropic,
    client: anthropic.AsyncAnthropic,
    kind: Any,
    error: type[Exception],
    status: int | None,
) -> None:
    fake.script_fault(kind)

    with pytest.raises(error) as caught:
        await ask(client, user("hello"))
    after = await ask(client, user("hello again"))

    if status is None:
        assert not isinstance(caught.value, anthropic.APITimeoutError)
    else:
        assert isinstance(caught.value, anthropic.APIStatusError)
        assert caught.value.status_code == status
    assert after.content[0].text == "echo: hello again"  # type: ignore[union-attr]
    assert [r.status for r in fake.requests] == [status, 200]


async def test_rate_limit_carries_retry_after_and_overflow_the_prompt_too_long_message(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_fault("rate_limit", retry_after=7)
    fake.script_fault("overflow")

    with pytest.raises(anthropic.RateLimitError) as limited:
        await ask(client, user("a"))
    with pytest.raises(anthropic.BadRequestError) as overflow:
        await ask(client, user("a"))

    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.type == "rate_limit_error"
    assert (overflow.value.api_message or "").startswith("prompt is too long: ")
    assert (overflow.value.api_message or "").endswith(" tokens > 8000 maximum")


async def test_a_timeout_fault_holds_the_call_past_the_client_timeout(fake: FakeAnthropic) -> None:
    fake.script_fault("timeout", delay=3.0)
    async with anthropic.AsyncAnthropic(
        api_key="test-key", base_url=fake.base_url, max_retries=0, timeout=0.3
    ) as sdk:
        started = time.monotonic()
        with pytest.raises(anthropic.APITimeoutError):
            await ask(sdk, user("slow"))
        assert time.monotonic() - started < 2.0
        assert (await ask(sdk, user("fast"))).content[0].text == "echo: fast"  # type: ignore[union-attr]


async def test_a_lasting_fault_stays_until_cleared(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_fault("overloaded", times=-1)
    for _ in range(3):
        with pytest.raises(anthropic.OverloadedError):
            await ask(client, user("hi"))

    fake.clear_faults()

    assert (await ask(client, user("hi"))).stop_reason == "end_turn"


async def test_faults_can_be_scoped_to_summary_calls(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script_fault("server_error", times=-1, scope="summary")

    reply = await ask(client, user("normal turn"))
    with pytest.raises(anthropic.InternalServerError):
        await ask(client, user("## Goal\n...\n## Progress\nsummarize the turns above"))

    assert reply.stop_reason == "end_turn"
    assert [(r.kind, r.status) for r in fake.requests] == [("reply", 200), ("summary", 500)]


async def test_retry_after_is_honoured_by_the_sdk_retries(fake: FakeAnthropic) -> None:
    fake.script_fault("rate_limit", times=2, retry_after=0.4)
    async with anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.base_url, max_retries=2) as sdk:
        started = time.monotonic()
        message = await ask(sdk, user("patience"))
        elapsed = time.monotonic() - started

    assert message.content[0].text == "echo: patience"  # type: ignore[union-attr]
    assert elapsed >= 0.8
    assert [r.status for r in fake.requests] == [429, 429, 200]


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
    assert final.usage.output_tokens == fake.requests[-1].usage["output_tokens"]  # type: ignore[index]
    assert final.usage.input_tokens == fake.requests[-1].usage["input_tokens"]  # type: ignore[index]


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

    text = summary.content[0].text  # type: ignore[union-attr]
    for heading in ("## Goal", "## Progress", "### Done", "## Relevant Files", "## Critical Context"):
        assert heading in text
    assert "src/billing/invoice.py" in text
    assert "ORDER-7731" in text
    assert "retry_budget" in text
    assert summary.usage.output_tokens <= 300
    assert reply.content[0].text == "scripted answer"  # type: ignore[union-attr]
    assert [r.kind for r in fake.requests] == ["summary", "reply"]


async def test_a_default_summary_fits_a_small_max_tokens(client: anthropic.AsyncAnthropic) -> None:
    ids = " ".join(f"TICKET-{n}" for n in range(500))
    summary = await client.messages.create(
        model=MODEL, max_tokens=150, messages=user(f"{ids}\n## Goal\nsummarize")
    )

    assert summary.usage.output_tokens <= 150
    assert "## Critical Context" in summary.content[0].text  # type: ignore[union-attr]
    assert "TICKET-0" in summary.content[0].text  # type: ignore[union-attr]


def _cached_system(ttl: str = "5m") -> list[Any]:
    return [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral", "ttl": ttl}}]


async def test_prefix_cache_through_the_sdk_writes_reads_and_expires(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    first = await ask(client, user("one"), system=_cached_system())
    fake.advance(120)
    second = await ask(client, user("two"), system=_cached_system())
    fake.advance(301)
    third = await ask(client, user("three"), system=_cached_system())

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
    first = await ask(client, user("one"), system=_cached_system("1h"))
    fake.advance(1800)
    later = await ask(client, user("two"), system=_cached_system("1h"))

    assert first.usage.cache_creation is not None
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == first.usage.cache_creation_input_tokens
    assert later.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


async def test_reply_delay_slows_every_reply(fake: FakeAnthropic) -> None:
    async with (
        FakeAnthropic(reply_delay=0.3) as slow,
        anthropic.AsyncAnthropic(api_key="test-key", base_url=slow.base_url, max_retries=0) as sdk,
    ):
        started = time.monotonic()
        await asyncio.gather(*(ask(sdk, user(f"m{i}")) for i in range(5)))
        elapsed = time.monotonic() - started

    assert 0.3 <= elapsed < 1.2  # the five waits overlap: handlers never block one another


async def test_a_thousand_simultaneous_chats_are_all_answered_concurrently() -> None:
    # Raw HTTP rather than the SDK: this measures the server's concurrency, not the client's pool.
    async with (
        FakeAnthropic(reply_delay=0.5) as slow,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session,
    ):

        async def chat(i: int) -> str:
            body = {"model": MODEL, "max_tokens": 50, "messages": user(f"chat {i}")}
            async with session.post(
                f"{slow.base_url}/v1/messages", json=body, headers={"authorization": "Bearer test-key"}
            ) as response:
                payload = await response.json()
                return str(payload["content"][0]["text"])

        started = time.monotonic()
        texts = await asyncio.gather(*(chat(i) for i in range(1000)))
        elapsed = time.monotonic() - started

        assert texts == [f"echo: chat {i}" for i in range(1000)]
        assert len(slow.requests) == 1000
        assert elapsed < 15  # one after another would take 500 s


async def test_separate_process_mode_answers_and_obeys_its_control_endpoints() -> None:
    async with (
        spawn_fake_anthropic("--context-window", f"{MODEL}=8000") as remote,
        anthropic.AsyncAnthropic(api_key="test-key", base_url=remote.base_url, max_retries=0) as sdk,
    ):
        assert (await ask(sdk, user("ping"))).content[0].text == "echo: ping"  # type: ignore[union-attr]

        await remote.script_reply("from the script")
        assert (await ask(sdk, user("x"))).content[0].text == "from the script"  # type: ignore[union-attr]

        await remote.script_fault("rate_limit", retry_after=3)
        with pytest.raises(anthropic.RateLimitError):
            await ask(sdk, user("x"))

        first = await ask(sdk, user("cache me"), system=_cached_system())
        await remote.advance(400)
        expired = await ask(sdk, user("cache me"), system=_cached_system())
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


async def test_window_overrides_apply_to_dated_aliases_too() -> None:
    async with (
        FakeAnthropic(context_windows={"claude-haiku-4-5": 500}) as small,
        anthropic.AsyncAnthropic(api_key="test-key", base_url=small.base_url, max_retries=0) as sdk,
    ):
        with pytest.raises(anthropic.BadRequestError) as caught:
            await sdk.messages.create(
                model="claude-haiku-4-5-20251001", max_tokens=10, messages=user("word " * 600)
            )

    assert (caught.value.api_message or "").endswith("tokens > 500 maximum")

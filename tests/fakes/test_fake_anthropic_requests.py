"""What the fake Anthropic API accepts and refuses, like the real one, through the real SDK: keys,
malformed requests, models, prompts over the window, and token counts that match the usage charged."""

from __future__ import annotations

from typing import Any

import aiohttp
import anthropic
import pytest

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.fake_anthropic_support import (
    MODEL,
    TOOLS,
    ask,
    fake_anthropic,  # noqa: F401 - a fixture, found by pytest as `fake`
    sdk_client,  # noqa: F401 - a fixture, found by pytest as `client`
    text_of,
    user,
)


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

    assert text_of(second.content[0]) == "echo: shipped Monday"
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

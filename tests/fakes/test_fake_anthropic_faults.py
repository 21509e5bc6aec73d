"""Scripted faults and slow replies in the fake Anthropic API, through the real SDK: each fault surfaces
once as the SDK's exception, and delayed replies overlap instead of queueing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import anthropic
import httpx2
import pytest

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.fake_anthropic_support import (
    MODEL,
    ask,
    fake_anthropic,  # noqa: F401 - a fixture, found by pytest as `fake`
    sdk_client,  # noqa: F401 - a fixture, found by pytest as `client`
    text_of,
    user,
)

FAULTS: list[tuple[str, type[Exception], int | None]] = [
    ("rate_limit", anthropic.RateLimitError, 429),
    ("overloaded", anthropic.OverloadedError, 529),
    ("server_error", anthropic.InternalServerError, 500),
    ("overflow", anthropic.BadRequestError, 400),
    ("auth", anthropic.AuthenticationError, 401),
    ("reset", anthropic.APIConnectionError, None),
    ("cut", anthropic.APIConnectionError, None),  # a plain call: dropped before its answer
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
    assert text_of(after.content[0]) == "echo: hello again"
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
        assert text_of((await ask(sdk, user("fast"))).content[0]) == "echo: fast"


async def test_a_cut_stream_delivers_half_the_text_then_drops_the_connection(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    reply = " ".join(f"word{i}" for i in range(200))
    fake.script_reply(reply)
    fake.script_fault("cut", scope="reply")
    received: list[str] = []

    async def read() -> None:
        async with client.messages.stream(model=MODEL, max_tokens=512, messages=user("talk")) as stream:
            async for event in stream:
                if event.type == "text":
                    received.append(event.text)

    with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
        await read()

    text = "".join(received)
    assert text
    assert reply.startswith(text)
    assert len(text) < len(reply)
    assert text_of((await ask(client, user("again"))).content[0]) == "echo: again"


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

    assert text_of(message.content[0]) == "echo: patience"
    assert elapsed >= 0.8
    assert [r.status for r in fake.requests] == [429, 429, 200]


async def test_reply_delay_slows_every_reply(fake: FakeAnthropic) -> None:
    async with (
        FakeAnthropic(reply_delay=1.0) as slow,
        anthropic.AsyncAnthropic(api_key="test-key", base_url=slow.base_url, max_retries=0) as sdk,
    ):
        started = time.monotonic()
        await asyncio.gather(*(ask(sdk, user(f"m{i}")) for i in range(5)))
        elapsed = time.monotonic() - started

    # the five waits overlap (one after another would take 5 s): handlers never block one another;
    # the bound leaves room for a busy machine's overhead
    assert 1.0 <= elapsed < 3.0


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

"""AnthropicClient through the real SDK against the protocol-level fake API on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from agent.errors import (
    ContextOverflowError,
    LLMAuthError,
    LLMBadRequestError,
    LLMNotFoundError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMServerError,
    LLMStreamCutError,
    LLMUnavailableError,
)
from agent.llm import AnthropicClient, LLMRequest, retry_after_seconds, translate_status
from tests.fakes.anthropic import FakeAnthropic
from tests.support.ports import free_port

MODEL = "claude-sonnet-4-6"


def hello(text: str = "hello there") -> LLMRequest:
    return LLMRequest(
        model=MODEL,
        system=[{"type": "text", "text": "You are terse."}],
        messages=[{"role": "user", "content": text}],
        max_tokens=256,
    )


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_key="k-test") as server:
        yield server


def client_for(fake: FakeAnthropic, **kwargs: float) -> AnthropicClient:
    return AnthropicClient(api_key="k-test", base_url=fake.base_url, **kwargs)  # type: ignore[arg-type]


async def test_reply_content_usage_and_request_shape(fake: FakeAnthropic) -> None:
    fake.script_reply("Sure.", tool_uses=[{"id": "toolu_1", "name": "current_time", "input": {}}])
    client = client_for(fake)
    try:
        tool = {"name": "current_time", "description": "now", "input_schema": {"type": "object"}}
        response = await client.create(
            LLMRequest(
                model=MODEL,
                system=[{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
                messages=[{"role": "user", "content": "what time is it?"}],
                tools=[tool],
                max_tokens=128,
            )
        )
    finally:
        await client.close()
    assert response.stop_reason == "tool_use"
    assert response.text == "Sure."
    assert response.tool_uses == [{"type": "tool_use", "id": "toolu_1", "name": "current_time", "input": {}}]
    assert response.as_message()["role"] == "assistant"
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    recorded = fake.total_usage()
    assert response.usage == recorded
    body = fake.requests[-1].body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"] == [tool]
    assert response.model == MODEL
    assert response.latency_s > 0


async def test_cache_usage_fields_are_parsed(fake: FakeAnthropic) -> None:
    client = client_for(fake)
    long_system = "Rules of the house. " * 600  # well above the 1024-token cache minimum
    request = LLMRequest(
        model=MODEL,
        system=[{"type": "text", "text": long_system, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=64,
    )
    try:
        first = await client.create(request)
        second = await client.create(request)
    finally:
        await client.close()
    assert first.usage.cache_creation_input_tokens > 1000
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.prompt_tokens == first.usage.prompt_tokens


async def test_bad_key_is_an_auth_error(fake: FakeAnthropic) -> None:
    client = AnthropicClient(api_key="wrong", base_url=fake.base_url)
    try:
        with pytest.raises(LLMAuthError) as info:
            await client.create(hello())
    finally:
        await client.close()
    assert info.value.status_code == 401
    assert len(fake.requests) == 1  # never retried


async def test_rate_limit_waits_for_retry_after_then_succeeds(fake: FakeAnthropic) -> None:
    fake.script_fault("rate_limit", retry_after=1)
    client = client_for(fake, total_timeout_s=10)
    started = time.monotonic()
    try:
        response = await client.create(hello("ping"))
    finally:
        await client.close()
    elapsed = time.monotonic() - started
    assert response.text == "echo: ping"
    assert [r.status for r in fake.requests] == [429, 200]
    assert elapsed >= 0.95


async def test_retry_after_beyond_the_budget_fails_at_once(fake: FakeAnthropic) -> None:
    fake.script_fault("rate_limit", retry_after=30, times=-1)
    client = client_for(fake, total_timeout_s=3)
    started = time.monotonic()
    try:
        with pytest.raises(LLMRateLimitError) as info:
            await client.create(hello())
    finally:
        await client.close()
    assert time.monotonic() - started < 2
    assert info.value.retry_after == 30
    assert len(fake.requests) == 1


async def test_persistent_overload_gives_up_within_the_budget(fake: FakeAnthropic) -> None:
    fake.script_fault("overloaded", times=-1)
    client = client_for(fake, max_retries=2, total_timeout_s=6)
    started = time.monotonic()
    try:
        with pytest.raises(LLMOverloadedError) as info:
            await client.create(hello())
    finally:
        await client.close()
    assert time.monotonic() - started < 6
    assert info.value.status_code == 529
    assert len(fake.requests) == 3  # the SDK's own retries were used


async def test_server_error_then_success_is_retried_by_the_sdk(fake: FakeAnthropic) -> None:
    fake.script_fault("server_error", retry_after=0.1)
    client = client_for(fake)
    try:
        response = await client.create(hello("again"))
    finally:
        await client.close()
    assert response.text == "echo: again"
    assert [r.status for r in fake.requests] == [500, 200]


async def test_prompt_too_long_is_a_context_overflow() -> None:
    async with FakeAnthropic(api_key="k-test", context_windows={MODEL: 2_000}) as fake:
        client = client_for(fake)
        try:
            with pytest.raises(ContextOverflowError) as info:
                await client.create(hello("word " * 5_000))
        finally:
            await client.close()
    assert info.value.status_code == 400
    assert len(fake.requests) == 1


async def test_other_bad_requests_are_not_overflows(fake: FakeAnthropic) -> None:
    client = client_for(fake)
    bad = LLMRequest(model=MODEL, system=[], messages=[{"role": "assistant", "content": "hi"}], max_tokens=-5)
    try:
        with pytest.raises(LLMBadRequestError) as info:
            await client.create(bad)
    finally:
        await client.close()
    assert not isinstance(info.value, ContextOverflowError)


async def test_unreachable_server_is_unavailable() -> None:
    port = free_port()  # nothing listens there
    client = AnthropicClient(api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    try:
        with pytest.raises(LLMUnavailableError):
            await client.create(hello())
    finally:
        await client.close()


async def test_a_hanging_server_is_cut_off_by_the_total_budget(fake: FakeAnthropic) -> None:
    fake.script_fault("timeout", delay=30, times=-1)
    client = client_for(fake, total_timeout_s=1.0)
    started = time.monotonic()
    try:
        with pytest.raises(LLMUnavailableError):
            await client.create(hello())
    finally:
        await client.close()
    assert time.monotonic() - started < 2.5


async def test_a_stream_cut_in_the_middle_is_a_stream_cut_error_after_the_text_so_far(
    fake: FakeAnthropic,
) -> None:
    reply = " ".join(f"word{i}" for i in range(120))
    fake.script_reply(reply)
    fake.script_fault("cut", scope="reply")
    client = client_for(fake)
    shown: list[str] = []

    async def on_text(delta: str) -> None:
        shown.append(delta)

    try:
        with pytest.raises(LLMStreamCutError) as info:
            await client.stream(hello(), on_text)
        cut = "".join(shown)
        again = await client.stream(hello("still there?"), on_text)
    finally:
        await client.close()
    assert isinstance(info.value, LLMUnavailableError)  # handled as an unreachable API wherever not shown
    assert reply.startswith(cut)
    assert 0 < len(cut) < len(reply)
    assert again.text == "echo: still there?"
    assert len(fake.requests) == 2  # a stream that has started is not sent again


async def test_look_up_model_names_an_unknown_model_and_an_unreachable_api(fake: FakeAnthropic) -> None:
    client = client_for(fake)
    try:
        assert await client.look_up_model(MODEL, timeout_s=5.0) == MODEL
        with pytest.raises(LLMNotFoundError) as info:
            await client.look_up_model("claude-sonet-4-6", timeout_s=5.0)
    finally:
        await client.close()
    assert info.value.status_code == 404
    port = free_port()  # nothing listens there
    gone = AnthropicClient(api_key="k", base_url=f"http://127.0.0.1:{port}")
    started = time.monotonic()
    try:
        with pytest.raises(LLMUnavailableError):
            await gone.look_up_model(MODEL, timeout_s=5.0)
    finally:
        await gone.close()
    assert time.monotonic() - started < 1.0  # one attempt, no retries


@pytest.mark.parametrize(
    ("status", "error_type", "message", "expected"),
    [
        (401, "authentication_error", "invalid x-api-key", LLMAuthError),
        (403, "permission_error", "no access", LLMAuthError),
        (429, "rate_limit_error", "slow down", LLMRateLimitError),
        (529, "overloaded_error", "Overloaded", LLMOverloadedError),
        (500, "api_error", "oops", LLMServerError),
        (503, None, None, LLMServerError),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            ContextOverflowError,
        ),
        (
            400,
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 8206 + 4096 > 12000, decrease input length "
            "or `max_tokens` and try again",
            ContextOverflowError,
        ),
        (413, "request_too_large", "Request exceeds the maximum size", ContextOverflowError),
        (400, "invalid_request_error", "messages: roles must alternate", LLMBadRequestError),
        (404, "not_found_error", "model: nope", LLMNotFoundError),
    ],
)
def test_status_translation(status: int, error_type: str | None, message: str | None, expected: type) -> None:
    error = translate_status(status, error_type, message, {})
    assert type(error) is expected
    assert error.status_code == status


def test_retry_after_header_forms() -> None:
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "soon"}) is None
    in_a_minute = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))
    parsed = retry_after_seconds({"retry-after": in_a_minute})
    assert parsed is not None
    assert 55 <= parsed <= 61
    rate = translate_status(429, "rate_limit_error", "x", {"retry-after": "12"})
    assert isinstance(rate, LLMRateLimitError)
    assert rate.retry_after == 12.0


async def test_automatic_caching_and_cache_diagnostics_through_the_sdk(fake: FakeAnthropic) -> None:
    """One top-level cache_control caches the whole prompt; diagnostics name what changed."""
    client = client_for(fake)
    system = [{"type": "text", "text": "Rules of the house. " * 600}]
    question = [{"role": "user", "content": "hi"}]
    auto = {"type": "ephemeral"}
    try:
        first = await client.create(
            LLMRequest(model=MODEL, system=system, messages=question, max_tokens=64, automatic_cache=auto,
                       diagnose=True)
        )  # fmt: skip
        grown = [*question, {"role": "assistant", "content": first.text}, {"role": "user", "content": "and?"}]
        second = await client.create(
            LLMRequest(model=MODEL, system=system, messages=grown, max_tokens=64, automatic_cache=auto,
                       diagnose=True, previous_message_id=first.message_id)
        )  # fmt: skip
        changed = [{"type": "text", "text": "Rules of the house, 2026-11-24. " * 400}]
        third = await client.create(
            LLMRequest(model=MODEL, system=changed, messages=grown, max_tokens=64, automatic_cache=auto,
                       diagnose=True, previous_message_id=second.message_id)
        )  # fmt: skip
    finally:
        await client.close()
    assert first.usage.cache_creation_input_tokens == first.usage.prompt_tokens
    assert second.usage.cache_read_input_tokens == first.usage.prompt_tokens
    assert second.cache_miss_reason is None  # the prompt only grew
    assert third.usage.cache_read_input_tokens == 0
    assert third.cache_miss_reason == "system_changed"
    assert third.cache_missed_tokens == second.usage.prompt_tokens
    assert fake.requests[0].body["cache_control"] == auto
    assert fake.requests[0].body["diagnostics"] == {"previous_message_id": None}

"""Shared pieces of the fake Anthropic API's SDK tests: the model, a tool, a long cacheable system
prompt, a fake with an 8,000-token window and an SDK client on it, and request shorthands."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
from anthropic.types import TextBlock, ThinkingBlock
from anthropic.types.beta import BetaTextBlock, BetaThinkingBlock

from tests.fakes.anthropic import FakeAnthropic

MODEL = "claude-sonnet-4-6"
TOOLS: list[Any] = [
    {
        "name": "lookup_order",
        "description": "Look an order up by id.",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]
LONG_SYSTEM = "You are a careful assistant for the billing team. " * 120  # ~1,700 tokens


@pytest.fixture(name="fake")
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(context_windows={MODEL: 8000}) as server:
        yield server


@pytest.fixture(name="client")
async def sdk_client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
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


def text_of(block: object) -> str:
    """The text of a content block the test expects to be a text block."""
    assert isinstance(block, TextBlock | BetaTextBlock), block
    return block.text


def thinking_of(block: object) -> ThinkingBlock | BetaThinkingBlock:
    """A content block the test expects to be a thinking block."""
    assert isinstance(block, ThinkingBlock | BetaThinkingBlock), block
    return block


def cached_system(ttl: str = "5m") -> list[Any]:
    return [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral", "ttl": ttl}}]

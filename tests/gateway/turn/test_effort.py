"""The effort a reply is asked for on Claude Sonnet 5.5: medium unless configured, none sent for the
model's own default, and what the API bills follows it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.platforms.base import Author
from tests.fakes.anthropic import FakeAnthropic, ThinkingVolume
from tests.support.gateway_bot import running_bot
from tests.support.memory_adapter import ALICE, BOB, private_chat

SONNET: dict[str, Any] = {"model": "claude-sonnet-5-5"}
HIGH = 400


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(thinking_volume=ThinkingVolume(high_tokens=HIGH)) as server:
        yield server


async def _reply_request(fake: FakeAnthropic, db_url: str, user: Author, **overrides: Any) -> tuple[Any, int]:
    async with running_bot(fake, db_url, **SONNET, **overrides) as bot:
        replies = await bot.adapter.say("what's the capital of Peru?", user=user, chat=private_chat(user))
        assert len(replies) == 1
        request = bot.replies()[-1]
        assert request.usage is not None
        return request.body.get("output_config"), int(request.usage["output_tokens"])


async def test_replies_ask_for_medium_effort_by_default(fake: FakeAnthropic, sqlite_url: str) -> None:
    default, default_output = await _reply_request(fake, sqlite_url, ALICE)
    model_own, model_own_output = await _reply_request(fake, sqlite_url, BOB, agent={"effort": "default"})

    assert default == {"effort": "medium"}
    assert model_own is None  # the API applies Sonnet 5.5's own default, high
    # half the thinking billed at medium (the echoed names differ in length by a token at most)
    assert model_own_output - default_output == pytest.approx(HIGH // 2, abs=1)

"""A request that still overflows the model's window after compaction did what it could: the reply
names /new, with compression on and with `compression.enabled: false`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.reply.wording import CONVERSATION_TOO_LONG
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import running_bot

SMALL: dict[str, Any] = {"model_context_length": 4096, "prompt_caching": {"cache_ttl": "5m"}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


def filler(tag: str, words: int = 250) -> str:
    return f"{tag}: " + " ".join(f"word{i % 50}" for i in range(words))


@pytest.mark.parametrize("enabled", [True, False], ids=["compression on", "compression off"])
async def test_an_overflow_compaction_cannot_fix_names_new(
    fake: FakeAnthropic, sqlite_url: str, enabled: bool
) -> None:
    settings = {**SMALL, "compression": {"protect_last_n": 2, "enabled": enabled}}
    async with running_bot(fake, sqlite_url, **settings) as bot:
        for i in range(3):
            await bot.adapter.say(filler(f"topic{i}", 120))
        before = await bot.scalar("SELECT count(*) FROM compactions")
        fake.script_fault("overflow", times=-1, scope="reply")
        replies = await bot.adapter.say("what did we say about topic1?")
        assert replies[-1].text.endswith(CONVERSATION_TOO_LONG)
        assert "/new" in replies[-1].text
        compactions = await bot.rows(
            "SELECT trigger, outcome FROM compactions WHERE id > :n ORDER BY id", n=before
        )
        if enabled:  # the turn compacted what it could (on the overflow) before giving up
            assert compactions
            assert {r.trigger for r in compactions} == {"agent"}
        else:  # nothing is compacted: the overflow reaches the user at once
            assert compactions == []
        fake.clear_faults()
        replies = await bot.adapter.say("/new")
        assert replies

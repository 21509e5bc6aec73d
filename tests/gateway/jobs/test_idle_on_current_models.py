"""The idle job's compaction on claude-sonnet-5-5: the chat compacted while nobody talked goes on, and
the thinking bound to what the compaction replaced is left out, not refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from gateway.jobs.maintenance import compact_idle_sessions
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import running_bot


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


def note(tag: str) -> str:
    return f"{tag}: " + " ".join(f"detail{i % 40}" for i in range(330))


async def test_an_idle_compaction_on_sonnet_5_5_refuses_nothing(fake: FakeAnthropic, db_url: str) -> None:
    settings = {
        "model": "claude-sonnet-5-5",
        "model_context_length": 8_000,
        "compression": {"threshold": 0.8, "protect_last_n": 2},
        "scheduler": {"proactive_share": 0.5, "idle_minutes": 30},
    }
    async with running_bot(fake, db_url, **settings) as bot:
        for i in range(10):
            await bot.adapter.say(note(f"evening {i}"))
        gateway = bot.gateway
        later = gateway.clock() + timedelta(hours=2)
        reports = await compact_idle_sessions(
            store=gateway.store,
            locks=gateway.locks,
            compactor=gateway.compactor,
            make_engine=gateway.kit.engine,
            policy=gateway.policy,
            now=later,
        )
        assert [r.changed for r in reports] == [True]
        fake.script_reply("Good morning.")
        replies = await bot.adapter.say("morning, where were we?")
        assert replies[-1].text.endswith("Good morning.")
        assert [r.status for r in fake.requests if r.kind == "reply"] == [200] * 11
        outcomes = {c["outcome"] for r in fake.requests for c in r.thinking_checks}
        assert outcomes <= {"kept"}

"""Turns through a real Gateway: hygiene first, in-loop compression, summarizer failures, recall."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent.compaction.summarizer import CostAwareSummarizer
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ADMIN, ALICE, BOB, group_chat

GROUP = group_chat("-200", "Night owls")
WINDOW = 4096
"""A small model window (Settings.model_context_length) so compaction fires after a few messages."""
SMALL: dict[str, Any] = {
    "model_context_length": WINDOW,
    "compression": {"protect_last_n": 2},
    "prompt_caching": {"cache_ttl": "5m"},  # these scenarios rely on a warm fixed-TTL cache
}


def filler(tag: str, words: int = 250) -> str:
    """About `words` tokens of plain text that starts with a recognisable tag."""
    return f"{tag}: " + " ".join(f"word{i % 50}" for i in range(words))


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


async def warm_group_with_chatter(bot: Bot, messages: int = 14) -> None:
    """One answered mention (a recent call keeps the prompt cache warm), then unaddressed chatter."""
    await bot.adapter.say("@testbot hi all", chat=GROUP, mentions_bot=True)
    for i in range(messages):  # stored, not answered, no model calls
        speaker = ALICE if i % 2 else BOB
        assert await bot.adapter.say(filler(f"chatter{i}"), user=speaker, chat=GROUP) == []


def last_user_text(bot: Bot) -> str:
    return json.dumps(bot.replies()[-1].body["messages"][-1])


async def compactions(bot: Bot) -> list[Any]:
    return await bot.rows("SELECT trigger, outcome, reason FROM compactions ORDER BY id")


async def test_hygiene_compacts_before_the_agent_runs(fake: FakeAnthropic, db_url: str) -> None:
    async with running_bot(fake, db_url, **SMALL) as bot:
        await warm_group_with_chatter(bot)
        assert [r.kind for r in fake.requests] == ["reply"]
        replies = await bot.adapter.say("@testbot sum up please", chat=GROUP, mentions_bot=True)
        assert len(replies) == 1
        assert replies[0].text.startswith("(Context compacted: ")
        assert "echo: " in replies[0].text
        assert "[Alice] @testbot sum up please" in last_user_text(bot)
        assert [r.kind for r in fake.requests] == ["reply", "summary", "reply"]
        rows = await compactions(bot)
        assert [(r.trigger, r.outcome) for r in rows] == [("hygiene", "ok")]
        reply_body = json.dumps(bot.replies()[-1].body)
        assert "chatter1:" not in reply_body  # compacted away before the call
        archived = await bot.scalar("SELECT count(*) FROM messages WHERE state = 'archived'")
        assert archived > 0


async def test_hygiene_never_fires_below_four_messages(fake: FakeAnthropic, sqlite_url: str) -> None:
    async with running_bot(fake, sqlite_url, **SMALL) as bot:
        await bot.adapter.say(filler("huge1", 1400), user=BOB, chat=GROUP)
        await bot.adapter.say(filler("huge2", 1400), user=BOB, chat=GROUP)
        replies = await bot.adapter.say("@testbot still there?", chat=GROUP, mentions_bot=True)
        assert len(replies) == 1
        assert "Context compact" not in replies[0].text
        # hygiene left the three messages alone; the compressor may compact once the reply is out
        assert "hygiene" not in [r.trigger for r in await compactions(bot)]
        assert fake.requests[0].kind == "reply"


async def test_in_loop_compression_records_trigger_agent(fake: FakeAnthropic, sqlite_url: str) -> None:
    async with running_bot(fake, sqlite_url, **SMALL) as bot:
        for i in range(3):
            await bot.adapter.say(filler(f"topic{i}", 220))
        before = len(await compactions(bot))
        fake.script_reply(tool_uses=[{"name": "current_time", "input": {}}])
        fake.script_reply("It is late.")
        replies = await bot.adapter.say(filler("topic5", 400))
        assert len(replies) == 1
        assert replies[0].text.endswith("It is late.")
        assert "Context compacted" in replies[0].text
        rows = (await compactions(bot))[before:]
        assert ("agent", "ok") in {(r.trigger, r.outcome) for r in rows}
        window = await bot.window()
        assert window[-1].text == "It is late."
        assert any(r.role == "user" and "topic5" in r.text for r in window)


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [("server_error", "degraded"), ("rate_limit", "aborted")],
    ids=["degraded", "aborted"],
)
async def test_summarizer_failure_during_hygiene_does_not_block_the_turn(
    fake: FakeAnthropic, sqlite_url: str, fault: Any, outcome: str
) -> None:
    async with running_bot(fake, sqlite_url, **SMALL) as bot:
        await warm_group_with_chatter(bot)
        fake.script_fault(fault, times=-1, scope="summary")
        replies = await bot.adapter.say("@testbot hello?", chat=GROUP, mentions_bot=True)
        assert len(replies) == 1
        assert "echo: " in replies[0].text
        assert "[Alice] @testbot hello?" in last_user_text(bot)
        assert f"Context compaction {outcome}" in replies[0].text
        rows = await compactions(bot)
        assert rows[0].trigger == "hygiene"
        assert rows[0].outcome == outcome
        assert "summar" in rows[0].reason


async def test_recall_reads_this_chats_archive_only(fake: FakeAnthropic, sqlite_url: str) -> None:
    admins = frozenset({int(ADMIN.user_id), int(ALICE.user_id)})
    async with running_bot(fake, sqlite_url, telegram_admin_ids=admins, **SMALL) as bot:
        for who in (ADMIN, ALICE):
            for i in range(6):
                await bot.adapter.say(
                    f"{who.display_name} secret zebrafish{i} " + filler("pad", 200), user=who
                )
            await bot.adapter.say("/compact", user=who)
            chat_pk = await bot.chat_pk("telegram", who.user_id)
            archived = await bot.scalar(
                "SELECT count(*) FROM messages WHERE chat_pk = :c AND text LIKE '%zebrafish1%' "
                "AND state = 'archived'",
                c=chat_pk,
            )
            assert archived >= 1
        fake.script_reply(tool_uses=[{"name": "recall", "input": {"query": "zebrafish1"}}])
        fake.script_reply("Found it.")
        replies = await bot.adapter.say("what was the first secret?", user=ADMIN)
        assert replies[-1].text.endswith("Found it.")  # (a compaction notice may come first)
        request = bot.replies()[-1].body
        results = [
            b
            for m in request["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        assert len(results) == 1
        found = json.dumps(results[0]["content"])
        assert "Admin secret zebrafish1" in found
        assert "Alice secret" not in found


async def test_the_time_tool_and_the_summary_mode_go_by_the_gateway_clock(
    fake: FakeAnthropic, sqlite_url: str
) -> None:
    """The model is told the time the turn runs at, and a summary judges the prompt cache warm or cold
    at that time too: the clock the cache plan uses (a replay in simulated time, a test's fixed time)."""
    then = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    now = [then]
    async with running_bot(fake, sqlite_url) as bot:
        bot.gateway.clock = lambda: now[0]
        fake.script_reply(tool_uses=[{"name": "current_time", "input": {}}])
        fake.script_reply("Half past nine.")
        replies = await bot.adapter.say(filler("what time is it", 1500), user=ALICE)
        assert replies[-1].text.endswith("Half past nine.")
        answered = json.dumps(bot.replies()[-1].body["messages"][-1])
        assert "2026-03-01T09:30:00+00:00 (Sunday, UTC)" in answered

        session = await bot.store.active_session(await bot.chat_pk("telegram", ALICE.user_id))
        assert session.cache_state  # the turn cached its prompt, at the gateway's time
        summarizer = bot.gateway.kit.summarizer(session)
        assert isinstance(summarizer, CostAwareSummarizer)
        assert summarizer.cache_warm()
        now[0] = then + timedelta(hours=2)
        assert not summarizer.cache_warm()

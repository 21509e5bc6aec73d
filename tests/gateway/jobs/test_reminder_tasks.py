"""A scheduled task through the real gateway against the fake API: at its time it runs one turn with its
text as the instruction, paid from the chat's budget; it cannot schedule more; a spent budget stops it
before any call."""

from __future__ import annotations

from datetime import timedelta

from gateway.store.reminders import NewReminder
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ALICE

ON = {"enabled": True}
"""Reminders are off in the test bot by default (the tool changes every prompt)."""


async def schedule_task(bot: Bot, text: str) -> int:
    await bot.adapter.say("hello")  # the chat exists, with one exchange
    chat_pk = await bot.chat_pk("telegram", ALICE.user_id)
    due = bot.gateway.now() - timedelta(seconds=1)
    new = NewReminder(chat_pk, "task", text, None, "UTC", due, creator_id=ALICE.user_id)
    record = await bot.store.add_reminder(new, max_active=5)
    assert record is not None
    return chat_pk


async def test_a_task_runs_one_turn_under_the_chats_budget_and_cannot_schedule_more(db_url: str) -> None:
    async with (
        FakeAnthropic() as fake,
        running_bot(fake, db_url, limits={"chat_daily_budget_usd": 1.0}, reminders=ON) as bot,
    ):
        chat_pk = await schedule_task(bot, "Summarise what we said today")
        before = len(bot.replies())
        fake.script_reply(
            tool_uses=[{"name": "schedule_message", "input": {"at": "2030-01-01T09:00:00Z", "text": "again"}}]
        )
        fake.script_reply("Today you said hello.")
        sent = len(bot.adapter.sent)
        assert await bot.gateway.reminders.tick() == 1
        await bot.adapter.wait_idle()
        calls = bot.replies()[before:]
        assert len(calls) == 2  # one turn: the tool round and the answer
        instruction = calls[0].body["messages"][-1]["content"]
        assert "[Scheduled task, due " in str(instruction)
        assert "Summarise what we said today" in str(instruction)
        refused = [
            b
            for m in calls[1].body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ][-1]
        assert refused.get("is_error") is True, refused
        assert "a scheduled task cannot schedule further messages" in str(refused["content"])
        assert [m.text for m in bot.adapter.sent[sent:]] == ["Today you said hello."]
        assert [r.text for r in await bot.store.pending_reminders(chat_pk)] == []
        spent = await bot.rows(
            "SELECT SUM(spent_usd) AS s FROM spend_ledger WHERE scope = :s", s=f"chat:{chat_pk}"
        )
        assert float(spent[0].s or 0) > 0


async def test_a_task_in_a_chat_whose_budget_is_spent_makes_no_call(db_url: str) -> None:
    async with (
        FakeAnthropic() as fake,
        running_bot(fake, db_url, limits={"chat_daily_budget_usd": 0.000001}, reminders=ON) as bot,
    ):
        await schedule_task(bot, "Write me a poem")
        calls = len(fake.requests)
        sent = len(bot.adapter.sent)
        await bot.gateway.reminders.tick()
        await bot.adapter.wait_idle()
        assert len(fake.requests) == calls
        (notice,) = bot.adapter.sent[sent:]
        assert "budget" in notice.text

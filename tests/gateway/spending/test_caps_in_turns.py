"""The spending caps through the real gateway, store and client against the fake API: a turn whose tool
rounds would cross a cap stops before the call that would cross it, says so and keeps what it did; a
sender whose budget is spent is told which one and when it resets, and no call is made; with
`answer_after_reset` the messages wait and are answered once the budget resets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.models import cost_usd, lookup_model
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import MODEL, Bot, running_bot
from tests.support.memory_adapter import ALICE, group_chat

CAP = 0.03
ROUNDS = 12
TOOLS = {"reminders": {"enabled": False}}
"""The rounds a cap allows are tuned to the prompt these tools make (its size decides what is cached)."""


def billed(fake: FakeAnthropic) -> float:
    """What every call the API answered cost, at list prices."""
    return cost_usd(lookup_model(MODEL), fake.total_usage())


def tool_rounds(fake: FakeAnthropic, rounds: int = ROUNDS) -> None:
    for i in range(rounds):
        fake.script_reply(
            f"Checking the clock, round {i}.", tool_uses=[{"name": "current_time", "input": {}}]
        )
    fake.script_reply("It is late.")


async def spent_on(bot: Bot, scope: str) -> float:
    row = await bot.rows("SELECT SUM(spent_usd) AS spent FROM spend_ledger WHERE scope = :s", s=scope)
    return float(row[0].spent or 0.0)


async def test_a_tool_heavy_turn_stops_before_the_call_that_would_cross_the_cap(db_url: str) -> None:
    async with (
        FakeAnthropic() as fake,
        running_bot(fake, db_url, limits={"chat_daily_budget_usd": CAP}, **TOOLS) as bot,
    ):
        tool_rounds(fake)
        replies = await bot.adapter.say("what time is it? check it again and again")
        sent = len(fake.requests)
        assert 1 < sent < ROUNDS + 1  # some rounds ran; the one that would cross the cap was not sent
        (reply,) = replies
        assert reply.text.startswith(f"Checking the clock, round {sent - 1}.")
        assert (
            "(Stopped here: this chat's daily budget ($0.03) is spent; it resets at 00:00 UTC" in reply.text
        )
        assert billed(fake) <= CAP
        chat_pk = await bot.chat_pk("telegram", ALICE.user_id)
        assert await spent_on(bot, f"chat:{chat_pk}") == pytest.approx(billed(fake), rel=1e-6)
        # the tool results the turn got are kept for the next one
        window = await bot.window()
        assert [m.role for m in window] == ["user", *(["assistant", "user"] * sent)]

        refused = await bot.adapter.say("and now?")
        assert len(fake.requests) == sent  # no call at all
        (notice,) = refused
        assert notice.text.startswith(
            "This chat's daily budget ($0.03) is spent. It resets at 00:00 UTC (in "
        )
        assert "send it again after that" in notice.text
        assert [m.text for m in await bot.window()][-1] == "and now?"  # kept


async def test_a_users_budget_follows_them_into_other_chats(db_url: str) -> None:
    limits = {"user_daily_budget_usd": CAP, "chat_daily_budget_usd": 0}
    async with FakeAnthropic() as fake, running_bot(fake, db_url, limits=limits, **TOOLS) as bot:
        tool_rounds(fake)
        await bot.adapter.say("keep checking the time")
        sent = len(fake.requests)
        group = group_chat("-500", "Team")
        refused = await bot.adapter.say("@testbot what time is it?", chat=group, mentions_bot=True)
        assert len(fake.requests) == sent
        assert [r.text.split(" It resets")[0] for r in refused] == ["Your daily budget ($0.03) is spent."]


async def test_with_answer_after_reset_the_messages_wait_and_are_answered_after_midnight(db_url: str) -> None:
    limits = {"chat_daily_budget_usd": CAP, "answer_after_reset": True}
    async with FakeAnthropic() as fake, running_bot(fake, db_url, limits=limits, **TOOLS) as bot:
        now = [datetime.now(UTC).replace(hour=22, minute=0, second=0, microsecond=0)]
        bot.gateway.clock = lambda: now[0]
        bot.adapter.clock = lambda: now[0]
        tool_rounds(fake)
        await bot.adapter.say("keep checking the time")
        sent = len(fake.requests)
        waiting = await bot.adapter.say("and the date?")
        assert [r.text for r in waiting] == [
            "This chat's daily budget ($0.03) is spent. It resets at 00:00 UTC (in 2 h 0 min). "
            "I kept your message and will answer it then."
        ]
        await bot.gateway._answer_held()  # the reset job, before the reset: nothing moves
        await bot.adapter.wait_idle()
        assert len(fake.requests) == sent
        assert not next(m for m in await bot.window() if m.text == "and the date?").replied

        now[0] += timedelta(hours=2, minutes=1)  # a new day, a new budget
        fake.reset()
        fake.script_reply("The 7th.")
        await bot.gateway._answer_held()
        await bot.adapter.wait_idle()
        assert len(fake.requests) == 1
        assert bot.adapter.sent[-1].text == "The 7th."
        assert "and the date?" in str(fake.requests[-1].body["messages"][-1])

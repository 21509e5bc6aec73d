"""A spent budget stops the background spending too: the keep-alive lets the chat's cache entry go
instead of refreshing it, and admins hear once when a budget passes its warning share."""

from __future__ import annotations

from agent.spending.periods import SpendFor
from gateway.store.spend.ledger import Refused
from tests.fakes.anthropic import FakeAnthropic
from tests.gateway.jobs.test_keepalive import Clock, a_chat_that_comes_back_every_six_minutes, warm
from tests.support.gateway_bot import ADMIN_ID, running_bot
from tests.support.memory_adapter import ALICE


async def test_a_chat_whose_budget_is_spent_is_not_kept_warm(db_url: str) -> None:
    async with FakeAnthropic(clock=lambda: 0.0) as fake, running_bot(fake, db_url) as bot:
        clock = Clock(fake)
        chat_pk = await a_chat_that_comes_back_every_six_minutes(bot, clock)
        budget = bot.gateway.budget
        # A call bigger than what is left of the chat's $5 day: the budget counts as spent from now on.
        refused = await budget.ledger.reserve(budget.limits(SpendFor(chat_pk)), 6.0, purpose="reply")
        assert isinstance(refused, Refused)

        assert await bot.gateway.keeper.run(clock.at(240)) == []
        assert warm(fake) == []
        session = await bot.store.active_session(chat_pk)
        assert session.cache_look_at is None  # let go: not looked at again every minute


async def test_admins_hear_once_when_a_budget_passes_its_warning_share(db_url: str) -> None:
    limits = {"chat_daily_budget_usd": 0.0, "bot_daily_budget_usd": 0.1, "budget_warn_share": 0.01}
    async with FakeAnthropic() as fake, running_bot(fake, db_url, limits=limits) as bot:
        await bot.adapter.say("hello")
        await bot.adapter.say("hello again")
        warnings = [m for m in bot.adapter.sent if m.text.startswith("Heads-up")]
        assert [(m.chat.chat_id, m.text) for m in warnings] == [
            (str(ADMIN_ID), "Heads-up: the bot's daily budget has passed 1% of its $0.10 cap.")
        ]
        assert all(m.chat.chat_id == ALICE.user_id for m in bot.adapter.sent if m not in warnings)


async def test_a_chats_warning_is_told_in_the_chat(db_url: str) -> None:
    limits = {"chat_daily_budget_usd": 0.1, "budget_warn_share": 0.01}
    async with FakeAnthropic() as fake, running_bot(fake, db_url, limits=limits) as bot:
        await bot.adapter.say("hello")
        (warning,) = [m for m in bot.adapter.sent if m.text.startswith("Heads-up")]
        assert warning.chat.chat_id == ALICE.user_id
        assert warning.text == "Heads-up: this chat's daily budget has passed 1% of its $0.10 cap."

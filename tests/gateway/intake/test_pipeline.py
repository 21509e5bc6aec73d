"""The pipeline through a real Gateway: who is answered, what is stored, ordering under concurrency."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ALICE, BOB, group_chat

GROUP = group_chat("-100", "Team")


def body_text(body: dict[str, object]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def bot(fake: FakeAnthropic, sqlite_url: str) -> AsyncIterator[Bot]:
    async with running_bot(fake, sqlite_url) as running:
        yield running


@pytest.fixture
async def bot_any_db(fake: FakeAnthropic, db_url: str) -> AsyncIterator[Bot]:
    """The same gateway on SQLite and on Postgres, for behaviour that depends on the database."""
    async with running_bot(fake, db_url) as running:
        yield running


async def test_private_chat_is_answered(bot: Bot) -> None:
    replies = await bot.adapter.say("hello there")
    assert [r.text for r in replies] == ["echo: hello there"]
    assert replies[0].reply_to_message_id is not None
    rows = await bot.window()
    assert [(r.role, r.text) for r in rows] == [("user", "hello there"), ("assistant", "echo: hello there")]
    assert all(r.replied for r in rows if r.needs_reply)


async def test_group_answers_only_mentions_and_shows_earlier_chatter_with_names(bot: Bot) -> None:
    assert await bot.adapter.say("anyone up for lunch?", user=ALICE, chat=GROUP) == []
    assert await bot.adapter.say("sure, at noon", user=BOB, chat=GROUP) == []
    assert bot.replies() == []
    replies = await bot.adapter.say("@testbot where should we go?", user=ALICE, chat=GROUP, mentions_bot=True)
    assert len(replies) == 1
    sent = body_text(bot.replies()[-1].body)
    assert "[Alice] anyone up for lunch?" in sent
    assert "[Bob] sure, at noon" in sent
    assert sent.index("[Alice] anyone up for lunch?") < sent.index("[Bob] sure, at noon")
    rows = await bot.window("telegram", "-100")
    assert [r.author_name for r in rows[:3]] == ["Alice", "Bob", "Alice"]
    assert [r.needs_reply for r in rows[:3]] == [False, False, True]


async def test_reply_to_the_bot_in_a_group_is_answered(bot: Bot) -> None:
    replies = await bot.adapter.say("and you?", user=BOB, chat=GROUP, reply_to_bot=True)
    assert [r.text for r in replies] == ["echo: [Bob] and you?"]


async def test_messages_during_a_turn_are_answered_together_in_order(
    bot_any_db: Bot, fake: FakeAnthropic
) -> None:
    bot = bot_any_db
    answered = asyncio.Event()
    fake.script_reply("first answer", hold=answered)
    await bot.adapter.post("one")
    await bot.adapter.typing_started.wait()  # the first turn is running, its reply held
    await bot.adapter.post("two")
    await bot.adapter.post("three")
    answered.set()
    await bot.adapter.wait_idle()
    assert bot.adapter.texts() == ["first answer", "echo: two three"]
    second = bot.replies()[1].body
    sent = body_text(second)
    assert sent.index("one") < sent.index("first answer") < sent.index("two") < sent.index("three")
    rows = await bot.window()
    assert [r.text for r in rows] == ["one", "first answer", "two", "three", "echo: two three"]
    assert all(r.replied for r in rows if r.needs_reply)


async def test_duplicate_delivery_is_stored_and_answered_once(bot_any_db: Bot) -> None:
    bot = bot_any_db
    message = bot.adapter.incoming("only once", message_id="dup-1")
    await bot.adapter.deliver(message)
    await bot.adapter.deliver(message)
    await bot.adapter.wait_idle()
    assert bot.adapter.texts() == ["echo: only once"]
    assert len(bot.replies()) == 1
    rows = await bot.window()
    assert [r.text for r in rows] == ["only once", "echo: only once"]


async def test_unauthorized_private_user_is_told_their_id_once(bot: Bot) -> None:
    from gateway.platforms.base import Author

    stranger = Author(user_id="999", display_name="Mallory")
    first = await bot.adapter.say("let me in", user=stranger)
    assert len(first) == 1
    assert "999" in first[0].text
    assert await bot.adapter.say("please", user=stranger) == []
    assert bot.replies() == []
    assert await bot.scalar("SELECT count(*) FROM messages") == 0


async def test_unauthorized_group_member_is_ignored_silently(bot: Bot) -> None:
    from gateway.platforms.base import Author

    stranger = Author(user_id="999", display_name="Mallory")
    assert await bot.adapter.say("@testbot hi", user=stranger, chat=GROUP, mentions_bot=True) == []
    assert await bot.scalar("SELECT count(*) FROM messages") == 0


async def test_rate_limit_refuses_politely_and_keeps_the_message(
    fake: FakeAnthropic, sqlite_url: str
) -> None:
    async with running_bot(fake, sqlite_url, limits={"user_messages_per_minute": 1}) as bot:
        assert [r.text for r in await bot.adapter.say("first")] == ["echo: first"]
        refused = await bot.adapter.say("second")
        assert len(refused) == 1
        assert "faster than I can answer" in refused[0].text
        assert "kept" in refused[0].text
        assert len(bot.replies()) == 1
        assert [r.text for r in await bot.window()][-1] == "second"


async def test_a_spent_budget_refuses_politely_and_keeps_the_message(
    fake: FakeAnthropic, sqlite_url: str
) -> None:
    async with running_bot(fake, sqlite_url, limits={"chat_daily_budget_usd": 1e-6}) as bot:
        first = await bot.adapter.say("first")  # no call fits: none is sent
        assert [r.text.split(" It resets")[0] for r in first] == [
            "This chat's daily budget ($0.00) is spent."
        ]
        refused = await bot.adapter.say("second")
        assert len(refused) == 1
        assert "daily budget" in refused[0].text
        assert "resets at 00:00 UTC" in refused[0].text
        assert fake.requests == []
        assert [r.text for r in await bot.window()][-1] == "second"


async def test_llm_outage_keeps_the_message_and_the_next_turn_includes_it(
    bot: Bot, fake: FakeAnthropic
) -> None:
    fake.script_fault("overloaded", times=-1)
    failed = await bot.adapter.say("are you there?")
    assert len(failed) == 1
    assert "overloaded" in failed[0].text
    assert "saved" in failed[0].text
    fake.clear_faults()
    ok = await bot.adapter.say("hello again")
    assert [r.text for r in ok] == ["echo: are you there? hello again"]
    sent = body_text(bot.replies()[-1].body)
    assert sent.index("are you there?") < sent.index("hello again")
    rows = await bot.window()
    assert [r.text for r in rows] == ["are you there?", "hello again", "echo: are you there? hello again"]


async def test_unsupported_media_gets_a_clear_reply_and_no_turn(bot: Bot) -> None:
    replies = await bot.adapter.say("", media=("other",))
    assert len(replies) == 1
    assert "I can't read this kind of message yet" in replies[0].text
    assert bot.replies() == []


async def test_typing_is_shown_while_a_turn_runs(bot: Bot) -> None:
    await bot.adapter.say("hi")
    assert [e.entered for e in bot.adapter.typing_events] == [True, False]

"""Reply and quote context: what the model is shown of the message a reply answers, and the ack reaction.

Through a real Gateway (memory adapter, real store on SQLite and Postgres, the fake Anthropic API).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from agent.tools.recall_types import RecallQuery
from gateway.intake.reply_context import SELF_AUTHOR, reply_source
from gateway.platforms.base import ReplyTo
from gateway.store.records import StoredMessage
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ALICE, BOB, group_chat

GROUP = group_chat("-100", "Team")
OTHER_GROUP = group_chat("-200", "Elsewhere")


def last_request(bot: Bot) -> str:
    return json.dumps(bot.replies()[-1].body["messages"], ensure_ascii=False)


def stored(text: str, *, role: str = "user", author: str | None = "Alice") -> StoredMessage:
    return StoredMessage(
        id=1,
        session_pk=1,
        chat_pk=1,
        seq=0,
        role=role,  # type: ignore[arg-type]
        content=text,
        text=text,
        author_id="42",
        author_name=author,
        platform_message_id="7",
        token_estimate=3,
        state="archived",
        pruned=False,
        needs_reply=False,
        replied=True,
        created_at=datetime.now(UTC),
    )


# -- which text and author the model sees (pure) -------------------------------------------------


def test_our_stored_copy_wins_over_the_platforms() -> None:
    reply = ReplyTo(platform_message_id="7", author_name="Alice A.", text="the plan is…")
    source = reply_source(reply, stored("[Alice] the plan is to ship on friday"))
    assert source is not None
    assert (source.author, source.text, source.quoted_part, source.from_store) == (
        "Alice",
        "the plan is to ship on friday",
        False,
        True,
    )


def test_without_a_stored_copy_the_platforms_copy_is_used() -> None:
    source = reply_source(ReplyTo(platform_message_id="7", author_name="Bob", text="lunch?"), None)
    assert source is not None
    assert (source.author, source.text, source.from_store) == ("Bob", "lunch?", False)


def test_a_partial_quote_replaces_the_text_and_says_so() -> None:
    reply = ReplyTo(platform_message_id="7", author_name="Alice", text="a b c", quote="the plan")
    source = reply_source(reply, stored("the plan is to ship on friday"))
    assert source is not None
    assert (source.text, source.quoted_part) == ("the plan", True)
    whole = reply_source(ReplyTo(platform_message_id="7", text="ship it", quote="ship it"), None)
    assert whole is not None
    assert not whole.quoted_part


def test_replies_to_the_bot_name_the_assistant() -> None:
    mine = reply_source(ReplyTo(platform_message_id="9", author_name="Gateway", text="42", to_bot=True), None)
    assert mine is not None
    assert mine.author == SELF_AUTHOR
    kept = reply_source(ReplyTo(platform_message_id="9", text="4"), stored("forty-two", role="assistant"))
    assert kept is not None
    assert (kept.author, kept.text) == (SELF_AUTHOR, "forty-two")


def test_nothing_to_show_is_no_context() -> None:
    assert reply_source(ReplyTo(platform_message_id="7", text="  "), None) is None
    assert reply_source(ReplyTo(platform_message_id=None, quote=""), None) is None


# -- through the gateway -------------------------------------------------------------------------


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def bot(fake: FakeAnthropic, db_url: str) -> AsyncIterator[Bot]:
    async with running_bot(fake, db_url) as running:
        yield running


async def test_a_reply_to_a_message_of_an_earlier_session_brings_back_the_stored_original(bot: Bot) -> None:
    await bot.adapter.say("the vault code is 7734 and the spare key is under the mat", message_id="m1")
    await bot.adapter.say("/new", user=ALICE)
    await bot.adapter.say(
        "what did I say here?",
        reply_to=ReplyTo(platform_message_id="m1", author_name="Alice", text="the vault code is…"),
    )
    sent = last_request(bot)
    original = "the vault code is 7734 and the spare key is under the mat"
    assert f'<reply_to author=\\"Alice\\">\\n{original}\\n</reply_to>' in sent


async def test_a_reply_never_brings_another_chats_message(bot: Bot) -> None:
    await bot.adapter.say("secret of the other group: plan B", user=BOB, chat=OTHER_GROUP, message_id="5")
    await bot.adapter.say(
        "@testbot what about this?",
        user=ALICE,
        chat=GROUP,
        mentions_bot=True,
        reply_to=ReplyTo(platform_message_id="5", author_name="Carol", text="see you at six"),
    )
    sent = last_request(bot)
    assert "plan B" not in sent
    assert '<reply_to author=\\"Carol\\">\\nsee you at six\\n</reply_to>' in sent


async def test_the_quote_is_stored_with_the_message_but_not_indexed_as_said(bot: Bot) -> None:
    await bot.adapter.say("the migration needs a maintenance window", message_id="m1")
    await bot.adapter.say(
        "how long?",
        reply_to=ReplyTo(platform_message_id="m1", author_name="Alice", quote="maintenance window"),
    )
    rows = await bot.window()
    question = next(r for r in rows if r.text == "how long?")
    assert isinstance(question.content, list)
    blocks = [b["text"] for b in question.content if b.get("type") == "text"]
    assert '<reply_to author="Alice" quoted="part">\nmaintenance window\n</reply_to>' in blocks
    assert blocks[-1] == "how long?"
    # Recall searches what the model no longer sees in full: end the session first.
    await bot.adapter.say("/new")
    chat_pk = await bot.chat_pk("telegram", "42")
    found = await bot.store.search_history(chat_pk, RecallQuery(text="maintenance window"))
    hits = {h.main.message_id for h in found.hits}
    assert next(r.id for r in rows if r.text.startswith("the migration")) in hits
    assert question.id not in hits


async def test_the_quote_is_bounded_with_a_clear_ellipsis(fake: FakeAnthropic, sqlite_url: str) -> None:
    async with running_bot(fake, sqlite_url, reply={"quote_max_chars": 100}) as bot:
        await bot.adapter.say(
            "more",
            reply_to=ReplyTo(platform_message_id="x", author_name="Bob", text="word " * 200),
        )
        sent = last_request(bot)
    assert "more characters not shown]" in sent
    assert "word " * 30 not in sent


async def test_ack_reaction_on_a_message_the_bot_answers(fake: FakeAnthropic, sqlite_url: str) -> None:
    async with running_bot(fake, sqlite_url, reply={"ack_reaction": "👀"}) as bot:
        await bot.adapter.say("hello", message_id="m1")
        await bot.adapter.say("just chatting", user=BOB, chat=GROUP, message_id="g1")
        assert [(c.chat_id, m, e) for c, m, e in bot.adapter.reactions] == [("42", "m1", "👀")]


async def test_no_reaction_by_default(bot: Bot) -> None:
    await bot.adapter.say("hello")
    assert bot.adapter.reactions == []


async def test_a_failed_reaction_is_logged_and_the_reply_still_goes_out(
    fake: FakeAnthropic, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_bot(fake, sqlite_url, reply={"ack_reaction": "👀"}) as bot:
        bot.adapter.fail_reactions = True
        with caplog.at_level(logging.WARNING):
            replies = await bot.adapter.say("hello", message_id="m1")
    assert [r.text for r in replies] == ["echo: hello"]
    assert any("could not react to m1" in r.getMessage() for r in caplog.records)

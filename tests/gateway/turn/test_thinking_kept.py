"""Turns with tool rounds on claude-sonnet-5-5 through a real Gateway (real AnthropicClient, the fake API):
every thinking block goes back while nothing before it changed, and only the ones an edit of the history
invalidated are left out: around compactions in the loop, before a turn and by `/compact`, a pin note, a
restart (blocks read back from the database), a refusal and a reply that ran out of room while thinking.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from itertools import pairwise
from typing import Any

import pytest

from tests.fakes.anthropic import FakeAnthropic, RecordedRequest
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ADMIN, ALICE, BOB, group_chat
from tests.support.thinking_trail import losses, produced, sent

SETTINGS: dict[str, Any] = {
    "model": "claude-sonnet-5-5",
    "model_context_length": 8_000,
    "compression": {"protect_last_n": 2},
    "prompt_caching": {"cache_ttl": "5m"},
    "reminders": {"enabled": False},  # the sizes below are tuned to the tools these tests offer
}
TIME = {"name": "current_time", "input": {}}
GROUP = group_chat("-300", "Planners")


def filler(tag: str, words: int) -> str:
    """About `words` tokens of plain text that starts with a recognisable tag."""
    return f"{tag}: " + " ".join(f"word{i % 50}" for i in range(words))


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


def tool_turn(fake: FakeAnthropic, rounds: int, answer: str) -> None:
    for r in range(rounds):
        fake.script_reply(tool_uses=[TIME], progress=f"Checking the clock ({r}).")
    fake.script_reply(answer)


def after_compactions(fake: FakeAnthropic) -> list[RecordedRequest]:
    """The reply requests after the newest summary call (a compaction of ours)."""
    newest = max(i for i, r in enumerate(fake.requests) if r.kind == "summary")
    return [r for r in fake.requests[newest + 1 :] if r.kind == "reply"]


def nothing_refused(fake: FakeAnthropic) -> None:
    assert {r.status for r in fake.requests} == {200}
    assert {c["outcome"] for r in fake.requests for c in r.thinking_checks} <= {"kept"}


async def compactions(bot: Bot) -> list[tuple[str, str]]:
    return [(r.trigger, r.outcome) for r in await bot.rows("SELECT trigger, outcome FROM compactions")]


def grew(records: Sequence[RecordedRequest]) -> bool:
    """Each request sent back more thinking than the one before (the turn's own, at least)."""
    counts = [len(sent(r)) for r in records]
    return all(a < b for a, b in pairwise(counts))


async def test_after_an_in_loop_compaction_the_turns_own_thinking_goes_back(
    fake: FakeAnthropic, sqlite_url: str
) -> None:
    async with running_bot(fake, sqlite_url, **SETTINGS) as bot:
        for i in range(3):
            fake.script_reply(f"Noted {i}.")
            await bot.adapter.say(filler(f"note{i}", 300))
        # a pasted log too big to be shown whole, then tool rounds: the session passes the compressor's
        # threshold during the turn and is compacted between two of its calls
        tool_turn(fake, 4, "Done.")
        replies = await bot.adapter.say(filler("pasted-log", 2_600))
        assert replies[-1].text.endswith("Done.")
        fake.script_reply("Next.")
        await bot.adapter.say("and then?")
        later = after_compactions(fake)
        assert losses(later) == []
        assert await compactions(bot) == [("agent", "ok")]
        assert len(later) == 6
        assert grew(later[1:])
        nothing_refused(fake)


async def test_a_compaction_before_the_turn_then_tool_rounds(fake: FakeAnthropic, sqlite_url: str) -> None:
    async with running_bot(fake, sqlite_url, **SETTINGS) as bot:
        fake.script_reply("Hi all.")
        await bot.adapter.say("@testbot hi all", chat=GROUP, mentions_bot=True)
        for i in range(22):  # chatter past 85% of the window, stored without a reply
            await bot.adapter.say(filler(f"chatter{i}", 300), user=ALICE if i % 2 else BOB, chat=GROUP)
        tool_turn(fake, 2, "Caught up.")
        await bot.adapter.say("@testbot what did I miss?", chat=GROUP, mentions_bot=True)
        fake.script_reply("Sure.")
        await bot.adapter.say("@testbot thanks", chat=GROUP, mentions_bot=True)
        assert await compactions(bot) == [("hygiene", "ok")]
        later = after_compactions(fake)
        assert len(later) == 4
        assert losses(later) == []
        assert grew(later)
        nothing_refused(fake)


async def test_compact_then_tool_rounds(fake: FakeAnthropic, sqlite_url: str) -> None:
    roomy = {**SETTINGS, "model_context_length": 16_000}  # no automatic compaction: only /compact
    async with running_bot(fake, sqlite_url, **roomy) as bot:
        fake.script_reply("Hello.")
        await bot.adapter.say("hello", user=ADMIN)
        for i in range(4):
            fake.script_reply(f"Noted {i}.")
            await bot.adapter.say(filler(f"note{i}", 300), user=ADMIN)
        assert (await bot.adapter.say("/compact", user=ADMIN))[0].text.startswith("Compaction ok")
        tool_turn(fake, 2, "It is noon.")
        await bot.adapter.say("what time is it?", user=ADMIN)
        fake.script_reply("Good.")
        await bot.adapter.say("good", user=ADMIN)
        assert await compactions(bot) == [("manual", "ok")]
        later = after_compactions(fake)
        assert len(later) == 4
        # the system prompt took the compaction note: every earlier block is bound to the old prompt
        assert sent(later[0]) == []
        assert losses(later) == []
        assert grew(later)
        nothing_refused(fake)


async def test_a_pin_note_leaves_every_thinking_block_in_place(fake: FakeAnthropic, sqlite_url: str) -> None:
    async with running_bot(fake, sqlite_url, **SETTINGS) as bot:
        tool_turn(fake, 1, "It is noon.")
        await bot.adapter.say("what time is it?")
        assert (await bot.adapter.say("/pin the launch is on Friday"))[0].text.startswith("Pinned as #1")
        tool_turn(fake, 2, "Friday it is.")
        await bot.adapter.say("when is the launch, and what time is it now?")
        pinned = bot.replies()[2]
        assert [m["role"] for m in pinned.body["messages"]].count("system") == 1
        assert losses(bot.replies()) == []
        assert grew(bot.replies())
        nothing_refused(fake)


async def test_thinking_read_back_from_the_database_after_a_restart_goes_back(
    fake: FakeAnthropic, db_url: str
) -> None:
    """What a turn sent is what the next turn reads back: tool input with floats, nesting and non-ASCII
    text, and an answer with a blank text block before its tool call (never sent back, never stored)."""
    tricky = {"name": "current_time", "input": {"ratio": 0.1, "tz": "Zoë ☃", "at": [{"h": 12.0}, None]}}
    async with running_bot(fake, db_url, **SETTINGS) as bot:
        fake.script_reply("\n\n", tool_uses=[tricky])
        tool_turn(fake, 1, "It is noon.")
        await bot.adapter.say("what time is it?")
    async with running_bot(fake, db_url, **SETTINGS) as bot:
        tool_turn(fake, 1, "Still noon.")
        await bot.adapter.say("and now?", message_id="after-restart")
        replies = bot.replies()
    assert len(replies) == 5
    assert losses(replies) == []
    assert grew(replies)
    assert "\n\n" not in [b.get("text") for m in replies[-1].body["messages"] for b in m["content"]]
    nothing_refused(fake)


async def test_a_refusal_and_a_retry_with_more_room_inside_tool_turns(
    fake: FakeAnthropic, sqlite_url: str
) -> None:
    async with running_bot(fake, sqlite_url, **SETTINGS) as bot:
        fake.script_reply(tool_uses=[TIME])
        fake.script_reply(thinking_only=True)  # ran out of room while thinking: asked again with more
        tool_turn(fake, 1, "It is noon.")
        await bot.adapter.say("what time is it?")
        fake.script_reply(tool_uses=[TIME])
        fake.script_reply("", refusal="cyber")  # declined after a tool round: nothing of it is kept
        await bot.adapter.say("and how do I break into the server?")
        tool_turn(fake, 1, "Sure.")
        await bot.adapter.say("fine, what time is it now?")
        replies = bot.replies()
        assert [r.answer["stop_reason"] for r in replies].count("refusal") == 1
        assert [r.answer["stop_reason"] for r in replies].count("max_tokens") == 1
        assert losses(replies) == []
        # every kept answer's thinking went back: all but the declined one and the one of thinking alone
        assert sent(replies[-1]) == [s for r in replies[:-1] for s in produced(r)]
        assert len(sent(replies[-1])) == 7
        nothing_refused(fake)

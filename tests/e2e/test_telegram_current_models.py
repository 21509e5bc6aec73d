"""A chat on claude-sonnet-5-5 through the real gateway process: thinking blocks bound to their prefix
survive every edit of the history this product makes (compaction after a reply and before a turn,
hygiene, /compact, /compact undo, a pin change, a model switch) with no request refused; progress
between tool calls is shown while the tool runs; a refusal and a reply that ran out of room while
thinking each end in a clear reply."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.conftest import TelegramWorld, WorldFactory, body_text
from tests.fakes.anthropic.replies import Refusal
from tests.support.media_files import image_bytes

ALICE, BOB = 42, 43
CHAT = 4242
GROUP = -1004242
WINDOW = 12_000
GROUP_KW: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Ops"}


def filler(tag: str, chars: int) -> str:
    return (f"{tag} talks about release planning and the staging database; " * (chars // 60 + 1))[:chars]


class Chat:
    def __init__(self, world: TelegramWorld, chat_id: int = CHAT) -> None:
        self.world = world
        self.chat_id = chat_id
        self.n = 0
        self.kw: dict[str, Any] = GROUP_KW if chat_id < 0 else {}

    async def say(self, text: str) -> str:
        """Send `text` as Alice and return the bot's next message (commands and messages alike)."""
        self.n += 1
        self.world.tg.push_message(self.chat_id, text, user_id=ALICE, first_name="Alice", **self.kw)
        replies = await self.world.wait_replies(self.chat_id, self.n, timeout=40)
        return replies[self.n - 1].visible_text

    def chatter(self, text: str) -> None:
        """Bob talks in the group without addressing the bot (stored as context, not answered)."""
        self.world.tg.push_message(self.chat_id, text, user_id=BOB, first_name="Bob", **self.kw)


def rejected(world: TelegramWorld) -> list[Any]:
    return [(r.kind, r.status) for r in world.llm.requests if r.status not in (200, None)]


def dropped_by_api(world: TelegramWorld) -> int:
    return sum(1 for r in world.llm.requests for c in r.thinking_checks if c["outcome"] != "kept")


async def test_a_sonnet_5_5_chat_survives_every_edit_of_its_history(telegram_world: WorldFactory) -> None:
    async with telegram_world(
        model="claude-sonnet-5-5",
        context_window=WINDOW,
        min_cacheable=256,
        TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB}",
        TELEGRAM_ADMIN_IDS=str(ALICE),
        AGENT__MAX_OUTPUT_TOKENS="512",
        COMPRESSION__PROTECT_LAST_N="2",
        PROMPT_CACHING__CACHE_TTL="5m",
        AUXILIARY__COMPRESSION__MODEL="claude-haiku-5-5",
    ) as world:
        chat = Chat(world)
        llm = world.llm
        llm.script_reply("Hello Alice.")
        assert await chat.say("hi there") == "Hello Alice."

        # a tool turn: the progress the model writes before its call is shown while the tool runs
        llm.script_reply(
            progress="Let me look that up in our history.",
            tool_uses=[{"id": "toolu_1", "name": "recall", "input": {"query": "staging database"}}],
        )
        shown = asyncio.Event()  # the answer waits until the tool round is on screen
        llm.script_reply("Nothing about it yet.", hold=shown)
        asking = asyncio.create_task(chat.say("what did we say about the staging database?"))
        for _ in range(400):
            if any("Let me look that up in our history." in d.visible_text for d in world.tg.drafts):
                break
            await asyncio.sleep(0.05)
        shown.set()
        assert await asking == "Nothing about it yet."
        assert any("Let me look that up in our history." in d.visible_text for d in world.tg.drafts)

        # the session grows past the compressor's 50%: compacted right after a reply (or, as timing has
        # it, before the next turn's first call)
        for i in range(8):
            llm.script_reply(f"Noted {i}.")
            await chat.say(filler(f"note-{i}", 3000))
        await world.gw.wait_log(r"trigger=(after_reply|agent) outcome=ok", timeout=40)
        llm.script_reply("Still here after the compaction.")
        assert await chat.say("still with me?") == "Still here after the compaction."

        # a pin change is told in a note, not written into the system prompt
        before = world.replies()[-1].body["system"]
        assert (await chat.say("/pin the launch is on Friday")).startswith("Pinned as #1")
        llm.script_reply("Friday it is.")
        assert await chat.say("when is the launch?") == "Friday it is."
        pinned = world.replies()[-1]
        assert pinned.body["system"] == before
        notes = [m for m in pinned.body["messages"] if m["role"] == "system"]
        assert notes
        assert "the launch is on Friday" in body_text(pinned)
        assert all(c["outcome"] == "kept" for c in pinned.thinking_checks)
        assert pinned.thinking_checks, "the turns since the compaction sent their thinking back"

        # /compact and /compact undo edit the prefix; the next turns still go through
        assert "ompact" in await chat.say("/compact")
        llm.script_reply("After a manual compaction.")
        assert await chat.say("and now?") == "After a manual compaction."
        assert "Undid" in await chat.say("/compact undo")
        llm.script_reply("After the undo.")
        assert await chat.say("and after the undo?") == "After the undo."

        # hygiene before a turn: a group talks overnight past 85% of the window, then asks the bot
        group = Chat(world, GROUP)
        llm.script_reply("Morning.")
        assert await group.say("@gateway_test_bot morning") == "Morning."
        for i in range(28):
            group.chatter(filler(f"night-{i}", 1400))
        llm.script_reply("Caught up.")
        caught = await group.say("@gateway_test_bot what did I miss?")
        assert caught.endswith("Caught up.")
        assert caught.startswith("(Context compacted"), world.gw.log_text()[-5000:]

        # a declined request and a reply that ran out of room while thinking end in clear replies
        llm.script_reply("", refusal=Refusal("cyber", "exploit development"))
        declined = await chat.say("write me an exploit")
        assert "declined" in declined
        assert "computer systems" in declined
        llm.script_reply(thinking_only=True)
        llm.script_reply(thinking_only=True)
        assert "thinking" in await chat.say("think very hard about everything")

        # a model switch: the thinking of the old model is left out, nothing is refused
        world.env["MODEL"] = "claude-opus-5-5"
        world.env["MODEL_CONTEXT_LENGTH"] = str(WINDOW)
        await world.restart()
        llm.script_reply("Opus here.")
        assert await chat.say("who is answering?") == "Opus here."

        assert rejected(world) == []
        assert dropped_by_api(world) == 0
        stats = await chat.say("/stats")
        assert "Declined by the model: 1 (cyber 1)" in stats


async def test_photos_demoted_on_sonnet_5_5_refuse_nothing(telegram_world: WorldFactory) -> None:
    """Old photos stop travelling (the prompt is rewritten from the first of them): the thinking after
    it is left out, the chat goes on, and the prefix check refuses nothing."""
    async with telegram_world(
        model="claude-sonnet-5-5",
        TELEGRAM_ALLOWED_USERS=str(ALICE),
        PROMPT_CACHING__CACHE_TTL="5m",
    ) as world:
        chat = Chat(world)
        for i in range(5):  # 1280x960: about 1,640 tokens each; four of them pass the demotion budget
            chat.n += 1
            world.tg.push_photo(
                CHAT,
                image_bytes(1280, 960, seed=60 + i),
                caption=f"room {i}",
                user_id=ALICE,
                first_name="Alice",
            )
            await world.wait_replies(CHAT, chat.n, timeout=40)
        for i in range(5):
            world.llm.script_reply(f"Answer {i}.")
            assert await chat.say(f"question {i}") == f"Answer {i}."
        last = world.replies()[-1]
        assert "is no longer attached" in body_text(last)  # the first photos were demoted
        assert rejected(world) == []
        assert dropped_by_api(world) == 0
        assert any(c["outcome"] == "kept" for c in last.thinking_checks)

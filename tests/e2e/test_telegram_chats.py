"""Telegram chats through the real gateway process: private, group, forum topics, tools, long replies.

One gateway per database runs every scenario in its own chat, so the file stays fast.
"""

from __future__ import annotations

import html
import re
from typing import Any

from tests.e2e.conftest import BOT_USERNAME, TelegramWorld, WorldFactory, body_text, tool_results
from tests.fakes.telegram.html_parser import utf16_len

ALICE, BOB, CAROL = 42, 43, 44
PRIVATE = 1042
GROUP = -100500
FORUM = -100600


async def test_telegram_chats(telegram_world: WorldFactory) -> None:
    async with telegram_world(TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB},{CAROL}") as world:
        assert {c["command"] for c in world.tg.commands} == {
            "help",
            "new",
            "stats",
            "compact",
            "pin",
            "pins",
            "unpin",
        }
        assert all(c["description"] for c in world.tg.commands)
        await _private_chat_html_and_typing(world)
        await _group_answers_only_when_addressed(world)
        await _forum_topics_are_separate_sessions(world)
        await _tool_round_trip(world)
        await _long_reply_is_split(world)


async def _private_chat_html_and_typing(world: TelegramWorld) -> None:
    world.llm.script_reply("Here is **bold** and `code` for you.", delay=1.0)
    world.tg.push_message(PRIVATE, "hello there", user_id=ALICE)
    (reply,) = await world.wait_replies(PRIVATE, 1)
    assert reply.parse_mode == "HTML"
    assert "<b>bold</b>" in reply.text
    assert "<code>code</code>" in reply.text
    assert reply.visible_text == "Here is bold and code for you."
    # The typing action went out for this chat before the reply, while the model was still answering.
    calls = [(name.lower(), str(params.get("chat_id"))) for name, params in world.tg.requests]
    assert ("sendchataction", str(PRIVATE)) in calls, calls
    assert calls.index(("sendchataction", str(PRIVATE))) < calls.index(("sendmessage", str(PRIVATE)))
    assert any(a["chat_id"] == PRIVATE and a["action"] == "typing" for a in world.tg.actions)
    assert "hello there" in body_text(world.replies()[-1])


async def _group_answers_only_when_addressed(world: TelegramWorld) -> None:
    group: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Team"}
    world.tg.push_message(GROUP, "morning all, deploy is at 5pm", user_id=BOB, first_name="Bob", **group)
    world.tg.push_message(GROUP, "lunch at noon?", user_id=CAROL, first_name="Carol", **group)
    world.tg.push_message(
        GROUP, f"@{BOT_USERNAME} when is the deploy?", user_id=ALICE, first_name="Alice", **group
    )
    (first,) = await world.wait_replies(GROUP, 1)
    assert "when is the deploy?" in first.visible_text
    request = body_text(world.replies()[-1])
    assert "[Bob] morning all, deploy is at 5pm" in request
    assert "[Carol] lunch at noon?" in request
    assert f"[Alice] @{BOT_USERNAME} when is the deploy?" in request

    world.tg.push_message(GROUP, "nobody asked the bot this", user_id=BOB, first_name="Bob", **group)
    world.tg.push_message(GROUP, "thanks!", user_id=CAROL, first_name="Carol", reply_to_bot=True, **group)
    replies = await world.wait_replies(GROUP, 2)
    assert "thanks!" in replies[1].visible_text
    assert "[Bob] nobody asked the bot this" in body_text(world.replies()[-1])
    # Two addressed messages, two answers: the other three group messages were only stored.
    assert len(world.sent_to(GROUP)) == 2


async def _forum_topics_are_separate_sessions(world: TelegramWorld) -> None:
    forum: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Forum", "is_topic_message": True}
    world.tg.push_message(
        FORUM, f"@{BOT_USERNAME} remember code word ALPHA-7", user_id=ALICE, message_thread_id=11, **forum
    )
    (in_11,) = await world.wait_replies(FORUM, 1, thread_id=11)
    world.tg.push_message(
        FORUM, f"@{BOT_USERNAME} what is the code word?", user_id=BOB, message_thread_id=22, **forum
    )
    (in_22,) = await world.wait_replies(FORUM, 1, thread_id=22)
    assert in_11.message_thread_id == 11
    assert in_22.message_thread_id == 22
    topic_22 = body_text(world.replies()[-1])
    assert "what is the code word?" in topic_22
    assert "ALPHA-7" not in topic_22
    assert "deploy" not in topic_22  # nor does the group's conversation leak in


async def _tool_round_trip(world: TelegramWorld) -> None:
    world.llm.script_reply(tool_uses=[{"id": "toolu_clock01", "name": "current_time", "input": {}}])
    world.llm.script_reply("It is tea time.")
    before = len(world.replies())
    world.tg.push_message(PRIVATE, "what time is it?", user_id=ALICE)
    replies = await world.wait_replies(PRIVATE, 2)
    assert replies[1].visible_text == "It is tea time."
    first, second = world.replies()[before:]
    assert first.body["tools"]
    assert "current_time" in {t["name"] for t in first.body["tools"]}
    (result,) = tool_results(second)
    assert result["tool_use_id"] == "toolu_clock01"
    assert not result.get("is_error")
    assert re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", json_text(result["content"]))


def json_text(content: object) -> str:
    if isinstance(content, str):
        return content
    assert isinstance(content, list)
    return "".join(str(b.get("text", "")) for b in content)


CODE_LINES = [f"    value_{i:03d} = compute({i}, 'x' * {i % 7})" for i in range(160)]


def _long_reply() -> str:
    prose = "This paragraph explains the next step in some detail. " * 40
    code = "```python\ndef build():\n" + "\n".join(CODE_LINES) + "\n    return values\n```"
    text = f"{prose}\n\n{code}\n\n{prose}"
    assert len(text) >= 10_000
    return text


async def _long_reply_is_split(world: TelegramWorld) -> None:
    already = len(world.sent_to(PRIVATE))
    world.llm.script_reply(_long_reply())
    world.tg.push_message(PRIVATE, "show me the whole build function", user_id=ALICE)
    await world.tg.wait_for(
        lambda: sum(s.visible_text.count("This paragraph") for s in world.sent_to(PRIVATE)[already:]) == 80,
        timeout=20,
    )
    chunks = world.sent_to(PRIVATE)[already:]
    assert len(chunks) >= 3
    for chunk in chunks:
        assert chunk.parse_mode == "HTML"
        assert utf16_len(chunk.visible_text) <= 4096
        assert chunk.text.count("<pre>") == chunk.text.count("</pre>")
    # Every code line arrived, in order, inside a code block (a broken fence would leave it as prose).
    in_code = [
        line
        for chunk in chunks
        for block in re.findall(r"<pre>(.*?)</pre>", chunk.text, re.DOTALL)
        for line in block.split("\n")
    ]
    assert [_unescape(line) for line in in_code if "value_" in line] == CODE_LINES
    assert chunks[0].reply_to is not None
    assert all(c.reply_to is None for c in chunks[1:])


def _unescape(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))

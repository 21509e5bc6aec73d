"""Replies that know what they answer, through the real gateway process, python-telegram-bot and the fakes.

A reply to a message that `/compact` archived brings back our stored original (even where Telegram's copy
is shortened); a partial quote carries only the quoted part; a reply in another chat never brings this
chat's text; the stored context renders byte-identically on the next request (the cached prefix holds);
and with `REPLY__ACK_REACTION` the bot reacts to each message it is going to answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.e2e.conftest import BOT_USERNAME, TelegramWorld, WorldFactory
from tests.e2e.test_telegram_compaction import filler

ALICE, BOB = 42, 43
GROUP = -100777
SECRET = "the vault code is 7734 and the spare key is in the blue flowerpot by the garage door"


def _without_markers(value: Any) -> Any:
    """A request's messages without cache_control (markers move forward as the conversation grows)."""
    if isinstance(value, dict):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


def _last_user_message(world: TelegramWorld) -> str:
    messages = world.replies()[-1].body["messages"]
    return json.dumps([m for m in messages if m["role"] == "user"][-1], ensure_ascii=False)


async def _say(world: TelegramWorld, text: str, n: int, **kwargs: Any) -> str:
    chat = kwargs.pop("chat", ALICE)
    world.tg.push_message(chat, text, **kwargs)
    return (await world.wait_replies(chat, n, timeout=30))[n - 1].visible_text


async def test_replies_carry_what_they_answer(telegram_world: WorldFactory) -> None:
    async with telegram_world(
        context_window=6000,
        TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB}",
        TELEGRAM_ADMIN_IDS=str(ALICE),
        AGENT__MAX_OUTPUT_TOKENS="512",
        COMPRESSION__PROTECT_LAST_N="1",
        PROMPT_CACHING__CACHE_TTL="5m",
        REPLY__ACK_REACTION="👀",
    ) as world:
        secret_id = await _archived_original_comes_back(world)
        await _a_partial_quote_carries_only_its_part(world, secret_id)
        await _another_chat_never_gets_this_chats_text(world)
        await _each_answered_message_got_the_reaction(world)


async def _archived_original_comes_back(world: TelegramWorld) -> int:
    n = 1
    await _say(world, "hello", n, user_id=ALICE)
    n += 1
    secret = world.tg.push_message(ALICE, SECRET, user_id=ALICE)["message"]["message_id"]
    await world.wait_replies(ALICE, n, timeout=30)
    for i in range(4):
        n += 1
        await _say(world, filler(f"topic-{i}", 800), n, user_id=ALICE)
    n += 1
    compacted = await _say(world, "/compact", n, user_id=ALICE)
    assert re.fullmatch(r"Compaction ok: \d+→\d+ messages; the context went from .*", compacted), compacted

    # Telegram's copy of the replied-to message is shortened; the stored original is whole.
    n += 1
    await _say(
        world,
        "what was the code again?",
        n,
        user_id=ALICE,
        reply_to_message_id=secret,
        reply_copy={"text": "the vault code is…"},
    )
    request = json.dumps(world.replies()[-1].body["messages"], ensure_ascii=False)
    assert f'<reply_to author=\\"Alice\\">\\n{SECRET}\\n</reply_to>' in request
    assert request.count(SECRET) == 1, "the original is archived: only the reply context carries it"
    return int(secret)


async def _a_partial_quote_carries_only_its_part(world: TelegramWorld, secret_id: int) -> None:
    before = world.replies()[-1]
    n = len(world.sent_to(ALICE)) + 1
    await _say(
        world, "and where is that?", n, user_id=ALICE, reply_to_message_id=secret_id, quote="blue flowerpot"
    )
    newest = _last_user_message(world)
    assert '<reply_to author=\\"Alice\\" quoted=\\"part\\">\\nblue flowerpot\\n</reply_to>' in newest
    assert "7734" not in newest
    # Cache stability: the earlier request's conversation is an unchanged prefix of this one.
    earlier = _without_markers(before.body["messages"])
    now = _without_markers(world.replies()[-1].body["messages"])
    assert now[: len(earlier)] == earlier
    assert before.body["system"] == world.replies()[-1].body["system"]


async def _another_chat_never_gets_this_chats_text(world: TelegramWorld) -> None:
    # A message the bot never received (privacy mode) with the same id as Alice's secret, in another chat.
    secret_id = next(mid for (chat, mid), m in world.tg.messages.items() if m.get("text") == SECRET)
    world.tg.messages[(GROUP, secret_id)] = {
        "message_id": secret_id,
        "date": 0,
        "chat": {"id": GROUP, "type": "supergroup", "title": "Ops"},
        "from": {"id": 77, "is_bot": False, "first_name": "Carol"},
        "text": "see you at six",
    }
    group = {"chat": GROUP, "chat_type": "supergroup", "chat_title": "Ops", "first_name": "Bob"}
    await _say(
        world, f"@{BOT_USERNAME} what did she mean?", 1, user_id=BOB, reply_to_message_id=secret_id, **group
    )
    newest = _last_user_message(world)
    assert '<reply_to author=\\"Carol\\">\\nsee you at six\\n</reply_to>' in newest
    assert "7734" not in json.dumps(world.replies()[-1].body, ensure_ascii=False)


async def _each_answered_message_got_the_reaction(world: TelegramWorld) -> None:
    answered = [
        m["message_id"]
        for (chat, _), m in world.tg.messages.items()
        if chat == ALICE and m.get("from", {}).get("id") == ALICE and not m.get("text", "").startswith("/")
    ]
    reacted = {(r["chat_id"], r["message_id"]) for r in world.tg.reactions}
    assert {(ALICE, mid) for mid in answered} <= reacted
    assert all(r["reaction"] == [{"type": "emoji", "emoji": "👀"}] for r in world.tg.reactions)
    assert not any(chat == ALICE and mid not in answered for chat, mid in reacted), "commands get no reaction"

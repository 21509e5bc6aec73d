"""What a Telegram user sees when things go wrong: an LLM outage (told, nothing lost) and a gateway
restart in the middle of a conversation (it continues; nothing is answered twice).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

from tests.e2e.conftest import TelegramWorld, WorldFactory, body_text

ALICE = 42
CHAT = 3042


async def test_outage_then_restart(telegram_world: WorldFactory) -> None:
    async with telegram_world(TELEGRAM_ALLOWED_USERS=str(ALICE)) as world:
        await _llm_outage_loses_nothing(world)
        await _restart_mid_conversation(world)
        _each_message_answered_once(world)


async def _say(world: TelegramWorld, text: str) -> str:
    n = len(world.sent_to(CHAT)) + 1
    world.tg.push_message(CHAT, text, user_id=ALICE)
    return (await world.wait_replies(CHAT, n, timeout=30))[-1].visible_text


async def _llm_outage_loses_nothing(world: TelegramWorld) -> None:
    assert await _say(world, "hello") == "echo: hello"
    world.llm.script_fault("overloaded", times=-1, retry_after=0)
    told = await _say(world, "please remember the number 4711")
    assert "overloaded" in told, told
    assert "Your message is saved" in told, told
    assert not [r for r in world.replies() if "4711" in body_text(r)]  # the model never answered it

    world.llm.clear_faults()
    back = await _say(world, "are you back?")
    # The kept message and the new one reach the model together (the fake echoes the newest user turn).
    assert back == "echo: please remember the number 4711 are you back?"
    recovered = body_text(world.replies()[-1])
    assert "please remember the number 4711" in recovered
    assert "hello" in recovered


async def _restart_mid_conversation(world: TelegramWorld) -> None:
    world.llm.script_reply("Slowly: Zed is a fine name.", delay=2.0)
    n = len(world.sent_to(CHAT)) + 1
    world.tg.push_message(CHAT, "my name is Zed, answer slowly", user_id=ALICE)
    await _until(lambda: any("answer slowly" in body_text(r) for r in world.llm.requests if r.body))
    # SIGTERM while the model is still answering: the running turn finishes and its reply is delivered.
    await world.restart()
    replies = await world.wait_replies(CHAT, n, timeout=10)
    assert replies[-1].visible_text == "Slowly: Zed is a fine name."

    after = await _say(world, "what is my name?")
    assert after == "echo: what is my name?"
    request = body_text(world.replies()[-1])
    for earlier in ("hello", "4711", "my name is Zed", "Slowly: Zed is a fine name."):
        assert earlier in request, earlier


def _each_message_answered_once(world: TelegramWorld) -> None:
    answered = Counter(s.reply_to for s in world.sent_to(CHAT))
    # Five messages were sent to the bot and each got exactly one reply, across the outage and restart.
    assert len(answered) == 5 == len(world.sent_to(CHAT)), answered


async def _until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 - the fake's request log has no event to wait on
            await asyncio.sleep(0.05)

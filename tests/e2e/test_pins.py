"""Pinned facts through the real gateway process: Telegram (kept through /compact, /new and a restart,
never shown in another chat) and Discord (a DM pin reaches the model)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.pins import HEADER
from tests.e2e.conftest import WorldFactory
from tests.e2e.test_discord_chat import ANN, DM_ANN, discord_world

ALICE, BOB = 42, 43
PRIVATE, OTHER = 5042, 5043
FACT = "The office alarm code is 4471-KQ; the spare key is with Dana."


def system_of(body: dict[str, object]) -> str:
    return json.dumps(body.get("system"), ensure_ascii=False)


async def test_telegram_pins_survive_compaction_new_and_a_restart(telegram_world: WorldFactory) -> None:
    async with telegram_world(
        context_window=20_000,
        TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB}",
        TELEGRAM_ADMIN_IDS=str(ALICE),
        COMPRESSION__PROTECT_LAST_N="2",
    ) as world:
        n = 0

        async def say(text: str, chat: int = PRIVATE, user: int = ALICE) -> str:
            nonlocal n
            before = len(world.sent_to(chat))
            world.tg.push_message(chat, text, user_id=user, first_name="Alice" if user == ALICE else "Bob")
            replies = await world.wait_replies(chat, before + 1, timeout=30)
            return replies[-1].visible_text

        assert (await say(f"/pin {FACT}")).startswith("Pinned as #1")
        for i in range(6):
            await say(f"note {i}: " + " ".join(f"detail{j}" for j in range(200)))
        assert FACT in system_of(world.replies()[-1].body)
        assert (await say("/compact")).startswith("Compaction ok")
        await say("after compacting")
        assert FACT in system_of(world.replies()[-1].body)

        await world.restart()
        await say("after the restart")
        assert FACT in system_of(world.replies()[-1].body)
        await say("/new")
        await say("a fresh conversation")
        assert FACT in system_of(world.replies()[-1].body)
        assert "1. " + FACT in await say("/pins")

        await say("hello from Bob", chat=OTHER, user=BOB)
        assert HEADER not in system_of(world.replies()[-1].body)
        assert (await say("/pins", chat=OTHER, user=BOB)).startswith("No pinned facts")


async def test_discord_dm_pin_reaches_the_model(tmp_path: Path, db_url: str) -> None:
    async with discord_world(tmp_path, db_url) as w:
        pinned = await w.reply_to(
            lambda: w.dc.push_message(DM_ANN, f"/pin {FACT}", author_id=ANN, username="ann")
        )
        assert pinned.content.startswith("Pinned as #1"), pinned.content
        await w.reply_to(
            lambda: w.dc.push_message(DM_ANN, "what is the alarm code?", author_id=ANN, username="ann")
        )
        replies = [r for r in w.llm.requests if r.kind == "reply"]
        assert FACT in system_of(replies[-1].body)

"""Compaction through the real gateway process on a small (6,000-token) window: the compressor at 50%
right after a reply and before a turn's first call, hygiene at 85% before a turn, and the admin commands
/compact, /compact undo and /stats (refused for non-admins, changing nothing).
"""

from __future__ import annotations

import re
from typing import Any

from tests.e2e.conftest import BOT_USERNAME, TelegramWorld, WorldFactory, body_text

ALICE, BOB = 42, 43  # Alice is the admin
HYGIENE_GROUP = -100800
PRIVATE = 2042
ADMIN_GROUP = -100900
WINDOW = 6000
REFUSAL = "is for admins of this bot only. Nothing was changed."


def filler(tag: str, chars: int) -> str:
    """Distinct, searchable prose of about `chars` characters."""
    words = (f"{tag} talks about release planning and the staging database; " * (chars // 60 + 1))[:chars]
    return words.strip()


async def test_telegram_compaction(telegram_world: WorldFactory) -> None:
    async with telegram_world(
        context_window=WINDOW,
        TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB}",
        TELEGRAM_ADMIN_IDS=str(ALICE),
        AGENT__MAX_OUTPUT_TOKENS="512",
        COMPRESSION__PROTECT_LAST_N="1",
        # A fixed TTL keeps the cache warm between these quick turns, so the cache-aware compaction
        # (which runs before a turn when no cache is live) does not stand in for the layers tested. The
        # small window's first prompts are under the model's real minimum cacheable length, where the
        # API caches nothing (and the gateway then knows no entry is live): the fake caches them.
        min_cacheable=256,
        PROMPT_CACHING__CACHE_TTL="5m",
    ) as world:
        await _hygiene_fires_before_the_turn(world)
        await _compressor_fires_within_a_turn(world)
        await _admin_commands(world)


async def _say(world: TelegramWorld, chat: int, text: str, n: int, *, user: int = ALICE) -> str:
    """Send `text` and return the visible text of the chat's `n`-th bot message."""
    name = {ALICE: "Alice", BOB: "Bob"}[user]
    group: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Ops"} if chat < 0 else {}
    world.tg.push_message(chat, text, user_id=user, first_name=name, **group)
    replies = await world.wait_replies(chat, n, timeout=30)
    return replies[n - 1].visible_text


async def _hygiene_fires_before_the_turn(world: TelegramWorld) -> None:
    chat = HYGIENE_GROUP
    group: dict[str, Any] = {"chat_type": "supergroup", "chat_title": "Ops"}
    await _say(world, chat, f"@{BOT_USERNAME} hi team", 1)
    for i in range(12):
        world.tg.push_message(chat, filler(f"early-{i}", 700), user_id=BOB, first_name="Bob", **group)
    await _say(world, chat, f"@{BOT_USERNAME} anything new?", 2)
    # the chatter before this question would push the next request past 50%: compacted once it is out
    await world.gw.wait_log(r"trigger=after_reply outcome=ok")
    # The reply above left the session compacted (the chatter before it would have pushed the next
    # request past the compressor's 50%). The group then talks overnight without addressing the bot:
    # about 5,300 estimated tokens, which cross 85% of the window; the API would reject it whole.
    for i in range(17):
        world.tg.push_message(chat, filler(f"night-{i}", 1400), user_id=BOB, first_name="Bob", **group)
    requests_before = len(world.llm.requests)
    world.llm.script_reply("Mostly release planning.")
    reply = await _say(world, chat, f"@{BOT_USERNAME} what did I miss?", 3)

    assert re.fullmatch(
        r"\(Context compacted: \d+→\d+ messages, [\d,]+→[\d,]+ tokens\.\)\n\nMostly release planning\.", reply
    ), reply
    turn = world.llm.requests[requests_before:]
    assert [r.kind for r in turn] == ["summary", "reply"]
    answered = body_text(turn[1])
    assert "night-16" in answered
    assert "what did I miss?" in answered
    # The middle of the conversation was summarized twice: the early chatter after the second reply,
    # the night by hygiene (updating that summary); the reply request has the summary (which names
    # "early-3") instead of the messages themselves.
    first_summary = next(r for r in world.llm.requests if r.kind == "summary")
    assert filler("early-3", 700) in body_text(first_summary)
    assert filler("night-3", 1400) in body_text(turn[0])
    assert filler("early-3", 700) not in answered
    assert "early-3" in answered

    stats = await _say(world, chat, "/stats", 4)
    assert "Compactions: after_reply ok 1, hygiene ok 1" in stats, stats
    assert re.search(r"Last compaction: hygiene ok .* \d+→\d+ messages", stats), stats
    assert re.search(r"Messages: \d+ active, [1-9]\d* archived", stats), stats


async def _compressor_fires_within_a_turn(world: TelegramWorld) -> None:
    chat = PRIVATE
    await _say(world, chat, "first question", 1)
    await _say(world, chat, filler("middle", 5000), 2)
    # the next request would pass 50%, but there is no middle yet (the newest ask is always kept)
    await world.gw.wait_log(r"trigger=after_reply outcome=aborted .*nothing to compact")
    world.llm.script_reply(tool_uses=[{"id": "toolu_grow01", "name": "current_time", "input": {}}])
    world.llm.script_reply("Done after compaction.")
    requests_before = len(world.llm.requests)
    reply = await _say(world, chat, filler("newest", 4000), 3)

    assert reply.startswith("(Context compacted:"), reply
    assert reply.endswith("Done after compaction.")
    turn = world.llm.requests[requests_before:]
    # the compressor fires before the turn's first call, not only after a tool round
    assert [r.kind for r in turn] == ["summary", "reply", "reply"], [r.kind for r in turn]
    assert filler("middle", 5000) in body_text(turn[0])
    for request in turn[1:]:
        assert request.usage is not None
        prompt = (
            request.usage["input_tokens"]
            + request.usage["cache_read_input_tokens"]
            + request.usage["cache_creation_input_tokens"]
        )
        assert prompt < WINDOW // 2
    final = body_text(turn[2])
    assert "toolu_grow01" in final
    assert filler("newest", 4000) in final
    assert filler("middle", 5000) not in final

    stats = await _say(world, chat, "/stats", 4)
    assert "Compactions: after_reply aborted 1, agent ok 1" in stats, stats


async def _admin_commands(world: TelegramWorld) -> None:
    chat = ADMIN_GROUP
    n = 0
    for i, user in enumerate([ALICE, BOB, ALICE, BOB]):
        n += 1
        await _say(world, chat, f"@{BOT_USERNAME} " + filler(f"topic-{i}", 800), n, user=user)

    before = await _say(world, chat, "/stats", n + 1)
    n += 1
    assert "Compactions: none yet" in before
    assert "Messages: 8 active, 0 archived" in before, before

    for command in ("/compact", f"/stats@{BOT_USERNAME}", "/compact undo"):
        n += 1
        refused = await _say(world, chat, command, n, user=BOB)
        assert refused.endswith(REFUSAL), refused
    n += 1
    unchanged = await _say(world, chat, "/stats", n)
    assert _counts(unchanged) == _counts(before), unchanged

    n += 1
    compacted = await _say(world, chat, f"/compact@{BOT_USERNAME} keep the topics", n)
    match = re.fullmatch(
        r"Compaction ok: 8→(\d+) messages; the context went from ([\d,]+) to ([\d,]+) tokens "
        r"\(as /stats counts it\) in [\d.]+ s\.",
        compacted,
    )
    assert match, compacted
    assert int(match.group(1)) < 8
    assert int(match.group(3).replace(",", "")) < int(match.group(2).replace(",", ""))
    summary_request = [r for r in world.llm.requests if r.kind == "summary"][-1]
    assert "keep the topics" in body_text(summary_request)

    n += 1
    after = await _say(world, chat, "/stats", n)
    assert "Compactions: manual ok 1" in after
    assert re.search(r"Messages: \d+ active, [1-9]\d* archived", after), after

    n += 1
    assert (await _say(world, chat, "/compact undo", n, user=BOB)).endswith(REFUSAL)
    n += 1
    assert "(undone)" not in await _say(world, chat, "/stats", n)

    n += 1
    undone = await _say(world, chat, "/compact undo", n)
    assert re.match(r"Undid the manual compaction from .* UTC: \d+ messages restored", undone), undone
    n += 1
    restored = await _say(world, chat, "/stats", n)
    assert "Messages: 8 active" in restored, restored
    assert "(undone)" in restored
    n += 1
    again = await _say(world, chat, "/compact undo", n)
    assert again.startswith("Nothing to undo"), again


def _counts(stats: str) -> list[str]:
    """The /stats lines that a compaction (or a refused one) would change."""
    return [line for line in stats.splitlines() if line.startswith(("Messages:", "Compactions:"))]

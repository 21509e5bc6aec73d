"""A busy Telegram group on a small window: hundreds of messages nobody addresses to the bot, a mention
every 35 messages. Every reply request fits the window counting `max_tokens`, the in-loop compressor
(not only hygiene) compacts the chatter, and automatic compaction never pauses.
"""

from __future__ import annotations

import json
import random

from sqlalchemy import text

from gateway.store import Store
from tests.e2e.conftest import BOT_USERNAME, TelegramWorld, WorldFactory

GROUP = -100555
WINDOW = 12_000
MAX_OUTPUT = 4_096
MENTION_EVERY = 35
MENTIONS = 8
SPEAKERS = [(51, "Caroline"), (52, "Melanie")]
TOPICS = [
    "the pottery class on Saturday",
    "the camping trip to the lake",
    "a book about gardening",
    "the sunrise painting",
    "the charity run in May",
    "the new puppy",
    "the adoption agency meeting",
    "the concert downtown",
]


def chatter(rng: random.Random, n: int) -> str:
    topic = rng.choice(TOPICS)
    filler = " ".join(
        rng.choice(["really", "so", "honestly", "we", "loved", "it", "again", "later"]) for _ in range(25)
    )
    return f"Message {n}: about {topic}, {filler}. What do you think about {rng.choice(TOPICS)}?"


def prompt_tokens(usage: dict[str, int]) -> int:
    return usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]


async def test_a_busy_group_never_overflows_the_window(telegram_world: WorldFactory, db_url: str) -> None:
    rng = random.Random(16)
    async with telegram_world(
        context_window=WINDOW,
        GATEWAY_ALLOW_ALL_USERS="true",
        AGENT__MAX_OUTPUT_TOKENS=str(MAX_OUTPUT),
        LIMITS__CHAT_DAILY_BUDGET_USD="0",
        # Quick turns keep a fixed-TTL cache warm, so the compactions seen are the compressor's.
        PROMPT_CACHING__CACHE_TTL="5m",
    ) as world:
        n = 0
        for mention in range(1, MENTIONS + 1):
            for _ in range(MENTION_EVERY - 1):
                n += 1
                user, name = SPEAKERS[n % 2]
                world.tg.push_message(
                    GROUP,
                    chatter(rng, n),
                    user_id=user,
                    first_name=name,
                    chat_type="supergroup",
                    chat_title="Pals",
                )
            user, name = SPEAKERS[mention % 2]
            world.tg.push_message(
                GROUP,
                f"@{BOT_USERNAME} question {mention}: what were we just talking about?",
                user_id=user,
                first_name=name,
                chat_type="supergroup",
                chat_title="Pals",
            )
            await world.wait_replies(GROUP, mention, timeout=60)
        await _assert_within_the_window(world)
        await _assert_the_compressor_did_the_work(world, db_url)


async def _assert_within_the_window(world: TelegramWorld) -> None:
    replies = world.replies()
    assert len(replies) >= MENTIONS
    failed = [(r.kind, r.status, r.body.get("max_tokens")) for r in world.llm.requests if r.status != 200]
    assert not failed, failed
    for request in replies:
        assert request.usage is not None
        assert prompt_tokens(request.usage) + request.body["max_tokens"] <= WINDOW
    assert f"question {MENTIONS}:" in json.dumps(replies[-1].body["messages"][-1])


async def _assert_the_compressor_did_the_work(world: TelegramWorld, db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        async with store.engine.connect() as conn:
            rows = (await conn.execute(text("SELECT trigger, outcome, reason FROM compactions"))).all()
            states = (await conn.execute(text("SELECT engine_state FROM sessions"))).scalars().all()
    finally:
        await store.close()
    triggers = [(r.trigger, r.outcome) for r in rows]
    # the compressor's own triggers: right after a reply, or in the loop (not hygiene, not by hand)
    assert {("agent", "ok"), ("after_reply", "ok")} & set(triggers), triggers
    assert not [r for r in rows if "nothing to compact" in r.reason], triggers
    for state in states:
        parsed = state if isinstance(state, dict) else json.loads(state or "{}")
        assert parsed.get("paused_at_tokens") is None
    assert "paused" not in world.gw.log_text()

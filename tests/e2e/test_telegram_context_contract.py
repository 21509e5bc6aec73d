"""The context contract through the real gateway process and the real Telegram library (fakes as always):

- a text-only chat is compacted by the compressor at 50% of the window, never waiting for hygiene at 85%,
  and no reply request goes out above the compressor's threshold;
- the stored summary stays framed in every later request, and the next compaction is given it as the
  previous summary to update;
- a group compacted before the bot's first reply, then again later, never carries two summaries;
- an unknown `context.engine` stops the start-up with one line naming the engines available.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent.compaction.prompt import SUMMARY_PREFIX
from tests.e2e.conftest import BOT_USERNAME, WorldFactory, body_text
from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import RecordedRequest

WINDOW = 20_000
THRESHOLD = WINDOW // 2
PRIVATE = 3042
GROUP = -100700
ALICE, BOB = 42, 43


def prompt_tokens(record: RecordedRequest) -> int:
    usage = record.usage or {}
    return int(
        usage.get("input_tokens", 0)
        + usage.get("cache_read_input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0)
    )


def prose(tag: str, words: int) -> str:
    """Plain chat text of about `words` tokens that starts with a recognisable tag."""
    return f"{tag}: " + " ".join(f"{tag}-note{i % 40}" for i in range(words))


def summaries_in(record: RecordedRequest) -> int:
    return body_text(record).count(SUMMARY_PREFIX)


def summary_body(record: RecordedRequest) -> str:
    """The framed summary's own text in a reply request (what the next compaction must update)."""
    for message in record.body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            text = block.get("text", "") if block.get("type") == "text" else ""
            if text.startswith(SUMMARY_PREFIX):
                return text.partition("\n\n")[2]
    raise AssertionError("no framed summary in the request")


async def test_a_text_only_chat_is_compacted_at_fifty_percent(telegram_world: WorldFactory) -> None:
    async with telegram_world(
        context_window=WINDOW,
        TELEGRAM_ALLOWED_USERS=str(ALICE),
        TELEGRAM_ADMIN_IDS=str(ALICE),
        AGENT__MAX_OUTPUT_TOKENS="1024",
        COMPRESSION__PROTECT_LAST_N="2",
    ) as world:
        for n in range(1, 15):
            world.tg.push_message(PRIVATE, prose(f"day{n}", 900), user_id=ALICE, first_name="Alice")
            await world.wait_replies(PRIVATE, n, timeout=30)
        replies = world.replies()
        sizes = [prompt_tokens(r) for r in replies]
        summaries = [r for r in world.llm.requests if r.kind == "summary"]

        assert summaries, f"never compacted; prompt sizes {sizes}"
        # Without the contract this chat grows 52% -> 61% -> ... until hygiene at 85%.
        assert max(sizes) <= THRESHOLD * 1.05, sizes
        assert max(sizes) < WINDOW * 0.85
        stats = world.sent_to(PRIVATE)
        world.tg.push_message(PRIVATE, "/stats", user_id=ALICE, first_name="Alice")
        stats = await world.wait_replies(PRIVATE, len(stats) + 1, timeout=30)
        text = stats[-1].visible_text
        assert "hygiene" not in text.split("Compactions:")[1].splitlines()[0], text

        # Every request after the first compaction carries the summary framed, exactly once; the
        # second compaction was handed the first summary to update.
        first_summary = world.llm.requests.index(summaries[0])
        later = [r for r in world.llm.requests[first_summary:] if r.kind == "reply" and r.status == 200]
        assert later
        assert all(summaries_in(r) == 1 for r in later), [summaries_in(r) for r in later]
        assert len(summaries) >= 2, sizes
        second = world.llm.requests.index(summaries[1])
        before_second = [r for r in later if world.llm.requests.index(r) < second][-1]
        previous = summary_body(before_second)
        assert previous.splitlines()[0] in body_text(summaries[1])
        escaped = json.dumps(previous, ensure_ascii=False)[1:-1]
        assert escaped in body_text(summaries[1]), "the next compaction updates the stored summary"


async def test_a_group_compacted_before_the_first_reply_never_shows_two_summaries(
    telegram_world: WorldFactory,
) -> None:
    group = {"chat_type": "supergroup", "chat_title": "Night shift"}
    async with telegram_world(
        context_window=WINDOW,
        TELEGRAM_ALLOWED_USERS=f"{ALICE},{BOB}",
        AGENT__MAX_OUTPUT_TOKENS="1024",
        COMPRESSION__PROTECT_LAST_N="2",
    ) as world:
        for day in range(4):
            # the group talks among itself, then someone asks the bot
            for i in range(8):
                world.tg.push_message(
                    GROUP, prose(f"d{day}m{i}", 500), user_id=BOB, first_name="Bob", **group
                )
            world.tg.push_message(
                GROUP,
                f"@{BOT_USERNAME} what happened on day {day}?",
                user_id=ALICE,
                first_name="Alice",
                **group,
            )
            await world.wait_replies(GROUP, day + 1, timeout=40)
        summaries = [r for r in world.llm.requests if r.kind == "summary"]
        assert len(summaries) >= 2, [r.kind for r in world.llm.requests]
        counts = [summaries_in(r) for r in world.replies()]
        assert max(counts) == 1, counts
        assert all(prompt_tokens(r) <= THRESHOLD * 1.05 for r in world.replies())


@pytest.mark.parametrize(
    ("engine", "model", "line"),
    [
        ("lcm", "claude-sonnet-4-6", "unknown context engine 'lcm'; available: compressor, server"),
        (
            "server",
            "claude-haiku-4-5",
            "'server' needs a model with server-side compaction (claude-opus-5-5, claude-sonnet-5-5, "
            "claude-fable-5-1, claude-haiku-5-5, claude-fable-5, claude-opus-5, claude-sonnet-5, "
            "claude-opus-4-8, claude-opus-4-7, claude-opus-4-6, claude-sonnet-4-6); "
            "claude-haiku-4-5 has none",
        ),
    ],
)
async def test_an_unknown_engine_stops_the_start_up(
    tmp_path: Path, db_url: str, engine: str, model: str, line: str
) -> None:
    env = base_env(
        database_url=db_url,
        anthropic_url="http://127.0.0.1:9",
        tmp=tmp_path,
        TELEGRAM_BOT_TOKEN="123456:TEST-token-abcdefghijklmnopqrstuvwxyz",
        CONTEXT__ENGINE=engine,
        MODEL=model,
    )
    gw = GatewayProcess(env, cwd=tmp_path)
    await gw.start(ready=None)
    assert gw.proc is not None
    await asyncio.wait_for(gw.proc.wait(), timeout=60)  # it stops by itself
    code = await gw.stop()
    assert code == 2
    assert gw.logs == [f"gateway: context.engine: {line}"], gw.logs

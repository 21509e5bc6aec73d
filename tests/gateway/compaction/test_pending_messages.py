"""Messages still awaiting a reply through a real Gateway: a huge text file and a question that arrive
while another message is being answered are counted as they are sent and answered, never summarized
first."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.platforms.base import Attachment
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.memory_adapter import ALICE

WINDOW = 20_000
SETTINGS: dict[str, Any] = {"model_context_length": WINDOW, "prompt_caching": {"cache_ttl": "5m"}}
CAPTION = "what went wrong in this log? zq-caption"
CAPTION_2 = "and this one is from the replica zq-second"
QUESTION = "and is the deploy at 5 still on? zq-question"


def log_file(lines: int) -> bytes:
    """A server log of about 25 tokens a line."""
    return "\n".join(
        f"2026-11-03 12:{i % 60:02d}:07 INFO req={i} GET /api/v1/orders/{i * 7} 200 in {i % 97} ms"
        for i in range(lines)
    ).encode()


class Download:
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __call__(self) -> bytes:
        return self.data


def text_file(data: bytes) -> Attachment:
    return Attachment(
        kind="document", filename="server.log", mime_type="text/plain", size=len(data), fetch=Download(data)
    )


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


async def history(bot: Bot, exchanges: int, words: int) -> None:
    for i in range(exchanges):
        await bot.adapter.say(f"note {i}: " + " ".join(f"w{j % 40}" for j in range(words)))


async def arrive_while_answering(bot: Bot, *files: tuple[str, bytes]) -> None:
    """One question whose answer is held until files and a second question have arrived."""
    answered = asyncio.Event()
    bot.fake.script_reply("first answer", hold=answered)
    bot.adapter.typing_started.clear()
    await bot.adapter.post("@testbot question one")
    await asyncio.wait_for(bot.adapter.typing_started.wait(), 10)
    for caption, data in files:
        await bot.adapter.post("", media=("document",), caption=caption, attachments=(text_file(data),))
    await bot.adapter.post(QUESTION, user=ALICE)
    answered.set()
    await bot.adapter.wait_idle()


async def test_a_huge_file_is_counted_as_sent_and_answered_with_the_question(
    fake: FakeAnthropic, sqlite_url: str
) -> None:
    data = log_file(16_000)  # ~1.2 MB: about 20 windows' worth of tokens
    async with running_bot(fake, sqlite_url, **SETTINGS) as bot:
        await history(bot, 3, 100)
        await arrive_while_answering(bot, (CAPTION, data))
        window = await bot.window()
        [file_row] = [r for r in window if CAPTION in r.text]
        # what the model is shown of it (head + tail, a quarter of the window at most), not its raw size
        assert file_row.token_estimate <= WINDOW // 4
        session = await bot.store.active_session(await bot.chat_pk("telegram", "42"))
        assert session.active_tokens < WINDOW
        # nothing needed compacting: the file was never summarized before it was answered
        assert await bot.rows("SELECT trigger FROM compactions") == []
        assert all(r.kind == "reply" for r in fake.requests)
        last = json.dumps(bot.replies()[-1].body["messages"])
        assert CAPTION in last
        assert QUESTION in last
        assert "chars omitted here because the message is too large" in last
        assert file_row.replied
        assert bot.adapter.texts()[-1].startswith("echo: ")


async def test_a_compaction_before_the_answer_never_summarizes_what_it_answers(
    fake: FakeAnthropic, sqlite_url: str
) -> None:
    async with running_bot(fake, sqlite_url, **SETTINGS) as bot:
        await history(bot, 12, 500)  # ~13,000 tokens, which the compressor keeps near half the window
        # each file is shown as about a fifth of the window: together more than a compaction's kept
        # tail would hold of its own accord
        await arrive_while_answering(bot, (CAPTION, log_file(16_000)), (CAPTION_2, log_file(9_000)))
        kinds = [r.kind for r in fake.requests]
        last_two = [i for i, kind in enumerate(kinds) if kind == "reply"][-2:]
        # the session was compacted between answering question one and answering the files
        assert "summary" in kinds[last_two[0] : last_two[1]]
        summaries = json.dumps([r.body for r in fake.requests if r.kind == "summary"])
        for pending in (CAPTION, CAPTION_2, QUESTION, "GET /api/v1/orders/"):
            assert pending not in summaries  # nothing summarized before it was answered
        rows = await bot.rows("SELECT state, replied FROM messages WHERE text LIKE '%zq-%'")
        assert [(r.state, bool(r.replied)) for r in rows] == [("active", True)] * 3
        answer = json.dumps(bot.replies()[-1].body["messages"])
        for pending in (CAPTION, CAPTION_2, QUESTION):
            assert pending in answer

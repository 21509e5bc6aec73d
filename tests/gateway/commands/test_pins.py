"""Pinned facts through a real Gateway: who may pin, what every request carries, the bounds, and that
pins outlive /new and compaction while staying in their own chat."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.llm import AnthropicClient
from agent.pins import HEADER
from gateway.app.gateway import Gateway
from gateway.platforms.base import ReplyTo
from gateway.platforms.console.adapter import ConsoleAdapter
from gateway.store import Store
from tests.fakes.anthropic import FakeAnthropic, RecordedRequest
from tests.support.gateway_bot import Bot, make_settings, running_bot
from tests.support.memory_adapter import ADMIN, ALICE, BOB, group_chat

GROUP = group_chat("-500", "Ops")
SETTINGS: dict[str, Any] = {
    "model_context_length": 5120,
    "compression": {"protect_last_n": 2, "enabled": False},
    "pins": {"max_count": 3, "max_tokens": 120},
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def bot(fake: FakeAnthropic, sqlite_url: str) -> AsyncIterator[Bot]:
    async with running_bot(fake, sqlite_url, **SETTINGS) as running:
        yield running


async def only(bot: Bot, text: str, **kwargs: object) -> str:
    replies = await bot.adapter.say(text, **kwargs)
    assert len(replies) == 1, replies
    return replies[0].text


def system_of(request: RecordedRequest) -> str:
    return json.dumps(request.body.get("system"), ensure_ascii=False)


async def test_a_private_chat_user_pins_and_every_request_carries_it(bot: Bot, fake: FakeAnthropic) -> None:
    reply = await only(bot, "/pin The staging database is db-stg-7, never prod.", user=ALICE)
    assert reply.startswith("Pinned as #1"), reply
    await only(bot, "hello", user=ALICE)
    await only(bot, "and again", user=ALICE)
    first, second = bot.replies()[-2:]
    assert HEADER in system_of(first)
    assert "1. The staging database is db-stg-7, never prod." in system_of(first)
    # byte-stable: the cached prefix holds (its cache marker's lifetime is the cache policy's to move)
    assert [b["text"] for b in first.body["system"]] == [b["text"] for b in second.body["system"]]
    listing = await only(bot, "/pins", user=ALICE)
    assert "1. The staging database is db-stg-7, never prod." in listing
    assert (await only(bot, "/unpin 1", user=ALICE)).startswith("Unpinned #1")
    await only(bot, "one more", user=ALICE)
    assert HEADER not in system_of(bot.replies()[-1])


async def test_in_groups_only_admins_change_pins(bot: Bot) -> None:
    refused = await only(bot, "/pin Bob decides", user=BOB, chat=GROUP, mentions_bot=True)
    assert "only the bot's admins" in refused
    assert (await only(bot, "/pins", user=BOB, chat=GROUP)).startswith("No pinned facts")
    assert (await only(bot, "/pin Release on Friday", user=ADMIN, chat=GROUP)).startswith("Pinned as #1")
    assert "only the bot's admins" in await only(bot, "/unpin 1", user=BOB, chat=GROUP)
    assert "1. Release on Friday" in await only(bot, "/pins", user=BOB, chat=GROUP)


async def test_pins_are_bounded_with_a_clear_refusal(bot: Bot) -> None:
    for n in range(3):
        assert (await only(bot, f"/pin fact number {n}", user=ALICE)).startswith(f"Pinned as #{n + 1}")
    full = await only(bot, "/pin a fourth fact", user=ALICE)
    assert full.startswith("Not pinned. This chat already has 3 pins"), full
    await only(bot, "/unpin 3", user=ALICE)
    long = await only(bot, "/pin " + " ".join(f"w{i}" for i in range(90)), user=ALICE)
    assert long.startswith("Not pinned. That pin is about"), long
    assert "/unpin" in long
    assert "Usage: /unpin N" in await only(bot, "/unpin first", user=ALICE)
    assert "no pin #9" in await only(bot, "/unpin 9", user=ALICE)


async def test_pins_survive_new_and_compaction_and_stay_in_their_chat(bot: Bot, fake: FakeAnthropic) -> None:
    await only(bot, "/pin Invoice 4471 is paid", user=ADMIN)
    for i in range(6):
        await bot.adapter.say(f"fact{i}: " + " ".join(f"item{j}" for j in range(150)), user=ADMIN)
    compacted = await only(bot, "/compact", user=ADMIN)
    assert compacted.startswith("Compaction ok"), compacted
    summary = [r for r in fake.requests if r.kind == "summary"][-1]
    assert "do not repeat them" in json.dumps(summary.body)
    assert "Invoice 4471 is paid" in json.dumps(summary.body)
    await only(bot, "after the compaction", user=ADMIN)
    assert "Invoice 4471 is paid" in system_of(bot.replies()[-1])
    await only(bot, "/new", user=ADMIN)
    await only(bot, "in a fresh conversation", user=ADMIN)
    assert "Invoice 4471 is paid" in system_of(bot.replies()[-1])
    # another chat never sees them
    await only(bot, "hi from Alice", user=ALICE)
    assert "Invoice 4471" not in system_of(bot.replies()[-1])
    assert (await only(bot, "/pins", user=ALICE)).startswith("No pinned facts")


async def test_the_console_pins_like_any_chat(fake: FakeAnthropic, sqlite_url: str) -> None:
    """`python -m gateway chat`: the console's user pins in their private chat."""
    reader = asyncio.StreamReader()
    lines = ["/pin The build server is bld-04.", "which build server do we use?", "/pins"]
    reader.feed_data("".join(line + "\n" for line in lines).encode())
    reader.feed_eof()
    out = io.StringIO()
    console = ConsoleAdapter(stdin=reader, stdout=out)
    store = await Store.open(sqlite_url)
    llm = AnthropicClient(api_key=fake.api_key, base_url=fake.base_url, max_retries=0)
    gateway = Gateway(make_settings(fake, sqlite_url, **SETTINGS), [console], store=store, llm=llm)
    try:
        await gateway.start()
        await asyncio.wait_for(console.finished.wait(), 10)
        await gateway.tasks.drain()
    finally:
        await gateway.stop()
        await llm.close()
        await store.close()
    printed = out.getvalue()
    assert "Pinned as #1" in printed
    assert "1. The build server is bld-04." in printed
    (request,) = [r for r in fake.requests if r.kind == "reply"]
    assert "The build server is bld-04." in system_of(request)


async def test_pin_sent_as_a_reply_pins_the_replied_to_message(bot: Bot) -> None:
    await bot.adapter.say("The VPN gateway moved to vpn2.example.org", user=ALICE, message_id="orig-1")
    pinned = await only(bot, "/pin", user=ALICE, reply_to=ReplyTo("orig-1", "Alice", "The VPN gat…"))
    assert pinned.startswith("Pinned as #1"), pinned
    assert "1. The VPN gateway moved to vpn2.example.org" in await only(bot, "/pins", user=ALICE)
    quoted = ReplyTo("orig-1", "Alice", "The VPN gateway moved", quote="vpn2.example.org")
    assert (await only(bot, "/pin", user=ALICE, reply_to=quoted)).startswith("Pinned as #2")
    assert "2. vpn2.example.org" in await only(bot, "/pins", user=ALICE)
    assert (await only(bot, "/pin", user=ALICE)).startswith("Usage: /pin")

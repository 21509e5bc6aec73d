"""The one way out to the platforms: each call reaches the chat's platform, or says why it cannot."""

from __future__ import annotations

import asyncio
import io

import pytest

from gateway.errors import SendError, SendRejected
from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage, PlatformAdapter
from gateway.platforms.console.adapter import ConsoleAdapter
from gateway.platforms.discord.connection import DiscordAdapter
from gateway.platforms.router import Platforms
from gateway.platforms.telegram.bot import TelegramAdapter
from tests.support.memory_adapter import MemoryAdapter, StreamingMemoryAdapter, TypingEvent

TELEGRAM = ChatRef("telegram", "42", kind=ChatKind.PRIVATE)
BENCH = ChatRef("bench", "7", kind=ChatKind.PRIVATE)
NOWHERE = ChatRef("matrix", "1", kind=ChatKind.PRIVATE)


def platforms() -> tuple[Platforms, MemoryAdapter, StreamingMemoryAdapter]:
    plain, streaming = MemoryAdapter(name="telegram"), StreamingMemoryAdapter(name="bench")
    return Platforms([plain, streaming]), plain, streaming


async def test_each_call_reaches_the_chats_platform() -> None:
    router, plain, streaming = platforms()

    sent = await router.send(OutgoingMessage(TELEGRAM, "hello"))
    await router.send(OutgoingMessage(BENCH, "hi"))
    await router.react(TELEGRAM, "m1", "👀")
    async with router.typing(TELEGRAM):
        pass

    assert [m.text for m in plain.sent] == ["hello"]
    assert sent.platform_message_ids == ("out-1",)
    assert [m.text for m in streaming.sent] == ["hi"]
    assert plain.reactions == [(TELEGRAM, "m1", "👀")]
    assert plain.typing_events == [TypingEvent(TELEGRAM, entered=True), TypingEvent(TELEGRAM, entered=False)]
    assert list(router) == [plain, streaming]
    assert router.has("telegram")
    assert router.has("bench")
    assert not router.has("matrix")


async def test_a_platform_not_running_is_refused_what_must_reach_it() -> None:
    router, plain, _ = platforms()

    with pytest.raises(SendError, match="no adapter for platform matrix"):
        await router.send(OutgoingMessage(NOWHERE, "hello"))
    with pytest.raises(SendError, match="no adapter for platform matrix"):
        await router.react(NOWHERE, "m1", "👀")
    with pytest.raises(SendError, match="no adapter for platform matrix"):
        await router.edit(NOWHERE, "m1", "text")
    async with router.typing(NOWHERE):  # typing may be skipped
        pass

    assert plain.sent == []
    assert plain.reactions == []
    assert plain.typing_events == []


async def test_streaming_is_offered_only_where_the_platform_shows_it() -> None:
    router, _, _ = platforms()

    assert router.live(BENCH, reply_to=None) is not None
    assert router.parts(BENCH, "   ") == []  # the streaming platform's own split
    assert router.live(TELEGRAM, reply_to=None) is None
    assert router.parts(TELEGRAM, "one reply") == ["one reply"]
    assert router.live(NOWHERE, reply_to=None) is None
    assert router.parts(NOWHERE, "one reply") == ["one reply"]
    await router.edit(BENCH, "out-1", "final")
    with pytest.raises(SendRejected):
        await router.edit(TELEGRAM, "out-1", "final")


def real_adapters() -> list[PlatformAdapter]:
    return [
        TelegramAdapter(token="123:abc"),
        DiscordAdapter("token"),
        ConsoleAdapter(stdin=asyncio.StreamReader(), stdout=io.StringIO()),
    ]


async def test_every_platform_shows_replies_while_they_are_written() -> None:
    adapters = real_adapters()
    router = Platforms(adapters)

    for adapter in adapters:
        chat = ChatRef(adapter.name, "42", kind=ChatKind.PRIVATE)
        assert router.live(chat, reply_to=None) is not None, adapter.name
    # a Telegram channel has neither drafts nor a reply to edit
    assert router.live(ChatRef("telegram", "-100", kind=ChatKind.CHANNEL), reply_to=None) is None

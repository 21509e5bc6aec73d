"""Discord start-up through discord.py against the fake: the command sync never delays receiving, a
gateway stuck before READY stops promptly, and configuration errors say what to fix."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from gateway.errors import PlatformConfigError, PlatformStartError
from gateway.platforms.base import CommandSpec, IncomingMessage, OutgoingMessage
from gateway.platforms.discord.connection import DiscordAdapter
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord.gateway import DISALLOWED_INTENTS

DM, ANN = 904, 501
COMMANDS = [CommandSpec("help", "What this bot can do", admin_only=False)]
SYNC_ROUTE = "PUT /applications/{app}/commands"


@pytest.fixture
async def dc() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake


def adapter_for(dc: FakeDiscord, **options: float) -> DiscordAdapter:
    return DiscordAdapter(dc.token, dc.api_base, dc.gateway_url, guild_ready_timeout=0.05, **options)


async def test_a_rate_limited_command_sync_does_not_delay_messages(dc: FakeDiscord) -> None:
    dc.fail_next(SYNC_ROUTE, status=429, retry_after=3.0)
    received: list[IncomingMessage] = []
    adapter = adapter_for(dc)

    async def handler(msg: IncomingMessage) -> None:
        received.append(msg)
        await adapter.sender.send(
            OutgoingMessage(msg.chat, "answer", reply_to_message_id=msg.platform_message_id)
        )

    started = time.monotonic()
    await adapter.start(handler, COMMANDS)
    try:
        assert time.monotonic() - started < 2.0, "start waited for the rate-limited sync"
        dc.push_message(DM, "hello right after start", author_id=ANN, username="ann")
        sent = await dc.wait_sent(1, timeout=2.0)
        assert time.monotonic() - started < 2.5
        assert sent[0].content == "answer"
        assert not dc.commands, "the sync is still waiting out its 429"
        await dc.wait_for(lambda: bool(dc.commands), timeout=10)  # then it is synced
        assert [c["name"] for c in dc.commands] == ["help"]
    finally:
        await adapter.stop()


async def test_a_failing_sync_is_retried_in_the_background(dc: FakeDiscord) -> None:
    dc.fail_next(SYNC_ROUTE, status=500, times=1)
    adapter = adapter_for(dc)
    await adapter.start(lambda msg: asyncio.sleep(0), COMMANDS)
    try:
        await dc.wait_for(lambda: bool(dc.commands), timeout=10)
        assert len(dc.faults_served) >= 1
    finally:
        await adapter.stop()


async def test_stop_during_a_start_stuck_before_ready_is_prompt(dc: FakeDiscord) -> None:
    dc.gateway.withhold_ready = True
    adapter = adapter_for(dc, ready_timeout=60.0)
    start = asyncio.create_task(adapter.start(lambda msg: asyncio.sleep(0), COMMANDS))
    await asyncio.sleep(1.0)
    assert dc.identifies, "the gateway connection is open and waiting for READY"
    began = time.monotonic()
    start.cancel()  # what a SIGTERM during start-up does
    with pytest.raises(asyncio.CancelledError):
        await start
    assert time.monotonic() - began < 3.0


async def test_missing_message_content_intent_names_the_setting(dc: FakeDiscord) -> None:
    dc.gateway.close_on_identify = DISALLOWED_INTENTS
    adapter = adapter_for(dc)
    with pytest.raises(PlatformConfigError) as caught:
        await adapter.start(lambda msg: asyncio.sleep(0), COMMANDS)
    message = str(caught.value)
    assert "Message Content Intent" in message
    assert "\n" not in message


async def test_a_rejected_token_is_a_configuration_error(dc: FakeDiscord) -> None:
    adapter = DiscordAdapter("wrong-token", dc.api_base, dc.gateway_url)
    with pytest.raises(PlatformConfigError, match="DISCORD_BOT_TOKEN"):
        await adapter.start(lambda msg: asyncio.sleep(0), COMMANDS)


async def test_a_gateway_that_never_gets_ready_fails_start_in_bounded_time(dc: FakeDiscord) -> None:
    dc.gateway.withhold_ready = True
    adapter = adapter_for(dc, ready_timeout=1.0)
    began = time.monotonic()
    with pytest.raises(PlatformStartError, match="not READY"):
        await adapter.start(lambda msg: asyncio.sleep(0), COMMANDS)
    assert time.monotonic() - began < 5.0

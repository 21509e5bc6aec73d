"""Telegram start-up next to sibling workers: a webhook already registered as configured is kept,
`setWebhook`'s flood wait (a second call within a second) is waited out, and a standby starts polling
once it holds the lease."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from gateway.platforms.base import IncomingMessage
from gateway.platforms.fleet import FleetTimings, RegisteredHere, Registrations, SoleWorker
from gateway.platforms.telegram.bot import TelegramAdapter
from gateway.platforms.telegram.fleet_roles import POLLING_LEASE
from tests.fakes.telegram import FakeTelegram
from tests.support.ports import free_port

TOKEN = "555002:fleet-roles-token"


@pytest.fixture(autouse=True)
def _ptb_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    # PTB 22 warns when building RetryAfter from int seconds unless told to use timedelta values.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN) as server:
        yield server


async def _ignore(_message: IncomingMessage) -> None:
    return None


def _webhook_adapter(
    tg: FakeTelegram, url: str, registrations: Registrations | None = None
) -> TelegramAdapter:
    port = free_port()
    return TelegramAdapter(
        token=TOKEN, base_url=tg.base_url, webhook_url=url, webhook_listen="127.0.0.1", webhook_port=port,
        webhook_secret="s3cret", registrations=registrations,
    )  # fmt: skip


async def test_a_webhook_already_registered_as_configured_is_left_alone(tg: FakeTelegram) -> None:
    url = "http://127.0.0.1:1/hook"
    fleet_record = RegisteredHere()  # what the fleet's database keeps
    first, second = _webhook_adapter(tg, url, fleet_record), _webhook_adapter(tg, url, fleet_record)
    await first.start(_ignore, [])
    await second.start(_ignore, [])
    await asyncio.gather(first.stop(), second.stop())
    assert len(tg.called("setWebhook")) == 1
    assert len(tg.called("getWebhookInfo")) == 2


async def test_set_webhook_flood_wait_is_waited_out(tg: FakeTelegram) -> None:
    first = _webhook_adapter(tg, "http://127.0.0.1:1/old")
    second = _webhook_adapter(tg, "http://127.0.0.1:1/new")
    await first.start(_ignore, [])
    started = time.monotonic()
    await second.start(_ignore, [])  # within a second of the first setWebhook: 429 retry after 1
    waited = time.monotonic() - started
    await asyncio.gather(first.stop(), second.stop())
    assert tg.webhook["url"] == "http://127.0.0.1:1/new"
    assert len(tg.called("setWebhook")) == 3  # set, refused, set again
    assert waited >= 0.9


class _Taken(SoleWorker):
    """A fleet in which another worker holds the polling lease until `free` is called."""

    def __init__(self) -> None:
        super().__init__(worker="me")
        self.others = {POLLING_LEASE}

    async def try_take(self, name: str) -> bool:
        return name not in self.others and await super().try_take(name)

    async def holders(self, names: list[str]) -> dict[str, str]:
        return {n: "other" for n in names if n in self.others}


async def test_a_standby_polls_only_once_it_holds_the_lease(tg: FakeTelegram) -> None:
    fleet = _Taken()
    adapter = TelegramAdapter(
        token=TOKEN, base_url=tg.base_url, poll_timeout=0.5, fleet=fleet,
        fleet_timings=FleetTimings(check_s=0.05, standby_s=0.05),
    )  # fmt: skip
    await adapter.start(_ignore, [])
    try:
        await asyncio.sleep(0.3)
        assert not tg.called("getUpdates"), "a standby polled"
        fleet.others.clear()
        await tg.wait_for(lambda: bool(tg.called("getUpdates")), timeout=5)
        assert POLLING_LEASE in fleet.held
    finally:
        await adapter.stop()
    assert POLLING_LEASE not in fleet.held, "the lease was kept after stopping"

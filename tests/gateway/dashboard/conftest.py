"""A running gateway (in-memory adapter, fake Anthropic API) with its dashboard on an aiohttp test
client: what an operator's browser would see, without a browser."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.config import DashboardSettings
from gateway.dashboard.server import build_dashboard
from gateway.store.locks.leases import default_worker_name
from tests.fakes.anthropic import FakeAnthropic
from tests.support.gateway_bot import Bot, running_bot
from tests.support.ports import free_port

PASSWORD = "correct horse battery staple"
SMALL: dict[str, Any] = {
    "model_context_length": 5120,
    "compression": {"protect_last_n": 2, "enabled": False},
}


@dataclass
class Board:
    bot: Bot
    client: TestClient[Any, Any]
    port: int

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def login(self, password: str = PASSWORD) -> int:
        response = await self.client.post(
            "/login", data={"password": password}, headers={"Origin": self.origin}, allow_redirects=False
        )
        return response.status

    async def page(self, path: str) -> tuple[int, str]:
        response = await self.client.get(path, allow_redirects=False)
        return response.status, await response.text()


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


async def open_board(fake: FakeAnthropic, db_url: str, **dashboard: Any) -> AsyncIterator[Board]:
    port = free_port()
    settings = DashboardSettings(port=port, **dashboard)
    async with running_bot(fake, db_url, **SMALL) as bot:
        built = build_dashboard(
            settings,
            store=bot.store,
            admin=bot.gateway.admin,
            budget=bot.gateway.budget,
            timezone="UTC",
            clock=bot.gateway.now,
            worker=default_worker_name(),
        )
        async with TestClient(TestServer(built.app(), host="127.0.0.1", port=port)) as client:
            yield Board(bot, client, port)


@pytest.fixture
async def board(fake: FakeAnthropic, db_url: str) -> AsyncIterator[Board]:
    async for opened in open_board(fake, db_url, password=PASSWORD):
        yield opened

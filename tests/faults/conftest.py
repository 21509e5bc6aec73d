"""Fault suite helpers: a Telegram gateway process against the fakes, and reads of its database."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy import text

from gateway.store import Store
from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram

TG_TOKEN = "123456:TEST-token-faults-abcdefghijklmnopqrstuvwxyz"
USER = 42
CHAT = 1042


def telegram_env(
    tmp_path: Path, db_url: str, llm: FakeAnthropic, tg: FakeTelegram, **extra: str
) -> dict[str, str]:
    values = {
        "TELEGRAM_BOT_TOKEN": TG_TOKEN,
        "TELEGRAM_BASE_URL": tg.base_url,
        "TELEGRAM_ALLOWED_USERS": str(USER),
        "TELEGRAM_ADMIN_IDS": str(USER),
        **extra,
    }
    return base_env(database_url=db_url, anthropic_url=llm.base_url, tmp=tmp_path, **values)


@contextlib.asynccontextmanager
async def gateway_process(env: dict[str, str], cwd: Path) -> AsyncIterator[GatewayProcess]:
    """A started gateway; stopped (SIGTERM) afterwards unless the test killed it."""
    gw = GatewayProcess(env, cwd=cwd)
    try:
        await gw.start()
        yield gw
    finally:
        await gw.stop()


def assert_clean_logs(gw: GatewayProcess) -> None:
    """No unhandled task exception and no traceback: every failure was handled and logged."""
    logs = gw.log_text()
    assert "Task exception was never retrieved" not in logs, logs
    assert "Traceback" not in logs, logs
    gw.assert_no_secret(TG_TOKEN, "test-key")


async def query(db_url: str, sql: str, **params: Any) -> list[Any]:
    store = await Store.open(db_url, pool_size=1, max_overflow=0)
    try:
        async with store.engine.connect() as conn:
            return list((await conn.execute(text(sql), params)).all())
    finally:
        await store.close()


async def user_rows(db_url: str) -> list[Any]:
    """(text, needs_reply, replied) of every stored user message, in order."""
    return await query(
        db_url, "SELECT text, needs_reply, replied FROM messages WHERE role = 'user' ORDER BY session_pk, seq"
    )


async def eventually(predicate: Any, *, timeout: float = 20.0, interval: float = 0.1) -> None:
    """Wait until the (async or plain) predicate holds; polling is how a test watches another process."""
    async with asyncio.timeout(timeout):
        while True:
            value = predicate()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return
            await asyncio.sleep(interval)

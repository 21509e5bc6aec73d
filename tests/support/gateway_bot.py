"""A real `Gateway` around the in-memory adapter: real Store, real AnthropicClient, the fake Anthropic API.

`running_bot` starts the gateway as `run` would (minus the process and the signals), so tests exercise
the pipeline, turns, hygiene, commands and storage exactly as wired in production.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import text

from agent.llm import AnthropicClient
from gateway.app.gateway import Gateway
from gateway.config import Settings
from gateway.store import Store, StoredMessage
from tests.fakes.anthropic import FakeAnthropic, RecordedRequest
from tests.support.memory_adapter import MemoryAdapter

MODEL = "claude-sonnet-4-6"
ADMIN_ID = 1
ALLOWED = frozenset({42, 43})


def make_settings(fake: FakeAnthropic, db_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": db_url,
        "anthropic_api_key": fake.api_key,
        "anthropic_base_url": fake.base_url,
        "model": MODEL,
        "telegram_admin_ids": frozenset({ADMIN_ID}),
        "telegram_allowed_users": ALLOWED,
        "agent": {"max_output_tokens": 256},
        "scheduler": {"enabled": False},
        # the API's web tools change every request's tool list: on only where a test asks for them
        "tools": {"web_search": {"enabled": False}, "web_fetch": {"enabled": False}},
        # so does schedule_message (and it adds /reminders and /timezone): on where a test asks for it
        "reminders": {"enabled": False},
        # Never spool into the working directory: each bot gets its own folder.
        "spool_dir": Path(tempfile.mkdtemp(prefix="gateway-spool-")),
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@dataclass
class Bot:
    gateway: Gateway
    adapter: MemoryAdapter
    store: Store
    fake: FakeAnthropic

    def replies(self) -> list[RecordedRequest]:
        """Requests to the fake that were ordinary reply calls (not summaries)."""
        return [r for r in self.fake.requests if r.kind == "reply"]

    async def chat_pk(self, platform: str, chat_id: str) -> int:
        async with self.store.engine.connect() as conn:
            row = (
                await conn.execute(
                    text("SELECT id FROM chats WHERE platform = :p AND chat_id = :c"),
                    {"p": platform, "c": chat_id},
                )
            ).first()
        assert row is not None, f"no chat {platform}:{chat_id} stored"
        return int(row[0])

    async def window(self, platform: str = "telegram", chat_id: str = "42") -> list[StoredMessage]:
        session = await self.store.active_session(await self.chat_pk(platform, chat_id))
        return await self.store.load_window(session.id)

    async def scalar(self, sql: str, **params: Any) -> Any:
        async with self.store.engine.connect() as conn:
            return (await conn.execute(text(sql), params)).scalar()

    async def rows(self, sql: str, **params: Any) -> list[Any]:
        async with self.store.engine.connect() as conn:
            return list((await conn.execute(text(sql), params)).all())


@asynccontextmanager
async def running_bot(
    fake: FakeAnthropic, db_url: str, *, adapter: MemoryAdapter | None = None, **overrides: Any
) -> AsyncIterator[Bot]:
    settings = make_settings(fake, db_url, **overrides)
    store = await Store.open(db_url)
    llm = AnthropicClient(
        api_key=fake.api_key, base_url=fake.base_url, max_retries=0, timeout_s=10, total_timeout_s=20
    )
    adapter = adapter or MemoryAdapter()
    try:
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
    except BaseException:
        await llm.close()
        await store.close()
        raise
    adapter.settle = gateway.tasks.drain
    try:
        await gateway.start()
        yield Bot(gateway, adapter, store, fake)
    finally:
        await gateway.stop()
        await llm.close()
        await store.close()

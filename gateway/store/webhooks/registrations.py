"""The fleet's record of each bot's webhook as last registered: one row per (platform, bot).

The Telegram adapter reads it under the webhook lease before deciding whether to call `setWebhook`,
and writes it after a call succeeded. It keeps a hash of the secret token, never the token. Built from
the database URL before the store is opened (the adapters are built first), it opens a one-connection
engine of its own on first use; `close` disposes of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.store.db import Clock, create_engine, translate_errors, utc_now
from gateway.store.tables import WebhookRegistration

webhook_registrations = cast(Table, WebhookRegistration.__table__)


@dataclass(frozen=True, slots=True)
class RegisteredWebhook:
    url: str
    secret_hash: str
    allowed_updates: tuple[str, ...]
    max_connections: int
    registered_at: datetime
    worker: str


class WebhookRecords:
    """Reads and upserts `webhook_registrations` rows (see the module docstring)."""

    def __init__(self, database_url: str, *, clock: Clock = utc_now) -> None:
        self._url = database_url
        self._clock = clock
        self._engine: AsyncEngine | None = None

    def _open(self) -> AsyncEngine:
        if self._engine is None:
            self._engine = create_engine(self._url, pool_size=1, max_overflow=0)
        return self._engine

    async def close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.dispose()

    async def registered(self, platform: str, bot_id: str) -> RegisteredWebhook | None:
        """The webhook last registered for the bot, or None when none was recorded."""
        t = webhook_registrations
        query = select(t).where(t.c.platform == platform, t.c.bot_id == bot_id)
        with translate_errors("read webhook registration"):
            async with self._open().connect() as conn:
                row = (await conn.execute(query)).first()
        if row is None:
            return None
        return RegisteredWebhook(
            url=row.url,
            secret_hash=row.secret_hash,
            allowed_updates=tuple(row.allowed_updates),
            max_connections=row.max_connections,
            registered_at=row.registered_at,
            worker=row.worker,
        )

    async def record(
        self,
        platform: str,
        bot_id: str,
        *,
        url: str,
        secret_hash: str,
        allowed_updates: Sequence[str],
        max_connections: int,
        worker: str,
    ) -> None:
        """Remember what was just registered for the bot (replacing what was)."""
        engine = self._open()
        values = {
            "url": url,
            "secret_hash": secret_hash,
            "allowed_updates": list(allowed_updates),
            "max_connections": max_connections,
            "registered_at": self._clock(),
            "worker": worker[:128],
        }
        insert = pg_insert if engine.dialect.name == "postgresql" else sqlite_insert
        stmt = insert(webhook_registrations).values(platform=platform, bot_id=bot_id, **values)
        upsert = stmt.on_conflict_do_update(index_elements=["platform", "bot_id"], set_=values)
        with translate_errors("record webhook registration"):
            async with engine.begin() as conn:
                await conn.execute(upsert)

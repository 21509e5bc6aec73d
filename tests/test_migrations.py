"""The migrations build exactly the schema the models describe, and run both ways, on both backends."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from gateway.store.db import create_engine
from gateway.store.migrate import (
    current_revision_async,
    downgrade_async,
    head_revision,
    upgrade_async,
)
from gateway.store.search.schema import include_name, is_search_index
from gateway.store.tables import Base

TABLES = {
    "chats",
    "sessions",
    "messages",
    "compactions",
    "llm_calls",
    "usage_daily",
    "command_receipts",
    "job_runs",
    "message_vectors",
    "media",
    "message_media",
    "pins",
    "deliveries",
    "transcriptions",
    "spend_ledger",
    "spend_reservations",
    "webhook_registrations",
    "dashboard_actions",
    "reminders",
    "reminder_occurrences",
    "chat_timezones",
}


def _diff(connection: Connection) -> list[Any]:
    opts = {"compare_type": True, "include_name": include_name}
    context = MigrationContext.configure(connection, opts=opts)
    return list(compare_metadata(context, Base.metadata))


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names()) - {"alembic_version"}


async def _inspect(url: str) -> tuple[set[str], list[Any]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_tables), await conn.run_sync(_diff)
    finally:
        await engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("empty_sqlite_url" if request.param == "sqlite" else "empty_pg_url")
    return url


async def test_upgrade_downgrade_upgrade_matches_models(empty_url: str) -> None:
    assert await current_revision_async(empty_url) is None

    await upgrade_async(empty_url)
    assert await current_revision_async(empty_url) == head_revision()
    tables, diff = await _inspect(empty_url)
    assert {t for t in tables if not is_search_index(t)} == TABLES
    assert {t for t in tables if is_search_index(t)}, "the full-text index exists"
    assert diff == []

    await downgrade_async(empty_url, "base")
    assert await current_revision_async(empty_url) is None
    tables, _ = await _inspect(empty_url)
    assert tables == set()

    await upgrade_async(empty_url)
    tables, diff = await _inspect(empty_url)
    assert {t for t in tables if not is_search_index(t)} == TABLES
    assert diff == []


def test_single_head() -> None:
    assert head_revision() is not None

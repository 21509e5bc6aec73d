"""`gateway run` / `chat` start on any database: SQLite is migrated on the spot (fresh or behind), a
Postgres database that is behind stops the start with one line naming the command to run."""

from __future__ import annotations

import pytest

from gateway.store.migrate import (
    SchemaBehindError,
    current_revision_async,
    downgrade_async,
    ensure_schema,
    head_revision,
)


async def test_a_fresh_sqlite_file_is_migrated_and_then_left_alone(empty_sqlite_url: str) -> None:
    assert (
        await ensure_schema(empty_sqlite_url)
        == f"migrated the SQLite database from empty to {head_revision()}"
    )
    assert await current_revision_async(empty_sqlite_url) == head_revision()
    assert await ensure_schema(empty_sqlite_url) is None


async def test_an_sqlite_database_behind_is_brought_to_head(sqlite_url: str) -> None:
    await downgrade_async(sqlite_url, "0008")
    assert await ensure_schema(sqlite_url) == f"migrated the SQLite database from 0008 to {head_revision()}"


@pytest.mark.postgres
async def test_a_postgres_database_behind_names_the_upgrade_command(empty_pg_url: str) -> None:
    with pytest.raises(SchemaBehindError) as caught:
        await ensure_schema(empty_pg_url)
    message = str(caught.value)
    assert "never migrated" in message
    assert "python -m gateway db upgrade" in message
    assert "SQL" not in message
    assert await current_revision_async(empty_pg_url) is None

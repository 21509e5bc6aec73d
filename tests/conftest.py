"""Shared database fixtures: a migrated SQLite file, a fresh migrated Postgres database, and a `store`
fixture that runs a test on both (ids "sqlite" and "postgres").

Postgres comes from TEST_POSTGRES_URL (default postgresql+asyncpg://postgres@127.0.0.1:5432/test); each
test gets its own database `gwtest_<hex>`, dropped afterwards. If the server cannot be reached the
Postgres cases are skipped, or fail when REQUIRE_POSTGRES=1 (CI).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from gateway.store import Store
from gateway.store.migrate import upgrade_async

DEFAULT_TEST_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


def _server_url() -> str:
    return os.environ.get("TEST_POSTGRES_URL", DEFAULT_TEST_POSTGRES_URL)


def _asyncpg_dsn(sqlalchemy_url: str) -> str:
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin_connection() -> asyncpg.Connection:
    try:
        return await asyncpg.connect(_asyncpg_dsn(_server_url()), timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        message = f"PostgreSQL unreachable at {_server_url()}: {exc!r}"
        if os.environ.get("REQUIRE_POSTGRES") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
async def empty_pg_url() -> AsyncIterator[str]:
    """A fresh, empty Postgres database (not migrated)."""
    admin = await _admin_connection()
    name = f"gwtest_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(_server_url()).set(database=name).render_as_string(hide_password=False)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture
async def pg_url(empty_pg_url: str) -> str:
    await upgrade_async(empty_pg_url)
    return empty_pg_url


@pytest.fixture
def empty_sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"


@pytest.fixture
async def sqlite_url(empty_sqlite_url: str) -> str:
    await upgrade_async(empty_sqlite_url)
    return empty_sqlite_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """A migrated database URL, once per backend."""
    fixture = "sqlite_url" if request.param == "sqlite" else "pg_url"
    url: str = request.getfixturevalue(fixture)
    return url


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = await Store.open(db_url)
    try:
        yield opened
    finally:
        await opened.close()

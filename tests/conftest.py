"""Shared database fixtures: a migrated SQLite file, a fresh migrated Postgres database, and a `store`
fixture that runs a test on both (ids "sqlite" and "postgres").

Postgres comes from TEST_POSTGRES_URL (default postgresql+asyncpg://postgres@127.0.0.1:5432/test); each
test gets its own database `gwtest_<hex>`, dropped afterwards. If the server cannot be reached the
Postgres cases are skipped, or fail when REQUIRE_POSTGRES=1 (CI).

Each test process runs the migrations once per backend and hands every test a copy of the result (a
file copy; `CREATE DATABASE ... TEMPLATE`) instead of migrating a few hundred databases one by one, which
took longer than most of those tests. The migrations themselves are tested from empty databases
(`empty_sqlite_url`, `empty_pg_url`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from gateway.store import Store
from gateway.store.migrate import upgrade_async

DEFAULT_TEST_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"

T = TypeVar("T")


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


def _database_url(name: str) -> str:
    return make_url(_server_url()).set(database=name).render_as_string(hide_password=False)


@contextlib.asynccontextmanager
async def _fresh_pg_database(*, template: str | None = None) -> AsyncIterator[str]:
    """A new database (a copy of `template`, or empty), dropped afterwards; yields its URL."""
    admin = await _admin_connection()
    name = f"gwtest_{uuid.uuid4().hex[:12]}"
    copy_of = f' TEMPLATE "{template}"' if template else ""
    try:
        await admin.execute(f'CREATE DATABASE "{name}"{copy_of}')
        try:
            yield _database_url(name)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def _on_own_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` on an event loop of its own: session fixtures are set up outside any test's loop, and
    the thread's current loop is pytest-asyncio's business."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(work)
    finally:
        loop.close()


async def _drop_pg_database(name: str) -> None:
    admin = await _admin_connection()
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def _create_pg_template(name: str) -> None:
    admin = await _admin_connection()
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        await upgrade_async(_database_url(name))
    except BaseException:
        await _drop_pg_database(name)
        raise


@pytest.fixture(scope="session")
def migrated_pg_template() -> Iterator[str]:
    """A Postgres database migrated to head once per test process, the template of every `pg_url`."""
    name = f"gwtpl_{uuid.uuid4().hex[:12]}"
    _on_own_loop(_create_pg_template(name))
    try:
        yield name
    finally:
        _on_own_loop(_drop_pg_database(name))


@pytest.fixture
async def empty_pg_url() -> AsyncIterator[str]:
    """A fresh, empty Postgres database (not migrated)."""
    async with _fresh_pg_database() as url:
        yield url


@pytest.fixture
async def pg_url(migrated_pg_template: str) -> AsyncIterator[str]:
    """A fresh Postgres database at the newest schema."""
    async with _fresh_pg_database(template=migrated_pg_template) as url:
        yield url


@pytest.fixture
def empty_sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"


@pytest.fixture(scope="session")
def migrated_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file migrated to head once per test process, copied for every `sqlite_url`."""
    path = tmp_path_factory.mktemp("schema") / "gateway.db"
    _on_own_loop(upgrade_async(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture
def sqlite_url(empty_sqlite_url: str, tmp_path: Path, migrated_sqlite_template: Path) -> str:
    """A fresh SQLite file at the newest schema."""
    with (
        contextlib.closing(sqlite3.connect(migrated_sqlite_template)) as source,
        contextlib.closing(sqlite3.connect(tmp_path / "gateway.db")) as copy,
    ):
        source.backup(copy)
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


def _ours(handler: logging.Handler) -> bool:
    return not type(handler).__module__.startswith("_pytest")


@pytest.fixture(autouse=True)
def _root_logging() -> Iterator[None]:
    """A test that sets up logging (`main`, `setup_logging`) leaves the root logger as it found it, so no
    handler outlives the test and the output stream it was bound to."""
    root = logging.getLogger()
    handlers, level = [h for h in root.handlers if _ours(h)], root.level
    yield
    for handler in [h for h in root.handlers if _ours(h) and h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)

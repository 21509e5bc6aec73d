"""Fresh, migrated databases for one benchmark run: a SQLite file in a temporary folder, or a new
Postgres database on the local server, dropped afterwards."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from gateway.store.migrate import upgrade_async

DEFAULT_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"


@asynccontextmanager
async def fresh_sqlite() -> AsyncIterator[str]:
    with tempfile.TemporaryDirectory(prefix="bench-") as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'gateway.db'}"
        await upgrade_async(url)
        yield url


@asynccontextmanager
async def fresh_postgres(
    server_url: str = DEFAULT_POSTGRES_URL, *, durable: bool = True
) -> AsyncIterator[str]:
    """A new database `bench_<hex>` on the server of `server_url`, migrated to head.

    `durable=False` turns off synchronous commit for that database only: for replays whose measure is
    the API bill, not database latency, so days of traffic replay faster.
    """
    server = make_url(server_url)
    dsn = server.set(drivername="postgresql").render_as_string(hide_password=False)
    admin = await asyncpg.connect(dsn, timeout=5)
    name = f"bench_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    if not durable:
        await admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    try:
        url = server.set(database=name).render_as_string(hide_password=False)
        await upgrade_async(url)
        yield url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@asynccontextmanager
async def fresh_database(
    kind: str, *, postgres_url: str = DEFAULT_POSTGRES_URL, durable: bool = True
) -> AsyncIterator[str]:
    if kind == "sqlite":
        async with fresh_sqlite() as url:
            yield url
    elif kind == "postgres":
        async with fresh_postgres(postgres_url, durable=durable) as url:
            yield url
    else:
        raise ValueError(f"unknown database kind {kind!r}; use sqlite or postgres")

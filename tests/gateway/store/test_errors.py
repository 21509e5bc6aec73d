"""Connection failures surface as DatabaseUnavailableError at the repository boundary."""

from __future__ import annotations

import pytest

from gateway.errors import DatabaseUnavailableError, StoreError
from gateway.store import Store
from tests.gateway.store.helpers import append_one
from tests.support.ports import free_port

from .helpers import msg


async def test_unreachable_postgres_is_unavailable() -> None:
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(DatabaseUnavailableError):
        await Store.open(url)


@pytest.mark.postgres
async def test_missing_postgres_database_is_unavailable(pg_url: str) -> None:
    url = pg_url.rsplit("/", 1)[0] + "/gwtest_does_not_exist"
    with pytest.raises(DatabaseUnavailableError):
        await Store.open(url)


async def test_unmigrated_sqlite_reports_a_store_error(empty_sqlite_url: str) -> None:
    store = await Store.open(empty_sqlite_url)
    try:
        with pytest.raises(StoreError):
            await append_one(store, 1, msg("x"))
    finally:
        await store.close()


async def test_unknown_session_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="no session"):
        await append_one(store, 999_999, msg("x"))


@pytest.mark.postgres
async def test_database_refusing_connections_is_unavailable(pg_url: str) -> None:
    import asyncpg
    from sqlalchemy.engine import make_url

    url = make_url(pg_url)
    name = url.database
    admin = await asyncpg.connect(
        host=url.host, port=url.port or 5432, user=url.username, password=url.password, database="postgres"
    )
    try:
        await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        with pytest.raises(DatabaseUnavailableError):
            await Store.open(pg_url)
    finally:
        await admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
        await admin.close()

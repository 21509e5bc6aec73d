"""Named leases for the fleet: which worker polls Telegram, which connects each Discord shard.

On Postgres a lease is a session-level advisory lock `(LEASE_NAMESPACE, crc32(name))` taken on one
connection this process keeps for all its leases. The connection is the heartbeat: a worker that dies
closes it and Postgres releases every lease it held at once, so a standby takes over on its next try.
Its `application_name` carries the worker's name, so `holders` (doctor, logs) can say who holds what,
and `live_workers` counts the fleet (one lease connection per running worker).

A lease connection that breaks (the database restarted, a network cut) is reopened by `check`, which
takes the leases back; one another worker took meanwhile is reported lost so its owner stops using it.
While the database cannot be reached nobody can take a lease, so a holder keeps what it has.

SQLite has one worker per database file: the app uses `gateway.platforms.fleet.SoleWorker` there.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from gateway.errors import StoreError
from gateway.store.db import translate_errors

logger = logging.getLogger(__name__)

LEASE_NAMESPACE = 0x676C  # "gl"; chat locks and job locks use other namespaces
APP_PREFIX = "gateway-fleet:"
"""`application_name` of a lease connection: the prefix, then the worker's name."""
EXCLUSIVE_PAUSE_S = 0.1
EXCLUSIVE_WAIT_S = 120.0

_TAKE = text("SELECT pg_try_advisory_lock(:ns, :key)")
_RELEASE = text("SELECT pg_advisory_unlock(:ns, :key)")
_PING = text("SELECT 1")
_HOLDERS = text(
    "SELECT l.objid::bigint AS key, a.application_name AS app FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid::bigint = :ns "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
_WORKERS = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE :app"
)


def lease_key(name: str) -> int:
    """A stable signed 32-bit key for a lease name (advisory keys are int4 in the two-key form)."""
    value = zlib.crc32(name.encode("utf-8"))
    return value - (1 << 32) if value >= (1 << 31) else value


def default_worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class PostgresLeases:
    """Leases held as advisory locks on this worker's one lease connection (see the module docstring)."""

    def __init__(self, database_url: str, *, worker: str | None = None, member: bool = True) -> None:
        """`member`: this connection counts as a worker of the fleet (False for `doctor`)."""
        self.worker = worker or default_worker_name()
        self._app_name = ((APP_PREFIX if member else "gateway-observer:") + self.worker)[:63]
        self._url = database_url
        self._engine: AsyncEngine | None = None
        self._conn: AsyncConnection | None = None
        self._lock = asyncio.Lock()
        """One statement at a time on the lease connection."""
        self._held: set[str] = set()

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    async def try_take(self, name: str) -> bool:
        """Take the lease if nobody holds it; True when this worker holds it now."""
        if name in self._held:
            return True
        async with self._lock:
            if await self._run_bool(_TAKE, name, "lease"):
                self._held.add(name)
                logger.info("fleet: %s took the lease %s", self.worker, name)
                return True
        return False

    async def release(self, name: str) -> None:
        if name not in self._held:
            return
        self._held.discard(name)
        async with self._lock:
            try:
                await self._run_bool(_RELEASE, name, "lease release")
            except StoreError:  # the connection is gone, and the lease with it
                logger.warning("fleet: lease %s released with its broken connection", name)
                return
        logger.info("fleet: %s released the lease %s", self.worker, name)

    async def check(self) -> set[str]:
        """The heartbeat: verify the lease connection; after a reconnect, take the leases back.

        Returns the leases lost to another worker (their owners must stop). Raises `StoreError`
        (`DatabaseUnavailableError`) while the database cannot be reached (nothing is lost then).
        """
        async with self._lock:
            if self._conn is not None:
                try:
                    with translate_errors("lease heartbeat"):
                        await self._conn.execute(_PING)
                    return set()
                except StoreError:
                    await self._drop()
            lost: set[str] = set()
            for name in sorted(self._held):
                if not await self._run_bool(_TAKE, name, "lease"):
                    lost.add(name)
            self._held -= lost
        for name in sorted(lost):
            logger.warning("fleet: lease %s was taken by another worker while the database was away", name)
        return lost

    async def holders(self, names: list[str]) -> dict[str, str]:
        """Who holds each of `names` (worker names); a lease nobody holds is left out."""
        by_key = {lease_key(n) & 0xFFFFFFFF: n for n in names}
        async with self._lock:
            conn = await self._connection()
            with translate_errors("lease holders"):
                rows = (await conn.execute(_HOLDERS, {"ns": LEASE_NAMESPACE})).all()
        found: dict[str, str] = {}
        for key, app in rows:
            name = by_key.get(int(key))
            if name is not None:
                found[name] = str(app).removeprefix(APP_PREFIX)
        return found

    async def live_workers(self) -> int:
        """Workers with a lease connection open on this database (this one included if a member)."""
        async with self._lock:
            conn = await self._connection()
            with translate_errors("fleet members"):
                count = (await conn.execute(_WORKERS, {"app": APP_PREFIX + "%"})).scalar_one()
        return int(count)

    @asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        """Hold `name` for the block, waiting (up to `EXCLUSIVE_WAIT_S`) for another worker that holds it."""
        deadline = time.monotonic() + EXCLUSIVE_WAIT_S
        while True:
            if await self.try_take(name):
                break
            if time.monotonic() > deadline:
                raise StoreError(f"lease {name} still held by another worker after {EXCLUSIVE_WAIT_S:.0f}s")
            await asyncio.sleep(EXCLUSIVE_PAUSE_S)
        try:
            yield
        finally:
            await self.release(name)

    async def close(self) -> None:
        async with self._lock:
            self._held.clear()
            await self._drop()
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    async def _run_bool(self, statement: TextClause, name: str, operation: str) -> bool:
        conn = await self._connection()
        try:
            with translate_errors(operation):
                result = await conn.execute(statement, {"ns": LEASE_NAMESPACE, "key": lease_key(name)})
                return bool(result.scalar())
        except StoreError:
            await self._drop()
            raise

    async def _connection(self) -> AsyncConnection:
        if self._conn is None:
            if self._engine is None:
                # Its own one-connection engine: the lease connection lives as long as the process and
                # must not take a connection from the store's pool.
                self._engine = create_async_engine(
                    self._url,
                    pool_size=1,
                    max_overflow=0,
                    connect_args={"server_settings": {"application_name": self._app_name}},
                )
            with translate_errors("lease connection"):
                conn = await self._engine.connect()
                self._conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        return self._conn

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            await conn.invalidate()
            await conn.close()
        except Exception:  # already broken; closing it is all that is left to do
            logger.debug("fleet: closing a broken lease connection failed", exc_info=True)

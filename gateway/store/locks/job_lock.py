"""At most one run of a scheduled job at a time, across tasks and (on Postgres) across worker processes.

On Postgres a job takes `pg_try_advisory_xact_lock(JOB_NAMESPACE, key)` in a transaction on a connection
of its own and holds it for the whole run; a worker that finds it taken skips that run. The lock ends
with the transaction, so a crashed worker never leaves a job locked. SQLite has one process per
database file, so a process-local lock is enough there.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text

from gateway.store.db import StoreBase, translate_errors

logger = logging.getLogger(__name__)

JOB_NAMESPACE = 0x676A  # "gj"; chat locks use another namespace
"""First half of the advisory key; the second is a stable hash of the job name."""


def job_key(name: str) -> int:
    """A stable signed 32-bit key for a job name (advisory keys are int4 in the two-key form)."""
    value = zlib.crc32(name.encode("utf-8"))
    return value - (1 << 32) if value >= (1 << 31) else value


class JobLocks:
    """Non-blocking per-job locks: `async with locks.try_hold(name) as held:` runs the job if `held`."""

    def __init__(self, store: StoreBase) -> None:
        self._store = store
        self._local: dict[str, asyncio.Lock] = {}

    @asynccontextmanager
    async def try_hold(self, name: str) -> AsyncIterator[bool]:
        local = self._local.setdefault(name, asyncio.Lock())
        if local.locked():
            yield False
            return
        async with local:
            if self._store.dialect != "postgresql":
                yield True
                return
            async with self._advisory(name) as held:
                yield held

    @asynccontextmanager
    async def _advisory(self, name: str) -> AsyncIterator[bool]:
        with translate_errors("job lock"):
            conn = await self._store.engine.connect()
        try:
            with translate_errors("job lock"):
                await conn.begin()
                held = bool(
                    (
                        await conn.execute(
                            text("SELECT pg_try_advisory_xact_lock(:ns, :key)"),
                            {"ns": JOB_NAMESPACE, "key": job_key(name)},
                        )
                    ).scalar_one()
                )
            if not held:
                logger.debug("job %s is running on another worker", name)
            yield held
        finally:
            with translate_errors("job lock release"):
                await conn.rollback()
                await conn.close()

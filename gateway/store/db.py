"""Engine construction for both backends, the translation of driver errors into gateway errors, and
`StoreBase`: the engine, the clock and one transaction per call, which every part of `Store` builds on.

SQLite gets WAL, foreign keys, a busy timeout and `BEGIN IMMEDIATE` transactions (a deferred
transaction that later writes can fail at once with "database is locked" instead of waiting).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from gateway.errors import DatabaseUnavailableError, StoreError

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 10_000


def dialect_of(database_url: str) -> str:
    """'sqlite' or 'postgresql', from a SQLAlchemy URL."""
    return make_url(database_url).get_backend_name()


POOL_WAIT_S = 300.0
"""How long a query waits for a free pooled connection. A burst (thousands of updates at once) queues
here; SQLAlchemy's 30 s default turned such a queue into lost messages and failed turns."""


def create_engine(database_url: str, *, pool_size: int = 5, max_overflow: int = 10) -> AsyncEngine:
    """An async engine configured for the gateway's access pattern on SQLite or Postgres."""
    dialect = dialect_of(database_url)
    if dialect == "sqlite":
        # One connection per process: SQLite has one writer anyway, and a single connection
        # turns lock contention inside the process into an orderly queue.
        engine = create_async_engine(database_url, pool_size=1, max_overflow=0, pool_timeout=POOL_WAIT_S)
        _configure_sqlite(engine)
        return engine
    if dialect == "postgresql":
        return create_async_engine(
            database_url,
            pool_size=pool_size,
            max_overflow=max_overflow,
            # No ping per checkout (a round trip on every transaction): a connection the server
            # dropped fails its statement as a disconnect, which invalidates the whole pool, and the
            # caller sees DatabaseUnavailableError (messages are spooled, turns retried).
            pool_pre_ping=False,
            pool_timeout=POOL_WAIT_S,
        )
    raise StoreError(f"unsupported database backend {dialect!r}; use sqlite+aiosqlite or postgresql+asyncpg")


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below own the transaction start.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()
        # SQLite's built-in lower() folds ASCII only; archive search needs Unicode case folding.
        dbapi_connection.create_function("lower", 1, _lower, deterministic=True)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


# Raw driver errors only escape SQLAlchemy while a connection is being opened (refused, unknown
# database, authentication): each means the database is not there for us.
def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
)

# Postgres SQLSTATEs that mean "cannot use this database now": connection exceptions (08), bad
# credentials (28), unknown database (3D000), shutting down / starting up (57P), too many connections,
# and a database that is not accepting connections (55000, e.g. ALLOW_CONNECTIONS false during maintenance).
_UNAVAILABLE_SQLSTATES = ("08", "28", "3D000", "57P", "53300", "55000")

_TRANSLATED: tuple[type[BaseException], ...] = (SQLAlchemyError, *_CONNECTION_ERRORS)


def is_unavailable(exc: BaseException) -> bool:
    """True when the error means the database cannot be reached (as opposed to a refused statement)."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    driver_error = exc.orig if isinstance(exc, DBAPIError) else exc
    sqlstate = getattr(driver_error, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate.startswith(_UNAVAILABLE_SQLSTATES):
        return True
    return isinstance(exc, _CONNECTION_ERRORS)


@contextmanager
def translate_errors(operation: str) -> Iterator[None]:
    """Re-raise driver and SQLAlchemy errors as `DatabaseUnavailableError` or `StoreError`."""
    try:
        yield
    except StoreError:
        raise
    except _TRANSLATED as exc:
        if is_unavailable(exc):
            logger.warning("database unavailable during %s: %s", operation, type(exc).__name__)
            raise DatabaseUnavailableError(
                f"database unavailable during {operation}: {_driver_message(exc)}"
            ) from exc
        raise StoreError(f"database error during {operation}: {_driver_message(exc)}") from exc


def _driver_message(exc: BaseException) -> str:
    """The database's own words, without the SQL statement and parameters SQLAlchemy appends."""
    orig = getattr(exc, "orig", None)
    return f"{type(orig).__name__}: {orig}" if isinstance(orig, BaseException) else str(exc)


Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class StoreBase:
    """The engine, the clock and one transaction per call: what `Store` and each group of its methods
    (pins, usage, compactions, deliveries, reports, ...) build on, declared once."""

    def __init__(self, engine: AsyncEngine, *, clock: Clock = utc_now) -> None:
        self._engine = engine
        self._clock = clock
        self.dialect: str = engine.dialect.name

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    def now(self) -> datetime:
        return self._clock()

    @asynccontextmanager
    async def _tx(self, operation: str) -> AsyncIterator[AsyncConnection]:
        with translate_errors(operation):
            async with self._engine.begin() as conn:
                yield conn

    def _insert(self, table: Any) -> Any:
        return pg_insert(table) if self.dialect == "postgresql" else sqlite_insert(table)

"""Running the Alembic migrations from code: the CLI (`gateway db ...`), `doctor` and tests.

`ensure_schema` is what `gateway run` and `gateway chat` call before opening the store: an SQLite
database is brought to the newest schema on the spot, a Postgres one is only checked (several workers
may share it, so upgrading it is an explicit step).

The synchronous functions start their own event loop (through `migrations/env.py`); the `*_async`
variants run on a connection of the caller's loop, passed to env.py as `config.attributes["connection"]`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, make_url

from gateway.errors import StoreError
from gateway.store.db import create_engine, translate_errors

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def alembic_config(database_url: str | None = None, *, configure_logging: bool = False) -> Config:
    """The project's Alembic config; `database_url` overrides the settings' DATABASE_URL."""
    ini = PROJECT_ROOT / "alembic.ini"
    config = Config(str(ini)) if ini.is_file() else Config()
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    if database_url is not None:
        config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    config.attributes["configure_logging"] = configure_logging
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def upgrade(database_url: str | None = None, revision: str = "head") -> None:
    with translate_errors("migration upgrade"):
        command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str | None, revision: str) -> None:
    with translate_errors("migration downgrade"):
        command.downgrade(alembic_config(database_url), revision)


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def current_revision_async(database_url: str) -> str | None:
    """The revision the database is at (None when it has never been migrated)."""
    engine = create_engine(database_url)
    try:
        with translate_errors("reading the migration revision"):
            async with engine.connect() as conn:
                return await conn.run_sync(_current)
    finally:
        await engine.dispose()


async def upgrade_async(database_url: str, revision: str = "head") -> None:
    await _run_async(database_url, revision, upgrade=True)


async def downgrade_async(database_url: str, revision: str) -> None:
    await _run_async(database_url, revision, upgrade=False)


async def _run_async(database_url: str, revision: str, *, upgrade: bool) -> None:
    config = alembic_config(database_url)
    engine = create_engine(database_url)

    def run(connection: Connection) -> None:
        config.attributes["connection"] = connection
        if upgrade:
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)

    try:
        with translate_errors("migration"):
            async with engine.begin() as conn:
                await conn.run_sync(run)
    finally:
        await engine.dispose()


class SchemaBehindError(StoreError):
    """The database's schema is older than this code and is not upgraded automatically (Postgres)."""


UPGRADE_HINT = "run `python -m gateway db upgrade`"


async def ensure_schema(database_url: str) -> str | None:
    """Bring an SQLite database to the newest schema, or check that a Postgres one is there.

    Returns what was done, for a log line (None: the schema was already current). Raises
    `SchemaBehindError` for a Postgres database that is missing migrations, `StoreError` when the
    database cannot be read or migrated.
    """
    current = await current_revision_async(database_url)
    head = head_revision()
    if current == head:
        return None
    if make_url(database_url).get_backend_name() != "sqlite":
        raise SchemaBehindError(
            f"the database schema is at {current or 'nothing (never migrated)'}, this version needs "
            f"{head}: {UPGRADE_HINT}"
        )
    await upgrade_async(database_url)
    done = f"migrated the SQLite database from {current or 'empty'} to {head}"
    logger.info("%s", done)
    return done

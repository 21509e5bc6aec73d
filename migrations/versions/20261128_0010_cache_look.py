"""sessions.cache_look_at: when the cache keep-alive job next looks at a session's prompt cache, set with
every write of its cache state, so the job's scan reads only the sessions due (partial index
ix_sessions_cache_look) instead of every session active in the last day.

Sessions with a cache state are due at once after the upgrade: the job's first look sets their time.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("cache_look_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_sessions_cache_look",
        "sessions",
        ["cache_look_at"],
        unique=False,
        postgresql_where=sa.text("active"),
        sqlite_where=sa.text("active"),
    )
    op.execute(
        "UPDATE sessions SET cache_look_at = CURRENT_TIMESTAMP WHERE active AND cache_state IS NOT NULL"
    )


def downgrade() -> None:
    op.drop_index("ix_sessions_cache_look", table_name="sessions")
    op.drop_column("sessions", "cache_look_at")

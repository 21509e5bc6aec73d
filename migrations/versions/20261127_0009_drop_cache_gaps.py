"""Drop sessions.cache_gaps: the gaps between turns were kept there for a cache-TTL policy that now
learns from the turn starts in sessions.cache_state (agent.caching.forecast); nothing read them.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ALTER TABLE .. DROP COLUMN on both databases (SQLite has it since 3.35): a batch copy of
    # the table would drop the old one, and with foreign keys on that deletes every session's messages.
    op.drop_column("sessions", "cache_gaps")


def downgrade() -> None:
    op.add_column("sessions", sa.Column("cache_gaps", sa.JSON(), nullable=False, server_default="[]"))

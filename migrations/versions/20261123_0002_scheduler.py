"""Scheduled jobs: sessions.last_activity_at (+ idle index), usage_daily, retention and rollup indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("last_activity_at", sa.DateTime(timezone=True), nullable=True))
    # Existing sessions: the newest stored message, else the session's creation.
    op.execute(
        "UPDATE sessions SET last_activity_at = COALESCE("
        "(SELECT MAX(m.created_at) FROM messages m WHERE m.session_pk = sessions.id), created_at)"
    )
    op.create_index(
        "ix_sessions_idle",
        "sessions",
        ["last_activity_at"],
        unique=False,
        postgresql_where=sa.text("active"),
        sqlite_where=sa.text("active"),
    )
    op.create_index(
        "ix_messages_archived_created",
        "messages",
        ["created_at"],
        unique=False,
        postgresql_where=sa.text("state = 'archived'"),
        sqlite_where=sa.text("state = 'archived'"),
    )
    op.create_index("ix_llm_calls_created", "llm_calls", ["created_at"], unique=False)
    op.create_table(
        "usage_daily",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_read_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_write_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_usd", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_usage_daily_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_daily")),
        sa.UniqueConstraint("day", "chat_pk", "model", name=op.f("uq_usage_daily_day_chat_pk_model")),
    )
    op.create_index(op.f("ix_usage_daily_chat_pk"), "usage_daily", ["chat_pk"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_usage_daily_chat_pk"), table_name="usage_daily")
    op.drop_table("usage_daily")
    op.drop_index("ix_llm_calls_created", table_name="llm_calls")
    op.drop_index(
        "ix_messages_archived_created",
        table_name="messages",
        postgresql_where=sa.text("state = 'archived'"),
        sqlite_where=sa.text("state = 'archived'"),
    )
    op.drop_index(
        "ix_sessions_idle",
        table_name="sessions",
        postgresql_where=sa.text("active"),
        sqlite_where=sa.text("active"),
    )
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("last_activity_at")

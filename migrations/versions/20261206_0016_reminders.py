"""reminders, reminder_occurrences, chat_timezones: scheduled messages and tasks, each due time sent once.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 18:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "reminders",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("creator_id", sa.String(length=128), nullable=True),
        sa.Column("creator_name", sa.String(length=256), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("rrule", sa.String(length=512), nullable=True),
        sa.Column("tz", sa.String(length=64), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_reminders_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reminders")),
    )
    op.create_index(
        "ix_reminders_next_due",
        "reminders",
        ["next_due_at"],
        postgresql_where=sa.text("state = 'active'"),
        sqlite_where=sa.text("state = 'active'"),
    )
    op.create_index("ix_reminders_chat_pk_state", "reminders", ["chat_pk", "state"])
    op.create_table(
        "reminder_occurrences",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("reminder_id", BigId, nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("platform_message_id", sa.String(length=128), nullable=True),
        sa.Column("late_s", sa.Double(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["reminder_id"],
            ["reminders.id"],
            name=op.f("fk_reminder_occurrences_reminder_id_reminders"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reminder_occurrences")),
        sa.UniqueConstraint("reminder_id", "due_at", name=op.f("uq_reminder_occurrences_reminder_id_due_at")),
    )
    op.create_index(
        "ix_reminder_occurrences_open",
        "reminder_occurrences",
        ["due_at"],
        postgresql_where=sa.text("state IN ('due', 'sending')"),
        sqlite_where=sa.text("state IN ('due', 'sending')"),
    )
    op.create_table(
        "chat_timezones",
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("tz", sa.String(length=64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_chat_timezones_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chat_pk", name=op.f("pk_chat_timezones")),
    )


def downgrade() -> None:
    op.drop_table("chat_timezones")
    op.drop_index("ix_reminder_occurrences_open", table_name="reminder_occurrences")
    op.drop_table("reminder_occurrences")
    op.drop_index("ix_reminders_chat_pk_state", table_name="reminders")
    op.drop_index("ix_reminders_next_due", table_name="reminders")
    op.drop_table("reminders")

"""Deliveries: every part of a reply the bot sends, with its state (pending, sending, sent, failed).

A reply's parts are recorded in the transaction that marks its messages answered, so a reply stored
but not yet sent when the process died is sent after the restart; a sent part keeps the platform's
message id (which stored reply a platform message belongs to).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("message_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("reply_to", sa.String(length=128), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("platform_message_id", sa.String(length=128), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_deliveries_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["message_pk"],
            ["messages.id"],
            name=op.f("fk_deliveries_message_pk_messages"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
    )
    op.create_index(
        "ix_deliveries_chat_pk_platform_message_id",
        "deliveries",
        ["chat_pk", "platform_message_id"],
        unique=False,
    )
    op.create_index(
        "ix_deliveries_open",
        "deliveries",
        ["updated_at"],
        unique=False,
        postgresql_where=sa.text("state IN ('pending', 'sending')"),
        sqlite_where=sa.text("state IN ('pending', 'sending')"),
    )


def downgrade() -> None:
    op.drop_index("ix_deliveries_open", table_name="deliveries")
    op.drop_index("ix_deliveries_chat_pk_platform_message_id", table_name="deliveries")
    op.drop_table("deliveries")

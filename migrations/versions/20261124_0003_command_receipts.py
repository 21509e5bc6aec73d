"""Command receipts: redelivered command updates are recognised and not run twice.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "command_receipts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("platform_message_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_command_receipts_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_command_receipts")),
        sa.UniqueConstraint(
            "chat_pk", "platform_message_id", name=op.f("uq_command_receipts_chat_pk_platform_message_id")
        ),
    )


def downgrade() -> None:
    op.drop_table("command_receipts")

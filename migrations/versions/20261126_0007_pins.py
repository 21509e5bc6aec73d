"""Pinned facts: what an admin asked the bot to keep word for word in every request of a chat.

Pins belong to the chat, not to a session: `/new`, compaction and restarts leave them in place.

Revision ID: 0007
Revises: 0005
Create Date: 2026-11-26 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pins",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("author_id", sa.String(length=128), nullable=True),
        sa.Column("author_name", sa.String(length=256), nullable=True),
        sa.Column("source_message_id", sa.String(length=128), nullable=True),
        sa.Column("token_estimate", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_pins_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pins")),
    )
    op.create_index(op.f("ix_pins_chat_pk"), "pins", ["chat_pk"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_pins_chat_pk"), table_name="pins")
    op.drop_table("pins")

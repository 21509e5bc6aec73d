"""dashboard_actions: the audit log of the admin dashboard (compact, undo: chat, client, outcome).

Revision ID: 0018
Revises: 0015
Create Date: 2026-12-06 18:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dashboard_actions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("client", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"],
            ["chats.id"],
            name=op.f("fk_dashboard_actions_chat_pk_chats"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dashboard_actions")),
    )
    op.create_index(
        "ix_dashboard_actions_chat_created", "dashboard_actions", ["chat_pk", "created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_dashboard_actions_chat_created", table_name="dashboard_actions")
    op.drop_table("dashboard_actions")

"""webhook_registrations: what the fleet last registered as each bot's webhook (URL, a hash of the
secret token, update types, max_connections), so a worker re-registers when its settings differ.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_registrations",
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("bot_id", sa.String(length=64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("allowed_updates", sa.JSON(), nullable=False),
        sa.Column("max_connections", sa.Integer(), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("worker", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("platform", "bot_id", name=op.f("pk_webhook_registrations")),
    )


def downgrade() -> None:
    op.drop_table("webhook_registrations")

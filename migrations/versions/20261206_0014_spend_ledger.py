"""spend_ledger and spend_reservations: the hard spending caps. One line per scope and period with
what was spent and what calls in flight hold; one row per call in flight.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06 04:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "spend_ledger",
        sa.Column("scope", sa.String(length=160), nullable=False),
        sa.Column("period", sa.String(length=10), nullable=False),
        sa.Column("spent_usd", sa.Double(), nullable=False),
        sa.Column("reserved_usd", sa.Double(), nullable=False),
        sa.Column("cap_usd", sa.Double(), nullable=False),
        sa.Column("warned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("exhausted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("scope", "period", name=op.f("pk_spend_ledger")),
    )
    op.create_table(
        "spend_reservations",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("amount_usd", sa.Double(), nullable=False),
        sa.Column("lines", sa.JSON(), nullable=False),
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("worker", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spend_reservations")),
    )
    op.create_index("ix_spend_reservations_created", "spend_reservations", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_spend_reservations_created", table_name="spend_reservations")
    op.drop_table("spend_reservations")
    op.drop_table("spend_ledger")

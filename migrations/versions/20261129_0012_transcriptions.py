"""transcriptions: one row per attempt to transcribe a voice note (outcome, model, length, latency), so
`/stats` can count what was heard and what failed, and a later model can find the sound to redo.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "transcriptions",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("media_id", BigId, nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("duration_s", sa.Double(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_transcriptions_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["media_id"], ["media.id"], name=op.f("fk_transcriptions_media_id_media"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transcriptions")),
    )
    op.create_index(
        "ix_transcriptions_chat_created", "transcriptions", ["chat_pk", "created_at"], unique=False
    )
    op.create_index("ix_transcriptions_media_id", "transcriptions", ["media_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_transcriptions_media_id", table_name="transcriptions")
    op.drop_index("ix_transcriptions_chat_created", table_name="transcriptions")
    op.drop_table("transcriptions")

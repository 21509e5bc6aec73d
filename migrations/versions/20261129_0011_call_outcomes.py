"""llm_calls.refusal and llm_calls.thinking_dropped: what the model declined (by category) and how many
thinking blocks the API dropped from a request, so `/stats` and the metrics can show both; and
sessions.prompt_pins: the pins a session's system prompt carries and those the model was told of since
(on models that take mid-conversation system messages a pin change is told, not written into the
prompt), NULL when the system prompt follows the chat's current pins.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("prompt_pins", sa.JSON(), nullable=True))
    with op.batch_alter_table("llm_calls") as batch:
        batch.add_column(sa.Column("refusal", sa.String(32), nullable=True))
        batch.add_column(sa.Column("thinking_dropped", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("llm_calls") as batch:
        batch.drop_column("thinking_dropped")
        batch.drop_column("refusal")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("prompt_pins")

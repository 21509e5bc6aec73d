"""llm_calls.web_searches and llm_calls.web_fetches: the lookups the API's own web tools ran in each call
(a search is billed per use, already in `cost_usd`), so `/stats` can show them and their fee.

Revision ID: 0017
Revises: 0015
Create Date: 2026-12-06 18:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("llm_calls") as batch:
        batch.add_column(sa.Column("web_searches", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("web_fetches", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("llm_calls") as batch:
        batch.drop_column("web_fetches")
        batch.drop_column("web_searches")

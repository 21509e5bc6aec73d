"""job_runs: the last run of each scheduled job across the fleet (when, result, worker), so `doctor`
can list the jobs with their next run and report one that has not succeeded for three intervals.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 09:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_runs",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("every_s", sa.Integer(), nullable=False),
        sa.Column("first_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_ok_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_result", sa.String(length=16), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("worker", sa.String(length=128), nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_job_runs")),
    )


def downgrade() -> None:
    op.drop_table("job_runs")

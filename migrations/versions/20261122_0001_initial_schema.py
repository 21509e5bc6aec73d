"""Initial schema: chats, sessions, messages, compactions, llm_calls.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 01:30:22.614389
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chats",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("thread_id", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=512), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chats")),
        sa.UniqueConstraint(
            "platform", "chat_id", "thread_id", name=op.f("uq_chats_platform_chat_id_thread_id")
        ),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_seq", sa.BigInteger(), nullable=False),
        sa.Column("active_message_count", sa.Integer(), nullable=False),
        sa.Column("active_tokens", sa.Integer(), nullable=False),
        sa.Column("tokens_since_call", sa.Integer(), nullable=False),
        sa.Column("last_prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("last_call_message_id", sa.BigInteger(), nullable=True),
        sa.Column("last_call_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("rolling_summary", sa.Text(), nullable=True),
        sa.Column("compaction_count", sa.Integer(), nullable=False),
        sa.Column("engine_state", sa.JSON(), nullable=False),
        sa.Column("cache_gaps", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_sessions_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
    )
    op.create_index(op.f("ix_sessions_chat_pk"), "sessions", ["chat_pk"], unique=False)
    op.create_index(
        "uq_sessions_one_active_per_chat",
        "sessions",
        ["chat_pk"],
        unique=True,
        postgresql_where=sa.text("active"),
        sqlite_where=sa.text("active"),
    )
    op.create_table(
        "compactions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_pk", sa.Integer(), nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("tokens_before", sa.Integer(), nullable=False),
        sa.Column("tokens_after", sa.Integer(), nullable=False),
        sa.Column("messages_before", sa.Integer(), nullable=False),
        sa.Column("messages_after", sa.Integer(), nullable=False),
        sa.Column("summary_message_id", sa.BigInteger(), nullable=True),
        sa.Column("summarizer_model", sa.String(length=128), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("undone", sa.Boolean(), nullable=False),
        sa.Column("archived_count", sa.Integer(), nullable=False),
        sa.Column("prev_engine_state", sa.JSON(), nullable=False),
        sa.Column("prev_rolling_summary", sa.Text(), nullable=True),
        sa.Column("prev_active_tokens", sa.Integer(), nullable=False),
        sa.Column("pruned_ids", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_compactions_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.id"],
            name=op.f("fk_compactions_session_pk_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compactions")),
    )
    op.create_index(op.f("ix_compactions_chat_pk"), "compactions", ["chat_pk"], unique=False)
    op.create_index(op.f("ix_compactions_session_pk"), "compactions", ["session_pk"], unique=False)
    op.create_table(
        "llm_calls",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("session_pk", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cache_creation_tokens", sa.Integer(), nullable=False),
        sa.Column("cache_read_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Double(), nullable=False),
        sa.Column("cache_ttl", sa.String(length=8), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_llm_calls_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["session_pk"],
            ["sessions.id"],
            name=op.f("fk_llm_calls_session_pk_sessions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_calls")),
    )
    op.create_index("ix_llm_calls_chat_created", "llm_calls", ["chat_pk", "created_at"], unique=False)
    op.create_table(
        "messages",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("session_pk", sa.Integer(), nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("author_id", sa.String(length=128), nullable=True),
        sa.Column("author_name", sa.String(length=256), nullable=True),
        sa.Column("platform_message_id", sa.String(length=128), nullable=True),
        sa.Column("token_estimate", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("pruned", sa.Boolean(), nullable=False),
        sa.Column("needs_reply", sa.Boolean(), nullable=False),
        sa.Column("replied", sa.Boolean(), nullable=False),
        sa.Column("archived_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["archived_by"],
            ["compactions.id"],
            name=op.f("fk_messages_archived_by_compactions"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_messages_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["session_pk"], ["sessions.id"], name=op.f("fk_messages_session_pk_sessions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint(
            "chat_pk", "platform_message_id", name=op.f("uq_messages_chat_pk_platform_message_id")
        ),
    )
    op.create_index("ix_messages_chat_state", "messages", ["chat_pk", "state"], unique=False)
    op.create_index(
        "ix_messages_unanswered",
        "messages",
        ["created_at"],
        unique=False,
        postgresql_where=sa.text("needs_reply AND NOT replied"),
        sqlite_where=sa.text("needs_reply AND NOT replied"),
    )
    op.create_index("ix_messages_window", "messages", ["session_pk", "state", "seq"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_messages_window", table_name="messages")
    op.drop_index(
        "ix_messages_unanswered",
        table_name="messages",
        postgresql_where=sa.text("needs_reply AND NOT replied"),
        sqlite_where=sa.text("needs_reply AND NOT replied"),
    )
    op.drop_index("ix_messages_chat_state", table_name="messages")
    op.drop_table("messages")
    op.drop_index("ix_llm_calls_chat_created", table_name="llm_calls")
    op.drop_table("llm_calls")
    op.drop_index(op.f("ix_compactions_session_pk"), table_name="compactions")
    op.drop_index(op.f("ix_compactions_chat_pk"), table_name="compactions")
    op.drop_table("compactions")
    op.drop_index(
        "uq_sessions_one_active_per_chat",
        table_name="sessions",
        postgresql_where=sa.text("active"),
        sqlite_where=sa.text("active"),
    )
    op.drop_index(op.f("ix_sessions_chat_pk"), table_name="sessions")
    op.drop_table("sessions")
    op.drop_table("chats")

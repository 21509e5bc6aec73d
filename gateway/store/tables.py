"""The schema: SQLAlchemy 2.0 typed ORM tables shared by SQLite and Postgres.

Only `gateway/store/` imports this module; the Alembic migrations in `migrations/` must agree with it
(a test compares them). `messages.seq` orders a session's window (ties broken by `id`), and window
reads go through the (session_pk, state, seq) index so archived history is never scanned.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import (
    text as sql_text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments an INTEGER PRIMARY KEY; Postgres gets a BIGINT identity for the big tables.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on both backends (SQLite hands back naive values otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; pass a timezone-aware value")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
    }


class Chat(Base):
    __tablename__ = "chats"
    __table_args__ = (UniqueConstraint("platform", "chat_id", "thread_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String(32))
    chat_id: Mapped[str] = mapped_column(String(128))
    thread_id: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(32))
    title: Mapped[str | None] = mapped_column(String(512))
    created_at: Mapped[datetime]


class Pin(Base):
    """A fact pinned in a chat (`/pin`): carried word for word in every request, whatever the session."""

    __tablename__ = "pins"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), index=True)
    text: Mapped[str] = mapped_column(Text)
    author_id: Mapped[str | None] = mapped_column(String(128))
    author_name: Mapped[str | None] = mapped_column(String(256))
    source_message_id: Mapped[str | None] = mapped_column(String(128))
    token_estimate: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]


class ChatSession(Base):
    __tablename__ = "sessions"
    __table_args__ = (
        # Exactly one active session per chat; also the conflict target of the race-safe insert.
        Index(
            "uq_sessions_one_active_per_chat",
            "chat_pk",
            unique=True,
            postgresql_where=sql_text("active"),
            sqlite_where=sql_text("active"),
        ),
        # The scheduler's scan for idle active sessions (proactive and cache-aware compaction).
        Index(
            "ix_sessions_idle",
            "last_activity_at",
            postgresql_where=sql_text("active"),
            sqlite_where=sql_text("active"),
        ),
        # The cache keep-alive job's scan for sessions due a look (gateway.store.cache.looks).
        Index(
            "ix_sessions_cache_look",
            "cache_look_at",
            postgresql_where=sql_text("active"),
            sqlite_where=sql_text("active"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), index=True)
    active: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
    next_seq: Mapped[int] = mapped_column(BigInteger)
    active_message_count: Mapped[int] = mapped_column(Integer)
    active_tokens: Mapped[int] = mapped_column(Integer)
    tokens_since_call: Mapped[int] = mapped_column(Integer)
    last_prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    # No foreign key: sessions <-> messages would be a cycle; the id is informational.
    last_call_message_id: Mapped[int | None] = mapped_column(BigInteger)
    last_call_at: Mapped[datetime | None]
    rolling_summary: Mapped[str | None] = mapped_column(Text)
    compaction_count: Mapped[int] = mapped_column(Integer)
    engine_state: Mapped[dict[str, Any]]
    # What the prompt cache holds (agent.caching.plan.CacheState as JSON), so every worker plans alike.
    cache_state: Mapped[dict[str, Any] | None]
    # When the keep-alive job next looks at that cache (agent.caching.keepalive.next_look), or NULL.
    cache_look_at: Mapped[datetime | None]
    # When a message was last stored in the session (arrival time, not the platform's timestamp).
    last_activity_at: Mapped[datetime | None]
    # The pins its system prompt carries and those told since (records.PromptPins), or NULL.
    prompt_pins: Mapped[dict[str, Any] | None]


class Compaction(Base):
    __tablename__ = "compactions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_pk: Mapped[int] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), index=True)
    trigger: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    tokens_before: Mapped[int] = mapped_column(Integer)
    tokens_after: Mapped[int] = mapped_column(Integer)
    messages_before: Mapped[int] = mapped_column(Integer)
    messages_after: Mapped[int] = mapped_column(Integer)
    # No foreign key: messages.archived_by already points here.
    summary_message_id: Mapped[int | None] = mapped_column(BigInteger)
    summarizer_model: Mapped[str | None] = mapped_column(String(128))
    duration_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    undone: Mapped[bool] = mapped_column(Boolean)
    archived_count: Mapped[int] = mapped_column(Integer)
    prev_engine_state: Mapped[dict[str, Any]]
    prev_rolling_summary: Mapped[str | None] = mapped_column(Text)
    prev_active_tokens: Mapped[int] = mapped_column(Integer)
    pruned_ids: Mapped[list[Any]]


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        # A redelivered platform update is stored once; NULL ids (agent turns) never collide.
        UniqueConstraint("chat_pk", "platform_message_id"),
        Index("ix_messages_window", "session_pk", "state", "seq"),
        Index("ix_messages_chat_state", "chat_pk", "state"),
        Index(
            "ix_messages_unanswered",
            "created_at",
            postgresql_where=sql_text("needs_reply AND NOT replied"),
            sqlite_where=sql_text("needs_reply AND NOT replied"),
        ),
        # Archive retention deletes by age without scanning the window rows.
        Index(
            "ix_messages_archived_created",
            "created_at",
            postgresql_where=sql_text("state = 'archived'"),
            sqlite_where=sql_text("state = 'archived'"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_pk: Mapped[int] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(BigInteger)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[Any] = mapped_column(JSON)
    text: Mapped[str] = mapped_column(Text)
    author_id: Mapped[str | None] = mapped_column(String(128))
    author_name: Mapped[str | None] = mapped_column(String(256))
    platform_message_id: Mapped[str | None] = mapped_column(String(128))
    token_estimate: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    pruned: Mapped[bool] = mapped_column(Boolean)
    needs_reply: Mapped[bool] = mapped_column(Boolean)
    replied: Mapped[bool] = mapped_column(Boolean)
    archived_by: Mapped[int | None] = mapped_column(ForeignKey("compactions.id", ondelete="SET NULL"))
    created_at: Mapped[datetime]


class LlmCall(Base):
    __tablename__ = "llm_calls"
    __table_args__ = (
        Index("ix_llm_calls_chat_created", "chat_pk", "created_at"),
        Index("ix_llm_calls_created", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    session_pk: Mapped[int | None] = mapped_column(ForeignKey("sessions.id", ondelete="SET NULL"))
    model: Mapped[str] = mapped_column(String(128))
    purpose: Mapped[str] = mapped_column(String(16))
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    cache_creation_tokens: Mapped[int] = mapped_column(Integer)
    cache_read_tokens: Mapped[int] = mapped_column(Integer)
    latency_ms: Mapped[int] = mapped_column(Integer)
    cost_usd: Mapped[float] = mapped_column(Double)
    cache_ttl: Mapped[str | None] = mapped_column(String(8))
    refusal: Mapped[str | None] = mapped_column(String(32))
    """The category of a refusal (`stop_reason: "refusal"`); None when the model answered."""
    thinking_dropped: Mapped[int] = mapped_column(Integer, server_default="0")
    """Thinking blocks the API dropped from this request (its prefix check, `drop_block`)."""
    web_searches: Mapped[int] = mapped_column(Integer, server_default="0")
    """Searches the API's web search tool ran in this call (billed per search, in `cost_usd`)."""
    web_fetches: Mapped[int] = mapped_column(Integer, server_default="0")
    """Pages the API's web fetch tool read in this call."""
    created_at: Mapped[datetime]


class UsageDaily(Base):
    """Per day, chat and model: calls, tokens by kind and cost, rolled up from `llm_calls` by a job."""

    __tablename__ = "usage_daily"
    __table_args__ = (UniqueConstraint("day", "chat_pk", "model"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    day: Mapped[date] = mapped_column(Date)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), index=True)
    model: Mapped[str] = mapped_column(String(128))
    calls: Mapped[int] = mapped_column(Integer)
    input_tokens: Mapped[int] = mapped_column(BigInteger)
    output_tokens: Mapped[int] = mapped_column(BigInteger)
    cache_read_tokens: Mapped[int] = mapped_column(BigInteger)
    cache_write_tokens: Mapped[int] = mapped_column(BigInteger)
    cost_usd: Mapped[float] = mapped_column(Double)
    updated_at: Mapped[datetime]


class JobRun(Base):
    """The last run of each scheduled job across the fleet: when, how it went, on which worker.

    One row per job name, upserted after every run that was not skipped; `last_ok_at` moves only on a
    run that succeeded, so `doctor` and the watchdog can tell a job that keeps failing from one that runs.
    `first_run_at` is the first run ever recorded (a job that never succeeded is overdue from then).
    """

    __tablename__ = "job_runs"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    every_s: Mapped[int] = mapped_column(Integer)
    first_run_at: Mapped[datetime]
    last_run_at: Mapped[datetime]
    last_ok_at: Mapped[datetime | None]
    last_result: Mapped[str] = mapped_column(String(16))
    last_error: Mapped[str | None] = mapped_column(Text)
    worker: Mapped[str] = mapped_column(String(128))
    runs: Mapped[int] = mapped_column(BigInteger)


class WebhookRegistration(Base):
    """What the fleet last registered as a bot's webhook: the URL, a hash of the secret token (never
    the token), the update types and `max_connections`. The platform reports neither the secret nor,
    always, the rest, so a worker compares its settings with this row to know whether to register again.
    """

    __tablename__ = "webhook_registrations"

    platform: Mapped[str] = mapped_column(String(16), primary_key=True)
    bot_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    secret_hash: Mapped[str] = mapped_column(String(64))
    allowed_updates: Mapped[list[str]] = mapped_column(JSON)
    max_connections: Mapped[int] = mapped_column(Integer)
    registered_at: Mapped[datetime]
    worker: Mapped[str] = mapped_column(String(128))


class SpendLine(Base):
    """One budget line: a scope's spend in one period (`bot`, `chat:42`, `user:telegram:7` by day
    `2026-12-06` or month `2026-12`), with what calls in flight have reserved against it."""

    __tablename__ = "spend_ledger"

    scope: Mapped[str] = mapped_column(String(160), primary_key=True)
    period: Mapped[str] = mapped_column(String(10), primary_key=True)
    spent_usd: Mapped[float] = mapped_column(Double)
    reserved_usd: Mapped[float] = mapped_column(Double)
    cap_usd: Mapped[float] = mapped_column(Double)
    """The cap the line was last held against (the operator may change it)."""
    warned_at: Mapped[datetime | None]
    """When the line passed the warning share (told once per line)."""
    exhausted_at: Mapped[datetime | None]
    """When a call first did not fit the line: it counts as spent until its period ends."""
    updated_at: Mapped[datetime]


class SpendReservation(Base):
    """A call in flight: its worst case, held on `lines` until the call is settled or released."""

    __tablename__ = "spend_reservations"
    __table_args__ = (Index("ix_spend_reservations_created", "created_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    amount_usd: Mapped[float] = mapped_column(Double)
    lines: Mapped[list[list[str]]] = mapped_column(JSON)
    """[[scope, period], ...] of the ledger lines the amount is held on."""
    purpose: Mapped[str] = mapped_column(String(32))
    worker: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]


class CommandReceipt(Base):
    """A command update already handled in a chat, so a platform's redelivery does not run it twice."""

    __tablename__ = "command_receipts"
    __table_args__ = (UniqueConstraint("chat_pk", "platform_message_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    platform_message_id: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]


class Media(Base):
    """One image or PDF a chat received, stored once per chat by content (sha256 of the stored bytes).

    Messages refer to it through `message_media`; rows no message refers to any more are deleted by
    archive retention once unused for as long as archived messages are kept.
    """

    __tablename__ = "media"
    __table_args__ = (UniqueConstraint("chat_pk", "sha256"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    sha256: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    media_type: Mapped[str] = mapped_column(String(64))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    byte_size: Mapped[int] = mapped_column(Integer)
    width: Mapped[int | None] = mapped_column(Integer)
    height: Mapped[int | None] = mapped_column(Integer)
    pages: Mapped[int | None] = mapped_column(Integer)
    tokens: Mapped[int] = mapped_column(Integer)
    filename: Mapped[str | None] = mapped_column(String(256))
    created_at: Mapped[datetime]
    last_used_at: Mapped[datetime]


class MessageMedia(Base):
    """Which media a message carries (in order); deleting the message deletes its links."""

    __tablename__ = "message_media"
    __table_args__ = (Index("ix_message_media_media_id", "media_id"),)

    message_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    media_id: Mapped[int] = mapped_column(BigId, ForeignKey("media.id", ondelete="CASCADE"))


class MessageVector(Base):
    """A stored message's embedding (float32, unit length) for semantic recall; one per message."""

    __tablename__ = "message_vectors"
    __table_args__ = (Index("ix_message_vectors_chat_pk_message_id", "chat_pk", "message_id"),)

    message_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    model: Mapped[str] = mapped_column(String(128))
    dims: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime]


class Delivery(Base):
    """One part of a reply the bot sends: its text, where it goes and how far it got.

    `state`: pending (recorded, not sent), sending (an attempt is under way), sent (with the platform's
    message id), failed (with the reason; not retried). `message_pk` is the stored reply it carries.
    """

    __tablename__ = "deliveries"
    __table_args__ = (
        Index("ix_deliveries_chat_pk_platform_message_id", "chat_pk", "platform_message_id"),
        Index(
            "ix_deliveries_open",
            "updated_at",
            postgresql_where=sql_text("state IN ('pending', 'sending')"),
            sqlite_where=sql_text("state IN ('pending', 'sending')"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    message_pk: Mapped[int | None] = mapped_column(BigId, ForeignKey("messages.id", ondelete="SET NULL"))
    part: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    reply_to: Mapped[str | None] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(16))
    platform_message_id: Mapped[str | None] = mapped_column(String(128))
    attempts: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Transcription(Base):
    """One attempt to transcribe a voice note, audio file or video note: what was used and how it went.

    `/stats` counts them; `media_id` points at the stored sound (NULL once retention deleted it, or when
    it was never downloaded), and `model` says which model heard it, so a better one can redo it.
    """

    __tablename__ = "transcriptions"
    __table_args__ = (Index("ix_transcriptions_chat_created", "chat_pk", "created_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    media_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("media.id", ondelete="SET NULL"), index=True
    )
    outcome: Mapped[str] = mapped_column(String(16))
    """"ok", or the failure's cause (`TranscriptionError.cause`: timeout, auth, too_long...)."""
    reason: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(128))
    duration_s: Mapped[float | None] = mapped_column(Double)
    latency_ms: Mapped[int] = mapped_column(Integer)
    chars: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]


class DashboardAction(Base):
    """One action taken from the admin dashboard (compact, undo): on which chat, from where, and how it
    went. Shown on the chat's page; nothing else reads it."""

    __tablename__ = "dashboard_actions"
    __table_args__ = (Index("ix_dashboard_actions_chat_created", "chat_pk", "created_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(16))
    """"ok", "nothing" (nothing to do or undo) or "failed"."""
    detail: Mapped[str] = mapped_column(Text)
    client: Mapped[str] = mapped_column(String(64))
    """The client's address as the dashboard saw it (after trusted proxies)."""
    created_at: Mapped[datetime]


class Reminder(Base):
    """A scheduled message or task of a chat (`schedule_message`): what, when next, how it repeats.

    The chat row is the place it goes to (a forum topic or thread is its own chat). `rrule` repeats
    from `first_at` on the chat's wall clock in `tz`; `next_due_at` is None once nothing is left.
    `state`: active, done, cancelled. The ticker reads only the partial index on `next_due_at`.
    """

    __tablename__ = "reminders"
    __table_args__ = (
        Index(
            "ix_reminders_next_due",
            "next_due_at",
            postgresql_where=sql_text("state = 'active'"),
            sqlite_where=sql_text("state = 'active'"),
        ),
        Index("ix_reminders_chat_pk_state", "chat_pk", "state"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    creator_id: Mapped[str | None] = mapped_column(String(128))
    creator_name: Mapped[str | None] = mapped_column(String(256))
    kind: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    rrule: Mapped[str | None] = mapped_column(String(512))
    tz: Mapped[str] = mapped_column(String(64))
    first_at: Mapped[datetime]
    next_due_at: Mapped[datetime | None]
    state: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]


class ReminderOccurrence(Base):
    """One reminder at one due time, sent by exactly one worker.

    `state`: due -> sending (claimed; `attempts` counts claims) -> delivered (with the platform's
    message id), missed (past the late window: the chat is told instead), or failed (the reason).
    """

    __tablename__ = "reminder_occurrences"
    __table_args__ = (
        UniqueConstraint("reminder_id", "due_at"),
        Index(
            "ix_reminder_occurrences_open",
            "due_at",
            postgresql_where=sql_text("state IN ('due', 'sending')"),
            sqlite_where=sql_text("state IN ('due', 'sending')"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    reminder_id: Mapped[int] = mapped_column(BigId, ForeignKey("reminders.id", ondelete="CASCADE"))
    due_at: Mapped[datetime]
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    claimed_at: Mapped[datetime | None]
    platform_message_id: Mapped[str | None] = mapped_column(String(128))
    late_s: Mapped[float | None] = mapped_column(Double)
    error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime]


class ChatTimezone(Base):
    """A chat's time zone (`/timezone`); a chat without a row uses `reminders.default_timezone`."""

    __tablename__ = "chat_timezones"

    chat_pk: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    tz: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime]

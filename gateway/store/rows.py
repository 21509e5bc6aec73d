"""Row -> record conversion and the clean-up applied to text before it reaches the database.

Postgres rejects NUL (U+0000) in text and JSON strings, so every NUL in a message's text or content
is replaced by U+FFFD on insert: the message is still stored, and the replacement is visible.
"""

from __future__ import annotations

from typing import Any, TypeAlias, cast

from sqlalchemy import Row, Select, Table

from gateway.store.records import (
    ChatRecord,
    CompactionRecord,
    Content,
    MessageState,
    Outcome,
    PromptPins,
    Role,
    SessionRecord,
    StoredMessage,
    Trigger,
)
from gateway.store.tables import Chat, ChatSession, Compaction, LlmCall, Message

NUL_REPLACEMENT = "\ufffd"

AnySelect: TypeAlias = Select[*tuple[Any, ...]]

chats = cast(Table, Chat.__table__)
sessions = cast(Table, ChatSession.__table__)
messages = cast(Table, Message.__table__)
compactions = cast(Table, Compaction.__table__)
llm_calls = cast(Table, LlmCall.__table__)


def clean_text(value: str) -> str:
    return value.replace("\x00", NUL_REPLACEMENT) if "\x00" in value else value


def clean_json(value: Any) -> Any:
    """A copy of a JSON value with NUL replaced in every string (keys included)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    return value


def to_chat(row: Row[Any]) -> ChatRecord:
    return ChatRecord(
        id=row.id,
        platform=row.platform,
        chat_id=row.chat_id,
        thread_id=row.thread_id,
        kind=row.kind,
        title=row.title,
        created_at=row.created_at,
    )


def to_session(row: Row[Any]) -> SessionRecord:
    return SessionRecord(
        id=row.id,
        chat_pk=row.chat_pk,
        active=bool(row.active),
        created_at=row.created_at,
        ended_at=row.ended_at,
        active_message_count=row.active_message_count,
        active_tokens=row.active_tokens,
        tokens_since_call=row.tokens_since_call,
        last_prompt_tokens=row.last_prompt_tokens,
        last_call_message_id=row.last_call_message_id,
        last_call_at=row.last_call_at,
        rolling_summary=row.rolling_summary,
        compaction_count=row.compaction_count,
        engine_state=dict(row.engine_state or {}),
        cache_state=dict(row.cache_state or {}),
        last_activity_at=row.last_activity_at,
        cache_look_at=row.cache_look_at,
        prompt_pins=PromptPins.from_json(row.prompt_pins),
    )


def to_message(row: Row[Any]) -> StoredMessage:
    return StoredMessage(
        id=row.id,
        session_pk=row.session_pk,
        chat_pk=row.chat_pk,
        seq=row.seq,
        role=cast(Role, row.role),
        content=cast(Content, row.content),
        text=row.text,
        author_id=row.author_id,
        author_name=row.author_name,
        platform_message_id=row.platform_message_id,
        token_estimate=row.token_estimate,
        state=cast(MessageState, row.state),
        pruned=bool(row.pruned),
        needs_reply=bool(row.needs_reply),
        replied=bool(row.replied),
        created_at=row.created_at,
    )


def to_compaction(row: Row[Any]) -> CompactionRecord:
    return CompactionRecord(
        id=row.id,
        session_pk=row.session_pk,
        chat_pk=row.chat_pk,
        trigger=cast(Trigger, row.trigger),
        outcome=cast(Outcome, row.outcome),
        reason=row.reason,
        tokens_before=row.tokens_before,
        tokens_after=row.tokens_after,
        messages_before=row.messages_before,
        messages_after=row.messages_after,
        summary_message_id=row.summary_message_id,
        summarizer_model=row.summarizer_model,
        duration_ms=row.duration_ms,
        error=row.error,
        created_at=row.created_at,
        undone=bool(row.undone),
        archived_count=row.archived_count,
    )

"""Plain values the store hands out and takes in; no SQLAlchemy types leave `gateway/store/`.

Rows become frozen dataclasses at the repository boundary so callers can pass them around freely
(across tasks, into the agent) without lazy loads or sessions attached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeAlias

from agent.usage import Usage

Role: TypeAlias = Literal["user", "assistant"]
"""A stored row's role. A note the gateway adds for the model (`PIN_NOTICE_AUTHOR`) is stored as a user
row; the request window may send it as a mid-conversation system message."""


def stored_role(role: str) -> Role:
    """The stored role of an agent message (the agent's `system` notes are stored as user rows)."""
    return "assistant" if role == "assistant" else "user"


Content: TypeAlias = str | list[dict[str, Any]]
MessageState: TypeAlias = Literal["active", "archived", "summary", "reverted"]
Trigger: TypeAlias = Literal["hygiene", "agent", "server", "after_reply", "manual", "scheduled"]
Outcome: TypeAlias = Literal["ok", "degraded", "aborted"]
Purpose: TypeAlias = Literal["reply", "summary", "keepalive"]

TRIGGERS: frozenset[str] = frozenset({"hygiene", "agent", "server", "after_reply", "manual", "scheduled"})
OUTCOMES: frozenset[str] = frozenset({"ok", "degraded", "aborted"})


@dataclass(frozen=True, slots=True)
class ChatRecord:
    id: int
    platform: str
    chat_id: str
    thread_id: str
    kind: str
    title: str | None
    created_at: datetime


PIN_NOTICE_AUTHOR = "gateway:pins"
"""The author of a stored note telling the model the chat's pins changed (sent as a system message)."""


@dataclass(frozen=True, slots=True)
class PromptPins:
    """On models that take mid-conversation system messages, pins are not rewritten into the system
    prompt (that would invalidate the cache and every thinking block): `system` is what the prompt
    carries since the session's prefix was last rewritten, `told` what the model knows now (the last
    note's list)."""

    system: tuple[str, ...]
    told: tuple[str, ...]

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> PromptPins | None:
        if not data:
            return None
        return cls(tuple(data.get("system") or ()), tuple(data.get("told") or ()))

    def to_json(self) -> dict[str, Any]:
        return {"system": list(self.system), "told": list(self.told)}


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: int
    chat_pk: int
    active: bool
    created_at: datetime
    ended_at: datetime | None
    active_message_count: int
    active_tokens: int
    tokens_since_call: int
    last_prompt_tokens: int | None
    last_call_message_id: int | None
    last_call_at: datetime | None
    rolling_summary: str | None
    compaction_count: int
    engine_state: dict[str, Any]
    cache_state: dict[str, Any]
    """`agent.caching.plan.CacheState` as JSON: what the prompt cache holds for this session."""
    last_activity_at: datetime | None
    """When a message was last stored in the session."""
    cache_look_at: datetime | None = None
    """When the cache keep-alive job next looks at the session's cache (None: nothing to keep)."""
    prompt_pins: PromptPins | None = None
    """The pins its system prompt carries and those told since; None: the prompt follows the chat's."""

    def context_tokens(self, calibrate: Callable[[int], int] | None = None) -> int:
        """The size of the next prompt: the last API-reported prompt size plus (calibrated) estimates of
        the messages stored since, else the (calibrated) running estimate of the active window. Constant
        cost: it reads the session row only."""
        scale = calibrate or (lambda n: n)
        if self.last_prompt_tokens is not None:
            return self.last_prompt_tokens + scale(self.tokens_since_call)
        return scale(self.active_tokens)


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append; `token_estimate` is computed once by the caller and never recomputed."""

    role: Role
    content: Content
    text: str
    token_estimate: int
    author_id: str | None = None
    author_name: str | None = None
    platform_message_id: str | None = None
    needs_reply: bool = False
    created_at: datetime | None = None
    media_ids: tuple[int, ...] = ()
    """Stored media (`gateway.store.messages.media`) the content refers to, linked in the same transaction."""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    session_pk: int
    chat_pk: int
    seq: int
    role: Role
    content: Content
    text: str
    author_id: str | None
    author_name: str | None
    platform_message_id: str | None
    token_estimate: int
    state: MessageState
    pruned: bool
    needs_reply: bool
    replied: bool
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TurnSnapshot:
    """What a turn starts from, read together: the active session and its window rows."""

    session: SessionRecord
    rows: list[StoredMessage]
    pins: tuple[str, ...] = ()
    """The chat's pinned facts, in order (they travel in the system prompt)."""


@dataclass(frozen=True, slots=True)
class AppendResult:
    message: StoredMessage
    created: bool
    """False when the platform redelivered a message already stored (nothing changed)."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    model: str
    purpose: Purpose
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    latency_ms: int = 0
    cost_usd: float = 0.0
    cache_ttl: str | None = None
    refusal: str | None = None
    """The refusal's category when the model declined."""
    thinking_dropped: int = 0
    """Thinking blocks the API dropped from the request (`input_transformations`)."""
    web_searches: int = 0
    """Searches the API's web search tool ran in the call (their fee is in `cost_usd`)."""
    web_fetches: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_tokens + self.cache_read_tokens

    @classmethod
    def of(
        cls,
        model: str,
        purpose: Purpose,
        usage: Usage,
        *,
        cost_usd: float,
        latency_ms: int = 0,
        cache_ttl: str | None = None,
        refusal: str | None = None,
        thinking_dropped: int = 0,
    ) -> CallRecord:
        """The record of one call from the usage the API reported for it."""
        return cls(
            model=model,
            purpose=purpose,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_tokens=usage.cache_creation_input_tokens,
            cache_read_tokens=usage.cache_read_input_tokens,
            latency_ms=latency_ms,
            cost_usd=cost_usd,
            cache_ttl=cache_ttl,
            refusal=refusal,
            thinking_dropped=thinking_dropped,
            web_searches=usage.web_search_requests,
            web_fetches=usage.web_fetch_requests,
        )


@dataclass(frozen=True, slots=True)
class NewSummary:
    role: Role
    content: Content
    text: str
    token_estimate: int


@dataclass(frozen=True, slots=True)
class CompactionApply:
    """Everything one compaction changes, applied in one transaction by `Store.apply_compaction`.

    `insert_summary_before_id` is the first kept tail message: the summary row sorts just before it.
    """

    trigger: Trigger | str
    outcome: Outcome | str
    removed_ids: list[int]
    summary: NewSummary | None
    insert_summary_before_id: int | None
    reason: str = ""
    pruned_ids: list[int] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    summarizer_model: str | None = None
    duration_ms: int = 0
    error: str | None = None
    engine_state: dict[str, Any] | None = None
    rolling_summary: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    id: int
    session_pk: int
    chat_pk: int
    trigger: Trigger
    outcome: Outcome
    reason: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    summary_message_id: int | None
    summarizer_model: str | None
    duration_ms: int
    error: str | None
    created_at: datetime
    undone: bool
    archived_count: int


@dataclass(frozen=True, slots=True)
class UsageTotals:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def cache_hit_rate(self) -> float:
        """Share of prompt tokens read from cache (0 when nothing was sent)."""
        prompt = self.input_tokens + self.cache_creation_tokens + self.cache_read_tokens
        return self.cache_read_tokens / prompt if prompt else 0.0


@dataclass(frozen=True, slots=True)
class ChatStats:
    chat_pk: int
    session_pk: int
    active_messages: int
    archived_messages: int
    active_tokens: int
    last_prompt_tokens: int | None
    tokens_since_call: int
    context_tokens: int
    """`SessionRecord.context_tokens()` of the active session."""
    engine_state: dict[str, Any]
    """The context engine's state of the active session (e.g. whether automatic compaction is paused)."""
    usage_total: UsageTotals
    usage_recent: UsageTotals
    compactions: dict[tuple[str, str], int]
    """(trigger, outcome) -> count, for the whole chat."""
    last_compaction: CompactionRecord | None


@dataclass(frozen=True, slots=True)
class BusyChat:
    chat_pk: int
    platform: str
    chat_id: str
    title: str | None
    messages: int
    cost_usd: float


@dataclass(frozen=True, slots=True)
class GlobalStats:
    chats: int
    sessions: int
    messages: int
    archived_messages: int
    compactions: int
    usage: UsageTotals
    busiest: list[BusyChat]

"""Plain values of the recall search and drill-down (what `Store.search_history` and
`Store.summary_originals` take and return)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from gateway.store.records import Role

SHOWN_WHOLE_BELOW = 20_000
"""Active messages of the chat's current session shorter than this are in the model's window in full,
so a search skips them; longer ones may be shown shortened and stay searchable."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    after: datetime | None = None
    """Only messages from this instant on (inclusive)."""
    before: datetime | None = None
    """Only messages before this instant (exclusive)."""
    limit: int = 5
    excerpt_chars: int = 300
    shown_whole_below: int = SHOWN_WHOLE_BELOW


@dataclass(frozen=True, slots=True)
class SessionInfo:
    number: int
    """1 for the chat's first session, counting up with every /new."""
    active: bool
    started_at: datetime
    ended_at: datetime | None


@dataclass(frozen=True, slots=True)
class Passage:
    """A stored message, or the part of it given in `text` (starting at `offset`)."""

    message_id: int
    role: Role
    author_name: str | None
    created_at: datetime
    text: str
    offset: int
    total_chars: int

    @property
    def whole(self) -> bool:
        return self.offset == 0 and len(self.text) >= self.total_chars


@dataclass(frozen=True, slots=True)
class SearchHit:
    main: Passage
    session: SessionInfo
    before: Passage | None = None
    """The message before it, when the hit answers it (or would not make sense alone)."""
    after: Passage | None = None
    """The message after it, when the hit is a question."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: list[SearchHit] = field(default_factory=list)
    more: bool = False
    """More matches exist beyond the limit."""


@dataclass(frozen=True, slots=True)
class OriginalsPage:
    """One page of the stored messages a compaction summary replaced, oldest first."""

    summary_id: int
    session: SessionInfo
    page: int
    pages: int
    total: int
    parts: int
    """Compactions folded into the summary (each replaced one stretch of the conversation)."""
    messages: list[Passage]

"""What the `recall` tool asks of the chat's history and what it gets back: the plain values the
store's search returns as they are.

`HistorySearch` is the seam: the gateway binds one to a single chat, so the tool can never reach
another chat's messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A stored message, or the part of it in `text` starting at character `offset`."""

    message_id: int
    role: str
    author_name: str | None
    created_at: datetime | None
    text: str
    offset: int = 0
    total_chars: int | None = None
    """Length of the whole stored message, when known."""

    @property
    def partial(self) -> bool:
        return self.total_chars is not None and (self.offset > 0 or len(self.text) < self.total_chars)


@dataclass(frozen=True, slots=True)
class SessionLabel:
    number: int
    """1 for the chat's first session, counting up with every /new."""
    active: bool
    """The chat's current session."""
    ended_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RecallHit:
    main: Excerpt
    session: SessionLabel
    before: Excerpt | None = None
    """The question this message answers, when it answers one."""
    after: Excerpt | None = None
    """The answer, when this message is a question."""


@dataclass(frozen=True, slots=True)
class RecallQuery:
    text: str
    after: datetime | None = None
    """Only messages from this instant on (inclusive)."""
    before: datetime | None = None
    """Only messages before this instant (exclusive)."""
    limit: int = 5
    excerpt_chars: int = 300


@dataclass(frozen=True, slots=True)
class RecallResults:
    hits: list[RecallHit] = field(default_factory=list)
    more: bool = False
    """More messages match than were returned."""
    unindexed: int = 0
    """Recent messages in the search's scope not yet indexed for meaning (found by keywords only)."""


@dataclass(frozen=True, slots=True)
class OriginalsPage:
    """A page of the stored messages a compaction summary replaced, oldest first."""

    summary_id: int
    session: SessionLabel
    page: int
    pages: int
    total: int
    parts: int
    """Compactions folded into the summary (each replaced one stretch of the conversation)."""
    messages: list[Excerpt]


class HistorySearch(Protocol):
    async def search(self, query: RecallQuery) -> RecallResults: ...

    async def fetch(self, message_id: int, offset: int, length: int) -> Excerpt | None: ...

    async def originals(
        self, summary_id: int | None, page: int, after: datetime | None, before: datetime | None
    ) -> OriginalsPage | None: ...

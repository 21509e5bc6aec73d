"""What `/stats` reads of the store: per-chat and global statistics, what a chat spent, the reply parts
by state, the prompt cache's waste, what the model declined and the voice notes' transcripts.

`Store` satisfies it; the `/stats` command needs nothing else of the store for its report lines.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from agent.caching.waste import CacheWaste
from gateway.store.messages.transcripts import TranscriptionCounts
from gateway.store.records import ChatStats, GlobalStats
from gateway.store.reports.call_outcomes import CallOutcomes


class ReportStore(Protocol):
    async def chat_stats(self, chat_pk: int, *, recent_calls: int = 10) -> ChatStats: ...

    async def global_stats(self, *, top: int = 5) -> GlobalStats: ...

    async def cost_since(self, chat_pk: int, since: datetime) -> float: ...

    async def delivery_counts(self, chat_pk: int | None = None) -> dict[str, int]: ...

    async def cache_waste(self, chat_pk: int | None = None) -> CacheWaste: ...

    async def call_outcomes(self, chat_pk: int | None = None) -> CallOutcomes: ...

    async def transcription_counts(self, chat_pk: int | None = None) -> TranscriptionCounts: ...

"""What became of each voice note sent for transcription: written once per attempt, counted by `/stats`.

`Store` mixes in `TranscriptMethods`, one transaction each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from sqlalchemy import Table, func, insert, select

from gateway.store.db import StoreBase
from gateway.store.tables import Transcription

transcriptions = cast(Table, Transcription.__table__)

REASON_MAX_CHARS = 500


@dataclass(frozen=True, slots=True)
class NewTranscription:
    media_id: int | None
    outcome: str
    """"ok", or the failure's cause."""
    model: str
    duration_s: float | None
    latency_ms: int
    chars: int = 0
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class TranscriptionCounts:
    ok: int
    failed: dict[str, int]
    """Failures by cause."""
    last_failure: str | None
    """The newest failure's reason, worded for people."""

    @property
    def total(self) -> int:
        return self.ok + sum(self.failed.values())


class TranscriptMethods(StoreBase):
    """Mixed into `Store`; `StoreBase` provides the transaction, the dialect's insert and the clock."""

    async def record_transcription(self, chat_pk: int, item: NewTranscription) -> None:
        async with self._tx("record_transcription") as conn:
            await conn.execute(
                insert(transcriptions).values(
                    chat_pk=chat_pk,
                    media_id=item.media_id,
                    outcome=item.outcome[:16],
                    reason=item.reason[:REASON_MAX_CHARS] if item.reason else None,
                    model=item.model[:128],
                    duration_s=item.duration_s,
                    latency_ms=item.latency_ms,
                    chars=item.chars,
                    created_at=self.now(),
                )
            )

    async def transcription_counts(self, chat_pk: int | None = None) -> TranscriptionCounts:
        """Attempts by outcome (one chat, or all chats) and the newest failure's reason."""
        counts = select(transcriptions.c.outcome, func.count()).group_by(transcriptions.c.outcome)
        last = (
            select(transcriptions.c.reason)
            .where(transcriptions.c.outcome != "ok")
            .order_by(transcriptions.c.id.desc())
            .limit(1)
        )
        if chat_pk is not None:
            counts = counts.where(transcriptions.c.chat_pk == chat_pk)
            last = last.where(transcriptions.c.chat_pk == chat_pk)
        async with self._tx("transcription_counts") as conn:
            by_outcome = {str(outcome): int(n) for outcome, n in await conn.execute(counts)}
            reason = (await conn.execute(last)).scalar_one_or_none()
        ok = by_outcome.pop("ok", 0)
        return TranscriptionCounts(ok=ok, failed=by_outcome, last_failure=reason)

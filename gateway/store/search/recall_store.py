"""The `Store` methods behind the recall tool and the embeddings worker (each one transaction).

A mixin so the queries stay in their own modules (`search`, `originals`, `vectors`) while callers keep
one `Store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent.tools.recall_types import OriginalsPage, RecallQuery, RecallResults
from gateway.store.db import StoreBase
from gateway.store.search import originals as _originals
from gateway.store.search import query as _search
from gateway.store.search import scope as _scope
from gateway.store.search import vectors as _vectors
from gateway.store.search.scope import Candidates, Scope

EMBED_MAX_CHARS = 8_000
"""Characters of a message sent to the embeddings endpoint (its beginning)."""


class RecallMethods(StoreBase):
    """Mixed into `Store`; `StoreBase` provides the transaction, the dialect's insert and the clock."""

    async def search_history(
        self,
        chat_pk: int,
        query: RecallQuery,
        *,
        semantic: Sequence[int] = (),
        semantic_weight: float = 1.0,
        shown_whole_below: int = _scope.SHOWN_WHOLE_BELOW,
    ) -> RecallResults:
        """The chat's messages best matching `query` (never another chat's); `semantic` adds message
        ids ranked by vector similarity, fused with the keyword ranking. Active messages shorter than
        `shown_whole_below` are in the model's window whole, so they are skipped."""
        async with self._tx("search_history") as conn:
            return await _search.search_history(
                conn,
                self.dialect,
                chat_pk,
                query,
                semantic=semantic,
                semantic_weight=semantic_weight,
                shown_whole_below=shown_whole_below,
            )

    async def summary_originals(
        self,
        chat_pk: int,
        summary_id: int | None,
        *,
        page: int = 1,
        after: datetime | None = None,
        before: datetime | None = None,
    ) -> OriginalsPage | None:
        """A page of the messages a summary of this chat replaced (default: the summary in the window)."""
        async with self._tx("summary_originals") as conn:
            return await _originals.summary_originals(
                conn, chat_pk, summary_id, page=page, after=after, before=before
            )

    async def messages_to_embed(self, *, after_id: int, model: str, limit: int) -> list[_vectors.PendingText]:
        async with self._tx("messages_to_embed") as conn:
            return await _vectors.pending(
                conn, self.dialect, after_id=after_id, model=model, limit=limit, max_chars=EMBED_MAX_CHARS
            )

    async def embedding_watermark(self, model: str, *, backfill: bool) -> int:
        """Where embedding starts: after the newest embedded message; with none, after the newest
        message (or from the first with `backfill`)."""
        async with self._tx("embedding_watermark") as conn:
            newest = await _vectors.last_embedded_id(conn, model)
            if newest is not None:
                return newest
            return 0 if backfill else await _vectors.last_message_id(conn)

    async def save_vectors(self, model: str, items: Sequence[_vectors.NewVector]) -> None:
        async with self._tx("save_vectors") as conn:
            await _vectors.save(conn, self._insert, model, items, self.now())

    async def chat_vectors(
        self, chat_pk: int, *, model: str, after_id: int, limit: int
    ) -> list[tuple[int, float, bytes]]:
        async with self._tx("chat_vectors") as conn:
            return await _vectors.chat_vectors(conn, chat_pk, model=model, after_id=after_id, limit=limit)

    async def questions_to_bot(self, ids: Sequence[int]) -> set[int]:
        """Which of `ids` are questions people asked the bot (the semantic side ranks them last)."""
        async with self._tx("questions_to_bot") as conn:
            return await _vectors.questions_to_bot(conn, ids)

    async def recall_candidates(self, scope: Scope) -> Candidates:
        """The scope with the ids the model sees whole now (what the semantic side must skip)."""
        async with self._tx("recall_candidates") as conn:
            return await _scope.candidates(conn, scope)

    async def embedding_backlog(self, *, after_id: int, scope: Scope | None = None) -> int:
        """Messages after the worker's watermark not embedded yet (in `scope` only, when given)."""
        async with self._tx("embedding_backlog") as conn:
            return await _vectors.backlog(conn, self.dialect, after_id=after_id, scope=scope)

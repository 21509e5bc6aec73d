"""The recall tool's view of one chat's stored history (never another chat's).

Search runs on the store's full-text index; when semantic ranking is configured, the query's nearest
in-scope vectors are fused in, and the result says how many in-scope messages are not embedded yet.
The store returns the tool's own types, so results pass straight through.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import datetime

from agent.tools.recall_types import Excerpt, OriginalsPage, RecallQuery, RecallResults
from gateway.embeddings.ranker import SemanticRanking
from gateway.store import Store
from gateway.store.search.scope import SHOWN_WHOLE_BELOW, Scope

SemanticRank = Callable[[Scope, str], Awaitable[SemanticRanking]]
"""(scope, query) -> in-scope message ids by similarity, best first (none when unavailable)."""


class ChatHistorySearch:
    """`agent.tools.recall_types.HistorySearch` bound to one chat."""

    def __init__(
        self,
        store: Store,
        chat_pk: int,
        *,
        semantic: SemanticRank | None = None,
        shown_whole_below: int = SHOWN_WHOLE_BELOW,
    ) -> None:
        self._store = store
        self._chat_pk = chat_pk
        self._semantic = semantic
        self._shown_whole_below = shown_whole_below

    async def search(self, query: RecallQuery) -> RecallResults:
        if self._semantic is None:
            return await self._store.search_history(
                self._chat_pk, query, shown_whole_below=self._shown_whole_below
            )
        scope = Scope(self._chat_pk, query.after, query.before, self._shown_whole_below)
        ranking = await self._semantic(scope, query.text)
        results = await self._store.search_history(
            self._chat_pk,
            query,
            semantic=ranking.ids,
            semantic_weight=ranking.weight,
            shown_whole_below=self._shown_whole_below,
        )
        return dataclasses.replace(results, unindexed=ranking.unindexed)

    async def fetch(self, message_id: int, offset: int, length: int) -> Excerpt | None:
        row = await self._store.get_message(self._chat_pk, message_id)
        if row is None or offset >= max(1, len(row.text)):
            return None
        return Excerpt(
            message_id=row.id,
            role=row.role,
            author_name=row.author_name,
            created_at=row.created_at,
            text=row.text[offset : offset + length],
            offset=offset,
            total_chars=len(row.text),
        )

    async def originals(
        self, summary_id: int | None, page: int, after: datetime | None, before: datetime | None
    ) -> OriginalsPage | None:
        return await self._store.summary_originals(
            self._chat_pk, summary_id, page=page, after=after, before=before
        )

"""The recall tool's view of one chat's stored history (never another chat's).

Search runs on the store's full-text index; when semantic ranking is configured, the query's nearest
stored vectors are fused in. Store records become the tool's plain types here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from agent.tools.recall_types import (
    Excerpt,
    OriginalsPage,
    RecallHit,
    RecallQuery,
    RecallResults,
    SessionLabel,
)
from gateway.store import Store
from gateway.store.search import recall_records as rec

SemanticRank = Callable[[int, str], Awaitable[list[int]]]
"""(chat_pk, query) -> message ids by similarity, best first ([] when unavailable)."""


def _excerpt(p: rec.Passage) -> Excerpt:
    return Excerpt(
        message_id=p.message_id,
        role=p.role,
        author=p.author_name,
        created_at=p.created_at,
        text=p.text,
        offset=p.offset,
        total_chars=p.total_chars,
    )


def _label(s: rec.SessionInfo) -> SessionLabel:
    return SessionLabel(number=s.number, current=s.active, ended=s.ended_at)


def _maybe(p: rec.Passage | None) -> Excerpt | None:
    return None if p is None else _excerpt(p)


class ChatHistorySearch:
    """`agent.tools.recall_types.HistorySearch` bound to one chat."""

    def __init__(
        self,
        store: Store,
        chat_pk: int,
        *,
        semantic: SemanticRank | None = None,
        shown_whole_below: int = rec.SHOWN_WHOLE_BELOW,
    ) -> None:
        self._store = store
        self._chat_pk = chat_pk
        self._semantic = semantic
        self._shown_whole_below = shown_whole_below

    async def search(self, query: RecallQuery) -> RecallResults:
        similar = await self._semantic(self._chat_pk, query.text) if self._semantic else []
        result = await self._store.search_history(
            self._chat_pk,
            rec.SearchRequest(
                query=query.text,
                after=query.after,
                before=query.before,
                limit=query.limit,
                excerpt_chars=query.excerpt_chars,
                shown_whole_below=self._shown_whole_below,
            ),
            semantic=similar,
        )
        hits = [
            RecallHit(
                main=_excerpt(h.main),
                session=_label(h.session),
                before=_maybe(h.before),
                after=_maybe(h.after),
            )
            for h in result.hits
        ]
        return RecallResults(hits=hits, more=result.more)

    async def fetch(self, message_id: int, offset: int, length: int) -> Excerpt | None:
        row = await self._store.get_message(self._chat_pk, message_id)
        if row is None or offset >= max(1, len(row.text)):
            return None
        return Excerpt(
            message_id=row.id,
            role=row.role,
            author=row.author_name,
            created_at=row.created_at,
            text=row.text[offset : offset + length],
            offset=offset,
            total_chars=len(row.text),
        )

    async def originals(
        self, summary_id: int | None, page: int, after: datetime | None, before: datetime | None
    ) -> OriginalsPage | None:
        found = await self._store.summary_originals(
            self._chat_pk, summary_id, page=page, after=after, before=before
        )
        if found is None:
            return None
        return OriginalsPage(
            summary_id=found.summary_id,
            session=_label(found.session),
            page=found.page,
            pages=found.pages,
            total=found.total,
            parts=found.parts,
            messages=[_excerpt(m) for m in found.messages],
        )

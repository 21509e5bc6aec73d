"""The recall tool's view of one chat's stored history (never another chat's)."""

from __future__ import annotations

from agent.tools.recall import Excerpt
from gateway.store import Store


class ChatHistorySearch:
    """`agent.tools.recall.HistorySearch` bound to one chat."""

    def __init__(self, store: Store, chat_pk: int) -> None:
        self._store = store
        self._chat_pk = chat_pk

    async def search(self, query: str, limit: int) -> list[Excerpt]:
        hits = await self._store.search_archive(self._chat_pk, query, limit=limit)
        return [
            Excerpt(
                message_id=h.message_id,
                role=h.role,
                author=h.author_name,
                created_at=h.created_at,
                text=h.excerpt,
            )
            for h in hits
        ]

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

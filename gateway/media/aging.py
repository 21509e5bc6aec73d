"""At the start of a turn: note whether the chat has media (`presence`), and demote old media as the
policy in `agent.media_aging` says, stored as `pruned`."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from agent.media_aging import rows_to_demote
from gateway.media.presence import MediaPresence
from gateway.store import SessionRecord, StoredMessage
from gateway.store.messages.media import MediaStore

logger = logging.getLogger(__name__)


class MediaAging:
    def __init__(self, store: MediaStore, presence: MediaPresence) -> None:
        self._store = store
        self._presence = presence

    async def apply(
        self, session: SessionRecord, rows: Sequence[StoredMessage], *, cache_cold: bool
    ) -> list[StoredMessage]:
        """The window rows after demoting what the policy says (the rows themselves when nothing is)."""
        self._presence.note_window(session.chat_pk, (r.content for r in rows))
        session_pk = session.id
        wanted = rows_to_demote(rows, cache_cold=cache_cold)
        if not wanted:
            return list(rows)
        changed = set(await self._store.demote(session_pk, wanted))
        logger.info(
            "session %s: media or web lookups of %d message(s) no longer attached (%s)",
            session_pk,
            len(changed),
            "prompt cache expired" if cache_cold else "over the media budget",
        )
        return [dataclasses.replace(r, pruned=True) if r.id in changed else r for r in rows]

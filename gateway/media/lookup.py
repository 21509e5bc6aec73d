"""The `view_media` tool's view of stored media, bound to one chat (never another chat's)."""

from __future__ import annotations

from agent.tools.view_media import MediaView
from gateway.store.messages.media import MediaStore


class ChatMediaLookup:
    """`agent.tools.view_media.MediaLookup` for chat `chat_pk`."""

    def __init__(self, store: MediaStore, chat_pk: int) -> None:
        self._store = store
        self._chat_pk = chat_pk

    async def find(self, media_id: int) -> MediaView | None:
        info = await self._store.info(self._chat_pk, media_id)
        if info is None or info.kind == "audio":
            return None  # sound is never shown to the model; its transcript is in the conversation
        await self._store.touch([info.id])
        return MediaView(
            media_id=info.id,
            kind="document" if info.kind == "document" else "image",
            media_type=info.media_type,
            tokens=info.tokens,
            name=info.filename,
            width=info.width,
            height=info.height,
            pages=info.pages,
            created_at=info.created_at,
        )

"""Stored media on the wire: an `LLMClient` that turns `media_ref` blocks into image/document blocks.

Everything before the API call (the window, hygiene, the compressor, calibration) works on the stored
references, which carry each item's token cost; only the request that leaves the process carries the
bytes. Rendering is deterministic (`agent.media.render_media`), so a message's blocks are the same
bytes on every turn and the cached prefix keeps hitting; each item is sent once per request.

References only ever come from a chat's own stored messages (or its own `view_media` results), so
loading by id cannot cross chats. Base64 text is kept in a bounded in-process cache: a chat's images
are read from the database once, not on every turn.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Sequence

from agent.llm import LLMClient, LLMRequest, LLMResponse, ask
from agent.media import MediaBytes, referenced_media, render_media
from agent.streaming import TextSink
from gateway.store.messages.media import MediaStore

logger = logging.getLogger(__name__)

CACHE_CHARS = 128 * 1024 * 1024
"""Base64 text kept in memory across turns (about 96 MB of media)."""


class MediaCache:
    """Base64 of stored media by id, least recently used first out."""

    def __init__(self, store: MediaStore, *, max_chars: int = CACHE_CHARS) -> None:
        self._store = store
        self._max_chars = max_chars
        self._items: OrderedDict[int, MediaBytes] = OrderedDict()
        self._chars = 0

    async def load(self, media_ids: Sequence[int]) -> dict[int, MediaBytes]:
        found: dict[int, MediaBytes] = {}
        missing: list[int] = []
        for media_id in media_ids:
            item = self._items.get(media_id)
            if item is None:
                missing.append(media_id)
            else:
                self._items.move_to_end(media_id)
                found[media_id] = item
        if missing:
            for media_id, stored in (await self._store.get_by_ids(missing)).items():
                item = MediaBytes(stored.info.media_type, base64.b64encode(stored.data).decode("ascii"))
                found[media_id] = item
                self._remember(media_id, item)
        return found

    def _remember(self, media_id: int, item: MediaBytes) -> None:
        size = len(item.base64_data)
        if size > self._max_chars:
            return
        self._items[media_id] = item
        self._chars += size
        while self._chars > self._max_chars:
            _, old = self._items.popitem(last=False)
            self._chars -= len(old.base64_data)


class MediaRenderingClient:
    """Wraps the real client: requests leave with their media rendered, responses come back untouched."""

    def __init__(self, inner: LLMClient, cache: MediaCache) -> None:
        self.inner = inner
        self.cache = cache

    async def create(self, request: LLMRequest) -> LLMResponse:
        return await ask(self.inner, await self._rendered(request))

    async def stream(
        self, request: LLMRequest, on_text: TextSink, on_progress: TextSink | None = None
    ) -> LLMResponse:
        return await ask(self.inner, await self._rendered(request), on_text, on_progress)

    async def _rendered(self, request: LLMRequest) -> LLMRequest:
        ids = referenced_media(request.messages)
        if not ids:
            return request
        items = await self.cache.load(ids)
        if len(items) < len(ids):
            logger.info("%d referenced media item(s) are no longer stored", len(ids) - len(items))
        rendered = render_media(request.messages, items)
        return dataclasses.replace(request, messages=rendered)

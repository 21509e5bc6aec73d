"""Discord replies shown while they are written: each part is posted, then edited as it grows.

Discord has no drafts, so a preview is a real message of the bot's, and a finished part is shown the
same way (posted if it has no message yet, else its message edited). The typing indicator runs for the
whole turn, so there is no status line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.platforms.base import ChatRef

if TYPE_CHECKING:
    from gateway.platforms.discord.connection import DiscordAdapter


class DiscordLive:
    """`LiveSurface` for one Discord reply: each part is posted, then edited as it grows."""

    drafts = False
    throttled = True

    def __init__(self, adapter: DiscordAdapter, chat: ChatRef, *, reply_to: str | None) -> None:
        self._adapter = adapter
        self._chat = chat
        self._reply_to = reply_to

    def parts(self, text: str) -> list[str]:
        return self._adapter.parts(text)

    async def preview(self, index: int, text: str, message_id: str | None) -> str:
        if message_id is None:
            return await self._adapter.post(self._chat, text, self._reply_to if index == 0 else None)
        await self._adapter.edit(self._chat, message_id, text)
        return message_id

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        return await self.preview(index, text, message_id)

    async def status(self, text: str) -> None:
        return None  # the typing indicator runs for the whole turn

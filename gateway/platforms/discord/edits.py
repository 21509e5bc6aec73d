"""Discord replies shown while they are written: each part is posted, then edited as it grows.

Discord has no drafts, so a preview is a real message of the bot's, and a finished part is shown the
same way (posted if it has no message yet, else its message edited), both through the platform's
`DiscordSender`. The typing indicator runs for the whole turn, so there is no status line.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.platforms.base import ChatRef
from gateway.platforms.discord.rest import DiscordSender


class DiscordLive:
    """`LiveSurface` for one Discord reply; `parts` splits a text as the final reply will be."""

    drafts = False
    throttled = True

    def __init__(
        self,
        sender: DiscordSender,
        chat: ChatRef,
        *,
        parts: Callable[[str], list[str]],
        reply_to: str | None,
    ) -> None:
        self._sender = sender
        self._chat = chat
        self._parts = parts
        self._reply_to = reply_to

    def parts(self, text: str) -> list[str]:
        return self._parts(text)

    async def preview(self, index: int, text: str, message_id: str | None) -> str:
        if message_id is None:
            reply_to = self._reply_to if index == 0 else None
            return await self._sender.post(self._chat, text, reply_to=reply_to)
        await self._sender.edit(self._chat, message_id, text)
        return message_id

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        return await self.preview(index, text, message_id)

    async def status(self, text: str) -> None:
        return None  # the typing indicator runs for the whole turn

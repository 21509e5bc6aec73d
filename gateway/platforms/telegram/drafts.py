"""Telegram replies shown while they are written: drafts in private chats, an edited message elsewhere.

Private chats get `sendMessageDraft` (an ephemeral preview, animated while its draft id stays the same;
each finished part is sent with `sendMessage`, as a draft never becomes a message). Groups, supergroups
and topics get the first part posted, then `editMessageText` as it grows. Every call goes through the
platform's `TelegramSender`; previews use the same HTML as the final reply and never wait out flood
control (`SendRetryLater` goes to the caller at once).
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.telegram.bot_api import TelegramSender


class TelegramLive:
    """`LiveSurface` for one Telegram reply; `parts` splits a text as the final reply will be."""

    throttled = True

    def __init__(
        self,
        sender: TelegramSender,
        chat: ChatRef,
        *,
        parts: Callable[[str], list[str]],
        reply_to: str | None,
        draft_id: int,
    ) -> None:
        self._sender = sender
        self._chat = chat
        self._parts = parts
        self._reply_to = reply_to
        self._draft_id = draft_id
        self.drafts = chat.kind is ChatKind.PRIVATE

    def parts(self, text: str) -> list[str]:
        return self._parts(text)

    async def preview(self, index: int, text: str, message_id: str | None) -> str | None:
        if self.drafts:
            await self._sender.draft(self._chat, self._draft_id + index, text)
            return None
        if message_id is None:
            reply_to = self._reply_to if index == 0 else None
            return await self._sender.post(self._chat, text, reply_to=reply_to)
        await self._sender.edit(self._chat, message_id, text, wait=False)
        return message_id

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        if message_id is None:
            reply_to = self._reply_to if index == 0 else None
            sent = await self._sender.send(OutgoingMessage(self._chat, text, reply_to_message_id=reply_to))
            return sent.platform_message_ids[0]
        await self._sender.edit(self._chat, message_id, text)
        return message_id

    async def status(self, text: str) -> None:
        if not self.drafts:
            return  # the typing indicator runs for the whole turn
        await self._sender.draft(self._chat, self._draft_id, text, html=False)

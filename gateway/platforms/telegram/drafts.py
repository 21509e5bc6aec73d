"""Telegram replies shown while they are written: drafts in private chats, an edited message elsewhere.

Private chats get `sendMessageDraft` (an ephemeral preview, animated while its draft id stays the same;
each finished part is sent with `sendMessage`, as a draft never becomes a message). Groups, supergroups
and topics get the first part posted, then `editMessageText` as it grows. Previews use the same HTML as
the final reply; calls never wait out flood control (`SendRetryLater` goes to the caller at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from telegram import ReplyParameters
from telegram.constants import ParseMode
from telegram.error import TelegramError

from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.split import measure
from gateway.platforms.telegram.html import markdown_to_telegram_html

if TYPE_CHECKING:
    from gateway.platforms.telegram.bot import TelegramAdapter

MAX_UTF16 = 4096


def html_or_none(text: str) -> str | None:
    """The Telegram HTML of `text`, or None when the markup would not fit one message."""
    html = markdown_to_telegram_html(text)
    return html if measure(html, "utf16") <= MAX_UTF16 else None


def text_fields(text: str) -> dict[str, Any]:
    html = html_or_none(text)
    return {"text": html, "parse_mode": ParseMode.HTML} if html is not None else {"text": text}


class TelegramLive:
    """`LiveSurface` for one Telegram reply."""

    throttled = True

    def __init__(
        self, adapter: TelegramAdapter, chat: ChatRef, *, reply_to: str | None, draft_id: int
    ) -> None:
        self._adapter = adapter
        self._chat = chat
        self._reply_to = reply_to
        self._draft_id = draft_id
        self.drafts = chat.kind is ChatKind.PRIVATE
        self._target: dict[str, Any] = {
            "chat_id": int(chat.chat_id),
            "message_thread_id": int(chat.thread_id) if chat.thread_id else None,
        }

    def parts(self, text: str) -> list[str]:
        return self._adapter.parts(text)

    async def preview(self, index: int, text: str, message_id: str | None) -> str | None:
        bot = self._adapter.require_bot()
        try:
            if self.drafts:
                await bot.send_message_draft(
                    draft_id=self._draft_id + index, **self._target, **text_fields(text)
                )
                return None
            if message_id is None:
                extra: dict[str, Any] = {}
                if index == 0 and self._reply_to is not None:
                    extra["reply_parameters"] = ReplyParameters(
                        message_id=int(self._reply_to), allow_sending_without_reply=True
                    )
                sent = await bot.send_message(**self._target, **text_fields(text), **extra)
                return str(sent.message_id)
            await bot.edit_message_text(
                chat_id=self._target["chat_id"], message_id=int(message_id), **text_fields(text)
            )
            return message_id
        except TelegramError as exc:
            raise self._adapter.send_error(exc, self._chat.chat_id) from exc

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        if message_id is None:
            reply_to = self._reply_to if index == 0 else None
            sent = await self._adapter.send(OutgoingMessage(self._chat, text, reply_to_message_id=reply_to))
            return sent.platform_message_ids[0]
        await self._adapter.edit(self._chat, message_id, text)
        return message_id

    async def status(self, text: str) -> None:
        if not self.drafts:
            return  # the typing indicator runs for the whole turn
        bot = self._adapter.require_bot()
        try:
            await bot.send_message_draft(draft_id=self._draft_id, text=text, **self._target)
        except TelegramError as exc:
            raise self._adapter.send_error(exc, self._chat.chat_id) from exc

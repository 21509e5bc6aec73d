"""Sending to Telegram: replies as Telegram HTML, edits, reactions and the typing action.

A reply is split on its markdown below the limit and each chunk rendered to HTML; a chunk whose HTML
still does not fit is split again, and one that only escaping overflows goes out as plain text. If
Telegram rejects the markup, the chunk is re-sent as plain text. Flood control is waited out up to a
bounded number of attempts; Bot API errors become the gateway's send errors (`send_error`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from telegram import Bot, Message, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, ChatMigrated, Forbidden, RetryAfter, TelegramError

from gateway.errors import SendError, SendGone, SendRejected, SendRetryLater
from gateway.platforms.base import ChatRef, OutgoingMessage, SentMessage, TypingContext
from gateway.platforms.split import measure, split_text
from gateway.platforms.telegram.drafts import text_fields
from gateway.platforms.telegram.html import markdown_to_telegram_html
from gateway.platforms.telegram.polling import retry_after_seconds

logger = logging.getLogger(__name__)

MAX_UTF16 = 4096
SPLIT_MARGIN = 3500
"""Markdown is split below the limit so the HTML rendering (tags, escapes) usually fits first time."""
MIN_SPLIT = 512
TYPING_INTERVAL = 4.0
"""Telegram shows a chat action for about 5 s; refresh a little earlier."""


class TelegramSender:
    """The adapter's outbound half. `bot` returns the started Bot or raises `SendError`; `redact`
    keeps the token out of error messages."""

    def __init__(
        self,
        bot: Callable[[], Bot],
        *,
        redact: Callable[[str], str],
        max_send_attempts: int,
        max_retry_wait: float,
    ) -> None:
        self._bot = bot
        self._redact = redact
        self._max_send_attempts = max_send_attempts
        self._max_retry_wait = max_retry_wait

    async def send(self, message: OutgoingMessage) -> SentMessage:
        bot = self._bot()
        chat_id = int(message.chat.chat_id)
        thread_id = int(message.chat.thread_id) if message.chat.thread_id else None
        reply = (
            ReplyParameters(message_id=int(message.reply_to_message_id), allow_sending_without_reply=True)
            if message.reply_to_message_id
            else None
        )
        ids: list[str] = []
        for markdown, html in render_chunks(well_formed(message.text)):
            kwargs: dict[str, Any] = {"chat_id": chat_id, "message_thread_id": thread_id}
            if reply is not None and not ids:
                kwargs["reply_parameters"] = reply
            sent = await self._send_chunk(bot, markdown, html, kwargs)
            ids.append(str(sent.message_id))
        return SentMessage(platform_message_ids=tuple(ids))

    async def _send_chunk(self, bot: Any, markdown: str, html: str | None, kwargs: dict[str, Any]) -> Message:
        """Send one chunk as HTML; if Telegram refuses it, send the markdown source as plain text."""
        chat_id = str(kwargs["chat_id"])
        if html is not None:
            try:
                return await self._with_flood_retry(
                    bot.send_message, text=html, parse_mode=ParseMode.HTML, **kwargs
                )
            except BadRequest as exc:
                # Any BadRequest on an HTML send is treated as rejected markup: the plain resend below
                # either succeeds or fails for the real reason, which is then reported.
                logger.warning(
                    "telegram: chat %s rejected HTML (%s); resending as plain text", chat_id, exc.message
                )
        try:
            return await self._with_flood_retry(bot.send_message, text=markdown, **kwargs)
        except BadRequest as exc:
            raise SendRejected(f"telegram rejected the message: {exc.message}", chat_id=chat_id) from exc

    async def _with_flood_retry(self, call: Any, **kwargs: Any) -> Message:
        """Run one Bot API send, waiting out flood control up to a bounded number of attempts."""
        chat_id = str(kwargs.get("chat_id"))
        for attempt in range(1, self._max_send_attempts + 1):
            try:
                result: Message = await call(**kwargs)
                return result
            except RetryAfter as exc:
                wait = retry_after_seconds(exc)
                if attempt == self._max_send_attempts or wait > self._max_retry_wait:
                    raise SendRetryLater(
                        f"telegram flood control: retry after {wait:g}s", retry_after=wait, chat_id=chat_id
                    ) from exc
                logger.info(
                    "telegram: flood control in chat %s, waiting %.1fs (attempt %d)", chat_id, wait, attempt
                )
                await asyncio.sleep(wait)
            except BadRequest:
                raise
            except TelegramError as exc:
                raise self.send_error(exc, chat_id) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def send_error(self, exc: TelegramError, chat_id: str) -> SendError:
        """A Bot API error as the gateway's send error: flood control, a chat that is gone, or other."""
        if isinstance(exc, RetryAfter):
            wait = retry_after_seconds(exc)
            return SendRetryLater(
                f"telegram flood control: retry after {wait:g}s", retry_after=wait, chat_id=chat_id
            )
        if isinstance(exc, Forbidden):
            return SendGone(f"telegram refused the chat: {self._redact(exc.message)}", chat_id=chat_id)
        if isinstance(exc, ChatMigrated):
            return SendGone(f"telegram: the group moved to chat {exc.new_chat_id}", chat_id=chat_id)
        if isinstance(exc, BadRequest):
            return SendRejected(f"telegram rejected the message: {exc.message}", chat_id=chat_id)
        return SendError(f"telegram send failed: {self._redact(exc.message)}", chat_id=chat_id)

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        """Edit one of the bot's messages into `text` as Telegram HTML, or plain text if that is refused."""
        bot = self._bot()
        target = {"chat_id": int(chat.chat_id), "message_id": int(message_id)}
        fields = text_fields(well_formed(text))
        if "parse_mode" in fields:
            try:
                await self._with_flood_retry(bot.edit_message_text, **target, **fields)
                return
            except BadRequest as exc:
                logger.warning(
                    "telegram: chat %s rejected an HTML edit (%s); plain text", chat.chat_id, exc.message
                )
        try:
            await self._with_flood_retry(bot.edit_message_text, **target, text=well_formed(text))
        except BadRequest as exc:
            raise SendRejected(f"telegram refused the edit: {exc.message}", chat_id=chat.chat_id) from exc

    def typing(self, chat: ChatRef) -> TypingContext:
        return _Typing(self, chat)

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        """setMessageReaction with one emoji (Telegram accepts only its standard reaction emoji)."""
        bot = self._bot()
        try:
            await bot.set_message_reaction(
                chat_id=int(chat.chat_id), message_id=int(platform_message_id), reaction=emoji
            )
        except RetryAfter as exc:
            raise SendRetryLater(
                "telegram flood control on a reaction",
                retry_after=retry_after_seconds(exc),
                chat_id=chat.chat_id,
            ) from exc
        except TelegramError as exc:
            raise SendError(
                f"telegram refused the reaction: {self._redact(exc.message)}", chat_id=chat.chat_id
            ) from exc

    async def _send_typing(self, chat: ChatRef) -> None:
        bot = self._bot()
        thread_id = int(chat.thread_id) if chat.thread_id else None
        await bot.send_chat_action(
            chat_id=int(chat.chat_id), action=ChatAction.TYPING, message_thread_id=thread_id
        )


class _Typing:
    """Sends "typing" now and every few seconds until the block exits; failures are logged, never raised."""

    def __init__(self, sender: TelegramSender, chat: ChatRef) -> None:
        self._sender = sender
        self._chat = chat
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"telegram:typing:{self._chat.chat_id}")

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            try:
                await self._sender._send_typing(self._chat)
            except (TelegramError, SendError) as exc:
                logger.warning("telegram: typing action in chat %s failed: %s", self._chat.chat_id, exc)
            except Exception:
                # The indicator is cosmetic: a bug here must not abort the turn that holds it.
                logger.exception("telegram: typing loop error in chat %s", self._chat.chat_id)
            await asyncio.sleep(TYPING_INTERVAL)


def render_chunks(text: str, *, limit: int = SPLIT_MARGIN) -> list[tuple[str, str | None]]:
    """(markdown, html) pairs whose HTML fits Telegram's limit; chunks that render too long are re-split.

    html is None for a chunk that can only go out as plain text (escaping alone would overflow it).
    """
    out: list[tuple[str, str | None]] = []
    for chunk in split_text(text, limit, unit="utf16"):
        html = markdown_to_telegram_html(chunk)
        if measure(html, "utf16") <= MAX_UTF16:
            out.append((chunk, html))
        elif limit // 2 >= MIN_SPLIT:
            out.extend(render_chunks(chunk, limit=limit // 2))
        else:
            # Escaping alone overflows (e.g. thousands of "<"): this chunk goes out as plain text.
            out.append((chunk, None))
    return out


def well_formed(text: str) -> str:
    """Join split surrogate pairs and replace lone surrogates, which cannot be encoded for the wire."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

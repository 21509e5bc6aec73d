"""Telegram's one sender: every Bot API call of a reply, edit, draft, reaction or typing action.

`TelegramSender.request` is the single call path (like python-telegram-bot's
`BaseRequest._request_wrapper`): it waits out flood control up to a bounded number of attempts where
the caller allows waiting, and turns Bot API errors into the gateway's send errors (`send_error`).
A reply is split on its markdown below the limit and each chunk rendered to HTML; a chunk whose HTML
still does not fit is split again, and one that only escaping overflows goes out as plain text. If
Telegram rejects the markup, the chunk is re-sent as plain text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from telegram import Bot, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, ChatMigrated, Forbidden, RetryAfter, TelegramError

from gateway.errors import SendError, SendGone, SendRejected, SendRetryLater
from gateway.platforms.base import ChatRef, OutgoingMessage, SentMessage, TypingContext
from gateway.platforms.split import measure, split_text
from gateway.platforms.telegram.html import markdown_to_telegram_html
from gateway.platforms.telegram.polling import retry_after_seconds

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_UTF16 = 4096
SPLIT_MARGIN = 3500
"""Markdown is split below the limit so the HTML rendering (tags, escapes) usually fits first time."""
MIN_SPLIT = 512
TYPING_INTERVAL = 4.0
"""Telegram shows a chat action for about 5 s; refresh a little earlier."""


class TelegramSender:
    """The one way out to the Bot API. `bot` returns the started Bot or raises `SendError`; `redact`
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

    async def request(
        self, chat_id: str, call: Callable[[Bot], Awaitable[T]], *, wait: bool = True, what: str = "message"
    ) -> T:
        """Run one Bot API call for `chat_id`; errors come out as the gateway's send errors.

        With `wait`, flood control is waited out up to `max_send_attempts` calls while each wait is
        within `max_retry_wait`; without it, `SendRetryLater` is raised at once. `what` names the
        call in error messages ("message", "edit", "reaction").
        """
        bot = self._bot()
        attempts = self._max_send_attempts if wait else 1
        for attempt in range(1, attempts + 1):
            try:
                return await call(bot)
            except RetryAfter as exc:
                delay = retry_after_seconds(exc)
                if attempt == attempts or delay > self._max_retry_wait:
                    raise self.send_error(exc, chat_id, what=what) from exc
                logger.info(
                    "telegram: flood control in chat %s, waiting %.1fs (attempt %d)", chat_id, delay, attempt
                )
                await asyncio.sleep(delay)
            except TelegramError as exc:
                raise self.send_error(exc, chat_id, what=what) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def send_error(self, exc: TelegramError, chat_id: str, *, what: str = "message") -> SendError:
        """A Bot API error as the gateway's send error: flood control, a chat that is gone, rejected
        content, or other."""
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
            return SendRejected(f"telegram rejected the {what}: {exc.message}", chat_id=chat_id)
        failed = "send failed" if what == "message" else f"{what} failed"
        return SendError(f"telegram {failed}: {self._redact(exc.message)}", chat_id=chat_id)

    async def send(self, message: OutgoingMessage) -> SentMessage:
        chat = message.chat
        reply = reply_parameters(message.reply_to_message_id)
        ids: list[str] = []
        for markdown, html in render_chunks(well_formed(message.text)):
            target = _target(chat)
            if reply is not None and not ids:
                target["reply_parameters"] = reply
            ids.append(await self._send_chunk(chat.chat_id, markdown, html, target))
        return SentMessage(platform_message_ids=tuple(ids))

    async def _send_chunk(self, chat_id: str, markdown: str, html: str | None, target: dict[str, Any]) -> str:
        """Send one chunk as HTML; if Telegram refuses it, send the markdown source as plain text."""
        if html is not None:
            try:
                sent = await self.request(
                    chat_id, lambda bot: bot.send_message(text=html, parse_mode=ParseMode.HTML, **target)
                )
                return str(sent.message_id)
            except SendRejected as exc:
                # Any rejection of an HTML send is treated as rejected markup: the plain resend below
                # either succeeds or fails for the real reason, which is then reported.
                logger.warning("telegram: chat %s rejected HTML (%s); resending as plain text", chat_id, exc)
        sent = await self.request(chat_id, lambda bot: bot.send_message(text=markdown, **target))
        return str(sent.message_id)

    async def post(self, chat: ChatRef, text: str, *, reply_to: str | None) -> str:
        """Post `text` as one message without waiting out flood control (a reply being written)."""
        target = _target(chat)
        reply = reply_parameters(reply_to)
        if reply is not None:
            target["reply_parameters"] = reply
        sent = await self.request(
            chat.chat_id, lambda bot: bot.send_message(**target, **text_fields(text)), wait=False
        )
        return str(sent.message_id)

    async def edit(self, chat: ChatRef, message_id: str, text: str, *, wait: bool = True) -> None:
        """Edit one of the bot's messages into `text` as Telegram HTML.

        With `wait` (a finished part) flood control is waited out and refused HTML is replaced by
        plain text; without it (a reply being written) the first refusal is raised.
        """
        chat_id, edited = int(chat.chat_id), int(message_id)
        fields = text_fields(well_formed(text))
        if wait and "parse_mode" in fields:
            try:
                await self.request(
                    chat.chat_id,
                    lambda bot: bot.edit_message_text(chat_id=chat_id, message_id=edited, **fields),
                    what="edit",
                )
                return
            except SendRejected as exc:
                logger.warning("telegram: chat %s rejected an HTML edit (%s); plain text", chat.chat_id, exc)
            fields = {"text": well_formed(text)}
        await self.request(
            chat.chat_id,
            lambda bot: bot.edit_message_text(chat_id=chat_id, message_id=edited, **fields),
            wait=wait,
            what="edit",
        )

    async def draft(self, chat: ChatRef, draft_id: int, text: str, *, html: bool = True) -> None:
        """Show `text` as the draft `draft_id` (private chats), never waiting out flood control."""
        fields = text_fields(text) if html else {"text": text}
        await self.request(
            chat.chat_id,
            lambda bot: bot.send_message_draft(draft_id=draft_id, **_target(chat), **fields),
            wait=False,
        )

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        """setMessageReaction with one emoji (Telegram accepts only its standard reaction emoji)."""
        await self.request(
            chat.chat_id,
            lambda bot: bot.set_message_reaction(
                chat_id=int(chat.chat_id), message_id=int(platform_message_id), reaction=emoji
            ),
            wait=False,
            what="reaction",
        )

    def typing(self, chat: ChatRef) -> TypingContext:
        return _Typing(self, chat)

    async def send_typing(self, chat: ChatRef) -> None:
        await self.request(
            chat.chat_id,
            lambda bot: bot.send_chat_action(action=ChatAction.TYPING, **_target(chat)),
            wait=False,
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
                await self._sender.send_typing(self._chat)
            except SendError as exc:
                logger.warning("telegram: typing action in chat %s failed: %s", self._chat.chat_id, exc)
            except Exception:
                # The indicator is cosmetic: a bug here must not abort the turn that holds it.
                logger.exception("telegram: typing loop error in chat %s", self._chat.chat_id)
            await asyncio.sleep(TYPING_INTERVAL)


def reply_parts(text: str) -> list[str]:
    """A reply split into the messages it is sent as (the split `TelegramSender.send` makes first)."""
    return split_text(well_formed(text), SPLIT_MARGIN, unit="utf16")


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


def text_fields(text: str) -> dict[str, Any]:
    """`text` as Telegram HTML with its parse mode, or as plain text when the markup would not fit."""
    html = markdown_to_telegram_html(text)
    if measure(html, "utf16") <= MAX_UTF16:
        return {"text": html, "parse_mode": ParseMode.HTML}
    return {"text": text}


def reply_parameters(message_id: str | None) -> ReplyParameters | None:
    if not message_id:
        return None
    return ReplyParameters(message_id=int(message_id), allow_sending_without_reply=True)


def well_formed(text: str) -> str:
    """Join split surrogate pairs and replace lone surrogates, which cannot be encoded for the wire."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _target(chat: ChatRef) -> dict[str, Any]:
    return {
        "chat_id": int(chat.chat_id),
        "message_thread_id": int(chat.thread_id) if chat.thread_id else None,
    }

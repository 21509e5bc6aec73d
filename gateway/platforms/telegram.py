"""The Telegram adapter: python-telegram-bot in, `IncomingMessage` out; replies as Telegram HTML.

Long polling by default, a webhook server when `webhook_url` is set. Each update is converted where it
arrives and handed to the gateway in its own task, in arrival order, so one slow chat never holds up
another (the gateway orders turns per chat). Replies are split on the markdown, rendered to HTML and
re-sent as plain text if Telegram still rejects the markup; flood control waits and retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import warnings
from datetime import timedelta
from typing import Any

from telegram import BotCommand, Message, ReplyParameters, Update
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, InvalidToken, RetryAfter, TelegramError
from telegram.ext import Application, ApplicationBuilder, ContextTypes, MessageHandler, filters
from telegram.warnings import PTBDeprecationWarning

from gateway.errors import PlatformStartError, SendError, SendRejected, SendRetryLater
from gateway.platforms.base import (
    Capabilities,
    ChatRef,
    CommandSpec,
    IncomingMessage,
    OutgoingMessage,
    SentMessage,
    TypingContext,
)
from gateway.platforms.base import (
    MessageHandler as GatewayHandler,
)
from gateway.platforms.split import measure, split_text
from gateway.platforms.telegram_convert import BotIdentity, convert_update
from gateway.platforms.telegram_html import markdown_to_telegram_html
from gateway.platforms.telegram_media import BOT_API_DOWNLOAD_LIMIT, AlbumCollector, with_attachments

logger = logging.getLogger(__name__)

MAX_UTF16 = 4096
SPLIT_MARGIN = 3500
"""Markdown is split below the limit so the HTML rendering (tags, escapes) usually fits first time."""
MIN_SPLIT = 512
TYPING_INTERVAL = 4.0
"""Telegram shows a chat action for about 5 s; refresh a little earlier."""
ALLOWED_UPDATES = ["message", "edited_message", "channel_post", "edited_channel_post"]
_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")

AnyApplication = Application[Any, Any, Any, Any, Any, Any]


class TelegramAdapter:
    """`PlatformAdapter` for Telegram (see `gateway.platforms.base`)."""

    name = "telegram"
    capabilities = Capabilities(MAX_UTF16, "utf16", "telegram_html", supports_edit=True)

    def __init__(
        self,
        *,
        token: str,
        base_url: str = "https://api.telegram.org/bot",
        base_file_url: str | None = None,
        webhook_url: str | None = None,
        webhook_listen: str = "0.0.0.0",  # noqa: S104 - Telegram must reach the webhook from outside
        webhook_port: int = 8443,
        webhook_secret: str | None = None,
        poll_timeout: float = 10.0,
        max_send_attempts: int = 3,
        max_retry_wait: float = 30.0,
        max_file_bytes: int = BOT_API_DOWNLOAD_LIMIT,
    ) -> None:
        self._token = token
        self._base_url = base_url
        self._base_file_url = base_file_url or _file_url(base_url)
        self._webhook_url = webhook_url
        self._webhook_listen = webhook_listen
        self._webhook_port = webhook_port
        self._webhook_secret = webhook_secret
        self._poll_timeout = poll_timeout
        self._max_send_attempts = max_send_attempts
        self._max_retry_wait = max_retry_wait
        self._max_file_bytes = max_file_bytes
        self._albums = AlbumCollector()
        self._app: AnyApplication | None = None
        self._handler: GatewayHandler | None = None
        self._bot: BotIdentity | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._chat_order: dict[tuple[str, str, str], asyncio.Lock] = {}
        """One FIFO lock per chat: a chat's updates reach the gateway (and the store) in arrival order."""

    @property
    def bot_username(self) -> str | None:
        return self._bot.username if self._bot else None

    # Lifecycle -----------------------------------------------------------------------------------

    async def start(self, handler: GatewayHandler, commands: list[CommandSpec]) -> None:
        self._handler = handler
        app: AnyApplication = (
            ApplicationBuilder()
            .token(self._token)
            .base_url(self._base_url)
            .base_file_url(self._base_file_url)
            .job_queue(None)
            .build()
        )
        app.add_handler(
            MessageHandler(filters.UpdateType.MESSAGES | filters.UpdateType.CHANNEL_POSTS, self._on_update)
        )
        app.add_error_handler(self._on_error)
        try:
            await app.initialize()
            self._bot = BotIdentity(user_id=app.bot.id, username=app.bot.username)
            await app.bot.set_my_commands(_bot_commands(commands))
            await app.start()
            updater = app.updater
            if updater is None:  # pragma: no cover - the builder always creates one unless told not to
                raise PlatformStartError("telegram: the application has no updater")
            if self._webhook_url:
                await updater.start_webhook(
                    listen=self._webhook_listen,
                    port=self._webhook_port,
                    url_path=_url_path(self._webhook_url),
                    webhook_url=self._webhook_url,
                    secret_token=self._webhook_secret,
                    allowed_updates=ALLOWED_UPDATES,
                )
            else:
                await updater.start_polling(
                    timeout=timedelta(seconds=self._poll_timeout), allowed_updates=ALLOWED_UPDATES
                )
        except InvalidToken:
            await _quiet_shutdown(app)
            # PTB's message quotes the token itself; keep it out of logs and tracebacks.
            raise PlatformStartError(
                "telegram: the bot token was rejected (check TELEGRAM_BOT_TOKEN)"
            ) from None
        except TelegramError as exc:
            await _quiet_shutdown(app)
            raise PlatformStartError(f"telegram: could not start: {self._redact(exc.message)}") from exc
        except OSError as exc:  # the webhook port cannot be bound
            await _quiet_shutdown(app)
            raise PlatformStartError(f"telegram: could not start the webhook server: {exc}") from exc
        self._app = app
        mode = f"webhook {self._webhook_url}" if self._webhook_url else "long polling"
        logger.info(
            "telegram: connected as @%s (%s), %d commands registered", self._bot.username, mode, len(commands)
        )

    async def stop(self, *, drain_timeout: float = 10.0) -> None:
        """Stop receiving, let in-flight turns finish and reply (up to `drain_timeout`), then shut down."""
        app = self._app
        if app is None:
            return
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()  # hands updates already fetched to _on_update before returning
        self._albums.close_all()
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=drain_timeout)
            for task in pending:
                task.cancel()
            if pending:
                logger.warning("telegram: cancelled %d turns still running at shutdown", len(pending))
                await asyncio.gather(*pending, return_exceptions=True)
        self._app = None
        await app.shutdown()

    # Incoming ------------------------------------------------------------------------------------

    @staticmethod
    async def _on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Updates that could not be handled are logged with their chat, never dropped silently."""
        chat = update.effective_chat if isinstance(update, Update) else None
        logger.error(
            "telegram update %s in chat %s could not be handled",
            update.update_id if isinstance(update, Update) else "?",
            chat.id if chat is not None else "?",
            exc_info=context.error,
        )

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if self._bot is None or self._handler is None:  # pragma: no cover - handler registered after getMe
            return
        incoming = convert_update(update, self._bot)
        if incoming is None:
            return
        incoming = with_attachments(incoming, update, context.bot, max_bytes=self._max_file_bytes)
        delivery: IncomingMessage | asyncio.Future[IncomingMessage] = incoming
        group = update.effective_message.media_group_id if update.effective_message else None
        if group is not None and not incoming.is_edit:
            album = self._albums.add(f"{incoming.chat.chat_id}:{group}", incoming)
            if album is None:
                return  # a later item of an album whose delivery is already queued
            delivery = album
        key = incoming.chat.key
        order = self._chat_order.setdefault(key, asyncio.Lock())
        task = asyncio.create_task(
            self._deliver(self._handler, delivery, order), name=f"telegram:{incoming.chat.chat_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _t: self._forget_order(key, order))

    def _forget_order(self, key: tuple[str, str, str], order: asyncio.Lock) -> None:
        if (
            not order.locked()
            and self._chat_order.get(key) is order
            and not any(t.get_name() == f"telegram:{key[1]}" for t in self._tasks)
        ):
            del self._chat_order[key]

    @staticmethod
    async def _deliver(
        handler: GatewayHandler,
        delivery: IncomingMessage | asyncio.Future[IncomingMessage],
        order: asyncio.Lock,
    ) -> None:
        # Tasks start in update order and queue on the chat's lock first thing (asyncio locks are FIFO),
        # so different chats run concurrently while one chat's messages are stored in platform order.
        async with order:
            incoming = await delivery if isinstance(delivery, asyncio.Future) else delivery
            try:
                await handler(incoming)
            except Exception:
                logger.exception(
                    "telegram: handling message %s in chat %s failed",
                    incoming.platform_message_id,
                    incoming.chat.chat_id,
                )

    # Outgoing ------------------------------------------------------------------------------------

    async def send(self, message: OutgoingMessage) -> SentMessage:
        bot = self._require_app().bot
        chat_id = int(message.chat.chat_id)
        thread_id = int(message.chat.thread_id) if message.chat.thread_id else None
        reply = (
            ReplyParameters(message_id=int(message.reply_to_message_id), allow_sending_without_reply=True)
            if message.reply_to_message_id
            else None
        )
        ids: list[str] = []
        for markdown, html in render_chunks(_well_formed(message.text)):
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
                raise SendError(
                    f"telegram send failed: {self._redact(exc.message)}", chat_id=chat_id
                ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def typing(self, chat: ChatRef) -> TypingContext:
        return _Typing(self, chat)

    async def _send_typing(self, chat: ChatRef) -> None:
        bot = self._require_app().bot
        thread_id = int(chat.thread_id) if chat.thread_id else None
        await bot.send_chat_action(
            chat_id=int(chat.chat_id), action=ChatAction.TYPING, message_thread_id=thread_id
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "<token>")

    def _require_app(self) -> AnyApplication:
        if self._app is None:
            raise SendError("telegram adapter is not started")
        return self._app


class _Typing:
    """Sends "typing" now and every few seconds until the block exits; failures are logged, never raised."""

    def __init__(self, adapter: TelegramAdapter, chat: ChatRef) -> None:
        self._adapter = adapter
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
                await self._adapter._send_typing(self._chat)
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


def _well_formed(text: str) -> str:
    """Join split surrogate pairs and replace lone surrogates, which cannot be encoded for the wire."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def retry_after_seconds(exc: RetryAfter) -> float:
    """`RetryAfter.retry_after` as seconds; PTB 22 warns on int access while it migrates to timedelta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _bot_commands(commands: list[CommandSpec]) -> list[BotCommand]:
    menu: list[BotCommand] = []
    for spec in commands:
        name = spec.name.lower()
        if not _COMMAND_NAME.match(name):
            logger.warning(
                "telegram: command %r is not a valid Telegram command name; left out of the menu", spec.name
            )
            continue
        description = (spec.description or name)[:256]
        menu.append(BotCommand(name, description))
    return menu


def _file_url(base_url: str) -> str:
    """The file endpoint next to `base_url` (".../bot" -> ".../file/bot")."""
    root, sep, tail = base_url.rstrip("/").rpartition("/")
    return f"{root}/file/{tail}" if sep else base_url


def _url_path(webhook_url: str) -> str:
    path = webhook_url.split("://", 1)[-1]
    return path.split("/", 1)[1] if "/" in path else ""


async def _quiet_shutdown(app: AnyApplication) -> None:
    """Release what a failed start acquired; the start error is what the caller needs to see."""
    try:
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()
        await app.shutdown()
        await app.bot.shutdown()  # a failed initialize() leaves the bot's HTTP clients open
    except Exception:
        logger.warning("telegram: cleanup after a failed start also failed", exc_info=True)

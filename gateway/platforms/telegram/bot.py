"""The Telegram adapter: python-telegram-bot in, `IncomingMessage` out; replies as Telegram HTML.

Long polling by default (`polling`), a webhook server when `webhook_url` is set (`webhook`). Either
way an update is acknowledged to Telegram only once the gateway has stored its message. With several
workers (`fleet_roles`) one polls while the others stand by, and one at a time changes the webhook.
Each chat's updates reach the gateway one at a time in arrival order, different chats concurrently
(`lanes`); the photos of an album together. The adapter builds the one `TelegramSender` (`bot_api`) that every
outgoing call goes through (its `sender`, which the gateway's `Platforms` calls), and hands it to the
replies being written (`drafts`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from typing import Any

from telegram import Bot, BotCommand, Update
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from gateway.errors import PlatformConfigError, PlatformStartError, SendError
from gateway.platforms.base import (
    Capabilities,
    ChatKind,
    ChatRef,
    CommandSpec,
    IncomingMessage,
)
from gateway.platforms.base import (
    MessageHandler as GatewayHandler,
)
from gateway.platforms.fleet import Fleet, FleetTimings, RegisteredHere, Registrations, SoleWorker
from gateway.platforms.lanes import ChatLanes, hand_over
from gateway.platforms.telegram.bot_api import MAX_UTF16, TelegramSender, reply_parts
from gateway.platforms.telegram.drafts import TelegramLive
from gateway.platforms.telegram.files import BOT_API_DOWNLOAD_LIMIT, AlbumCollector, with_attachments
from gateway.platforms.telegram.fleet_roles import PollingLease, ensure_webhook
from gateway.platforms.telegram.polling import LongPoller
from gateway.platforms.telegram.registration import DEFAULT_MAX_CONNECTIONS, WantedWebhook
from gateway.platforms.telegram.updates import BotIdentity, convert_update
from gateway.platforms.telegram.webhook import WebhookServer

logger = logging.getLogger(__name__)

ALLOWED_UPDATES = ["message", "edited_message", "channel_post", "edited_channel_post"]
SEND_POOL_SIZE = 256
"""Concurrent Bot API connections for sends (python-telegram-bot's ApplicationBuilder default)."""
WEBHOOK_STORE_LIMIT_S = 20.0
"""A webhook request waits this long for its message to be stored before answering 500 (Telegram
retries); long polling waits as long as it takes, since nothing is confirmed meanwhile."""
_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


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
        webhook_max_connections: int = DEFAULT_MAX_CONNECTIONS,
        poll_timeout: float = 10.0,
        max_send_attempts: int = 3,
        max_retry_wait: float = 30.0,
        drain_timeout: float = 2.0,
        webhook_store_limit_s: float = WEBHOOK_STORE_LIMIT_S,
        max_file_bytes: int = BOT_API_DOWNLOAD_LIMIT,
        fleet: Fleet | None = None,
        fleet_timings: FleetTimings | None = None,
        registrations: Registrations | None = None,
    ) -> None:
        self._token = token
        self._fleet: Fleet = fleet if fleet is not None else SoleWorker()
        self._registrations: Registrations = registrations if registrations is not None else RegisteredHere()
        self._fleet_timings = fleet_timings or FleetTimings()
        self._polling_lease: PollingLease | None = None
        self._base_url = base_url
        self._base_file_url = base_file_url or _file_url(base_url)
        self._webhook_url = webhook_url
        self._webhook_listen = webhook_listen
        self._webhook_port = webhook_port
        self._webhook_secret = webhook_secret
        self._webhook_max_connections = webhook_max_connections
        self._refused_before = 0
        self._poll_timeout = poll_timeout
        self._drain_timeout = drain_timeout
        self._webhook_store_limit_s = webhook_store_limit_s
        self._max_file_bytes = max_file_bytes
        self._albums = AlbumCollector()
        self._api: Bot | None = None
        self._handler: GatewayHandler | None = None
        self._bot: BotIdentity | None = None
        self._lanes = ChatLanes("telegram")
        self._poller: LongPoller | None = None
        self._webhook: WebhookServer | None = None
        self._drafts = itertools.count(1)
        self.sender = TelegramSender(
            self._require_bot,
            redact=self._redact,
            max_send_attempts=max_send_attempts,
            max_retry_wait=max_retry_wait,
        )

    @property
    def bot_username(self) -> str | None:
        return self._bot.username if self._bot else None

    @property
    def refused_deliveries(self) -> int:
        """Webhook requests refused for a missing or wrong secret token since start (`WebhookReceiver`)."""
        return self._refused_before + (self._webhook.refused if self._webhook is not None else 0)

    # Lifecycle -----------------------------------------------------------------------------------

    async def start(self, handler: GatewayHandler, commands: list[CommandSpec]) -> None:
        self._handler = handler
        api = Bot(
            self._token,
            base_url=self._base_url,
            base_file_url=self._base_file_url,
            request=HTTPXRequest(connection_pool_size=SEND_POOL_SIZE),
            get_updates_request=HTTPXRequest(connection_pool_size=1),
        )
        self._api = api  # from here on, stop() releases it whatever happens below
        try:
            await api.initialize()
            self._bot = BotIdentity(user_id=api.id, username=api.username)
            await api.set_my_commands(_bot_commands(commands))
            if self._webhook_url:
                await self._start_webhook(api, self._webhook_url)
            else:
                self._polling_lease = PollingLease(
                    self._fleet, self._fleet_timings, begin=self._begin_polling, end=self._end_polling
                )
                await self._polling_lease.start()
        except InvalidToken:
            await self._quiet_stop()
            # PTB's message quotes the token itself; keep it out of logs and tracebacks.
            raise PlatformConfigError(
                "telegram: the bot token was rejected (check TELEGRAM_BOT_TOKEN)"
            ) from None
        except TelegramError as exc:
            await self._quiet_stop()
            raise PlatformStartError(f"telegram: could not start: {self._redact(exc.message)}") from exc
        except OSError as exc:  # the webhook port cannot be bound
            await self._quiet_stop()
            raise PlatformStartError(f"telegram: could not start the webhook server: {exc}") from exc
        except BaseException:  # cancelled while starting (a stop was requested)
            await self._quiet_stop()
            raise
        mode = f"webhook {self._webhook_url}" if self._webhook_url else self._polling_mode()
        logger.info(
            "telegram: connected as @%s (%s), %d commands registered", self._bot.username, mode, len(commands)
        )

    async def _start_webhook(self, api: Bot, url: str) -> None:
        # Bind first: a busy port fails the start before Telegram is told to send updates here.
        self._webhook = WebhookServer(
            listen=self._webhook_listen,
            port=self._webhook_port,
            path=_url_path(url),
            secret=self._webhook_secret,
            receive=self._receive_webhook,
            shutdown_timeout=self._drain_timeout,
        )
        await self._webhook.start()
        wanted = WantedWebhook.of(
            url=url,
            token=self._token,
            secret=self._webhook_secret,
            allowed_updates=ALLOWED_UPDATES,
            max_connections=self._webhook_max_connections,
        )
        await ensure_webhook(api, self._fleet, self._registrations, wanted, secret=self._webhook_secret)
        self._webhook.registered = True

    def _polling_mode(self) -> str:
        if self._polling_lease is not None and not self._polling_lease.polling:
            return "long polling, standing by"
        return "long polling"

    async def _begin_polling(self) -> None:
        """This worker holds the polling lease: take over from a webhook or a dead poller."""
        api = self._require_bot()
        await api.delete_webhook(drop_pending_updates=False)
        self._poller = LongPoller(
            api,
            self._dispatch,
            timeout=self._poll_timeout,
            allowed_updates=ALLOWED_UPDATES,
            redact=self._redact,
        )
        self._poller.start()

    async def _end_polling(self) -> None:
        """Another worker took the lease: stop fetching (what was fetched is still stored)."""
        poller, self._poller = self._poller, None
        if poller is not None:
            await poller.stop()
            await poller.confirm()

    async def stop(self) -> None:
        """Stop receiving, give updates being stored up to `drain_timeout`, confirm them, shut down.

        Updates whose storing was cut off stay unconfirmed, so Telegram delivers them again. The
        polling lease is released last, once nothing this worker fetched is left unconfirmed.
        """
        lease = self._polling_lease
        if lease is not None:
            await lease.stop()
        if self._poller is not None:
            await self._poller.stop()
        if self._webhook is not None:
            await self._webhook.stop()  # waits for requests in flight, up to drain_timeout
            self._refused_before += self._webhook.refused
            self._webhook = None
        self._albums.close_all()  # an album still settling is handed over now, with what arrived
        cancelled = await self._lanes.drain(self._drain_timeout)
        if cancelled:
            logger.warning(
                "telegram: %d update(s) not stored before shutdown; Telegram delivers them again", cancelled
            )
        if self._poller is not None:
            await self._poller.confirm()
            self._poller = None
        if lease is not None:
            await lease.release()
            self._polling_lease = None
        api, self._api = self._api, None
        if api is not None:
            await api.shutdown()

    async def _quiet_stop(self) -> None:
        """Release what a failed start acquired; the start error is what the caller needs to see."""
        try:
            await self.stop()
        except Exception:
            logger.warning("telegram: cleanup after a failed start also failed", exc_info=True)

    # Incoming ------------------------------------------------------------------------------------

    def _dispatch(self, update: Update) -> asyncio.Task[bool] | None:
        """Queue the update's hand-over on its chat's lane (long polling); None if nothing to store."""
        incoming = self._convert(update)
        handler = self._handler
        if incoming is None or handler is None:
            return None
        return self._submit(handler, incoming, update)

    async def _receive_webhook(self, data: dict[str, Any]) -> bool:
        """One webhook update: True once its message is stored (or there is nothing to store)."""
        api, handler = self._api, self._handler
        if api is None or handler is None:
            return False
        try:
            update = Update.de_json(data, api)
        except Exception:
            logger.exception("telegram webhook: update %s could not be read", data.get("update_id"))
            return True  # Telegram would resend the same bytes forever
        incoming = self._convert(update)
        if incoming is None:
            return True
        task = self._submit(handler, incoming, update, give_up_after_s=self._webhook_store_limit_s)
        # Shielded: if Telegram hangs up, the message is still stored (its resend is a duplicate).
        return await asyncio.shield(task)

    def _submit(
        self,
        handler: GatewayHandler,
        incoming: IncomingMessage,
        update: Update,
        *,
        give_up_after_s: float | None = None,
    ) -> asyncio.Task[bool]:
        """Queue the hand-over on the chat's lane; the photos of one album are handed over together
        (their updates share the album's task, so each is acknowledged once the album is stored)."""
        message = update.effective_message
        group = message.media_group_id if message is not None else None
        if group is None or incoming.is_edit:
            return self._lanes.submit(
                incoming.chat.key,
                lambda: hand_over(handler, incoming, platform="telegram", give_up_after_s=give_up_after_s),
            )
        album = self._albums.add(f"{incoming.chat.chat_id}:{group}", incoming)
        if album.task is None:

            async def hand_over_album() -> bool:
                merged = await album.future
                return await hand_over(handler, merged, platform="telegram", give_up_after_s=give_up_after_s)

            album.task = self._lanes.submit(incoming.chat.key, hand_over_album)
        return album.task

    def _convert(self, update: Update) -> IncomingMessage | None:
        if self._bot is None:  # pragma: no cover - updates flow only after getMe
            return None
        try:
            incoming = convert_update(update, self._bot)
            if incoming is None or self._api is None:
                return incoming
            return with_attachments(incoming, update, self._api, max_bytes=self._max_file_bytes)
        except Exception:
            # A bug, not a transient fault: retrying cannot help, so it is logged with its chat and
            # acknowledged rather than holding up every later update.
            chat = update.effective_chat
            logger.exception(
                "telegram update %s in chat %s could not be handled",
                update.update_id,
                chat.id if chat is not None else "?",
            )
            return None

    # Outgoing: everything goes through `sender` (gateway.platforms.telegram.bot_api) ---------------

    def parts(self, text: str) -> list[str]:
        return reply_parts(text)

    def live(self, chat: ChatRef, *, reply_to: str | None) -> TelegramLive | None:
        """Drafts or an edited message (gateway.platforms.telegram.drafts); none in a channel."""
        if chat.kind is ChatKind.CHANNEL:
            return None
        draft_id = next(self._drafts) * 100
        return TelegramLive(self.sender, chat, parts=reply_parts, reply_to=reply_to, draft_id=draft_id)

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "<token>")

    def _require_bot(self) -> Bot:
        if self._api is None:
            raise SendError("telegram adapter is not started")
        return self._api


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

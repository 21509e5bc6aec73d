"""Discord adapter on discord.py: gateway events in as `IncomingMessage`, replies out under 2000 chars.

DMs are private chats, guild text channels are group chats and a thread is its own chat (chat id =
parent channel, thread id = the thread). `start` returns once the gateway is READY; the slash commands
are synced afterwards in the background with their own retries, so a rate-limited sync never keeps
the bot deaf. Each chat's messages reach the gateway one at a time in arrival order (`lanes`).
Slash commands are deferred at once; the reply to one goes out as the interaction's followup. Every
send forbids @everyone/@here and role pings. discord.py types never leave this module.
"""

from __future__ import annotations

import asyncio
import logging
import re
import warnings
from typing import Any

import aiohttp
import yarl

with warnings.catch_warnings():
    # discord.py imports the stdlib `audioop` (voice only, unused here), deprecated since 3.11.
    warnings.filterwarnings("ignore", message="'audioop' is deprecated", category=DeprecationWarning)
    import discord
from discord import app_commands

from gateway.errors import (
    PlatformConfigError,
    PlatformStartError,
    SendError,
    SendGone,
    SendRejected,
    SendRetryLater,
)
from gateway.platforms.base import (
    Author,
    Capabilities,
    ChatKind,
    ChatRef,
    CommandSpec,
    IncomingMessage,
    MediaKind,
    MessageHandler,
    OutgoingMessage,
    SentMessage,
)
from gateway.platforms.discord_media import attachments_of
from gateway.platforms.discord_reply import reply_of
from gateway.platforms.discord_startup import TOKEN_HELP, start_error, sync_commands
from gateway.platforms.lanes import ChatLanes, hand_over
from gateway.platforms.split import split_text

logger = logging.getLogger(__name__)

PLATFORM = "discord"
MAX_LENGTH = 2000
FALLBACK_LENGTH = 1000
"""Chunk size for the second attempt after Discord rejects a chunk (400, e.g. code 50035)."""
CLOSE_WAIT_S = 2.0
"""After closing the client, how long the gateway task may take to end before it is cancelled."""
_COMMAND_RE = re.compile(r"^/([\w-]{1,32})(?:\s+(.*))?$", re.DOTALL)
_OWN_IDS_KEPT = 2000

SAFE_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)
"""Users may be pinged by id; @everyone, @here and role mentions never are."""


class _Client(discord.Client):
    """A discord.Client that forwards the events the adapter needs."""

    def __init__(self, adapter: DiscordAdapter, **options: Any) -> None:
        super().__init__(**options)
        self._adapter = adapter

    async def on_ready(self) -> None:
        self._adapter._ready.set()

    async def on_message(self, message: discord.Message) -> None:
        await self._adapter._deliver(self._adapter._convert(message, is_edit=False))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self._adapter._deliver(self._adapter._convert(payload.message, is_edit=True))


class DiscordAdapter:
    """`PlatformAdapter` for Discord. `api_base_url`/`gateway_url` point discord.py elsewhere (fakes)."""

    name = PLATFORM
    capabilities = Capabilities(
        max_message_length=MAX_LENGTH, length_unit="chars", markdown="discord_markdown", supports_edit=True
    )

    def __init__(
        self,
        token: str,
        api_base_url: str | None = None,
        gateway_url: str | None = None,
        *,
        guild_ready_timeout: float = 2.0,
        ready_timeout: float = 30.0,
        max_ratelimit_timeout: float | None = None,
        drain_timeout: float = 2.0,
        store_retry_s: float = 60.0,
    ) -> None:
        self._token = token
        self._api_base_url = api_base_url.rstrip("/") if api_base_url else None
        self._gateway_url = _websocket_url(gateway_url) if gateway_url else None
        self._guild_ready_timeout = guild_ready_timeout
        self._ready_timeout = ready_timeout
        self._max_ratelimit_timeout = max_ratelimit_timeout
        self._client: _Client | None = None
        self._connect_task: asyncio.Task[None] | None = None
        self._handler: MessageHandler | None = None
        self._ready = asyncio.Event()
        self._own_message_ids: dict[int, None] = {}
        self._saved_urls: tuple[str, yarl.URL] | None = None
        self._sync_task: asyncio.Task[None] | None = None
        self._lanes = ChatLanes("discord")
        self._drain_timeout = drain_timeout
        self._store_retry_s = store_retry_s

    # ---- lifecycle -------------------------------------------------------------------------------

    async def start(self, handler: MessageHandler, commands: list[CommandSpec]) -> None:
        """Log in and connect the gateway; return once READY. Commands are synced in the background."""
        self._handler = handler
        self._ready.clear()
        self._point_library_at_urls()
        intents = discord.Intents.default()
        intents.message_content = True
        intents.dm_messages = True
        intents.guilds = True
        client = _Client(
            self,
            intents=intents,
            guild_ready_timeout=self._guild_ready_timeout,
            max_ratelimit_timeout=self._max_ratelimit_timeout,
            chunk_guilds_at_startup=False,
        )
        self._client = client
        tree = app_commands.CommandTree(client)
        for spec in commands:
            tree.add_command(self._slash_command(spec))
        try:
            await self._connect(client)
        except BaseException:  # a start error, or cancelled because a stop was requested
            await self.stop()
            raise
        self._sync_task = asyncio.create_task(sync_commands(tree, len(commands)), name="discord-sync")
        logger.info(
            "discord: connected as %s; syncing %d slash commands in the background",
            client.user,
            len(commands),
        )

    async def _connect(self, client: _Client) -> None:
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            raise PlatformConfigError(TOKEN_HELP) from None
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            raise PlatformStartError(f"discord login failed: {type(exc).__name__}") from exc
        self._connect_task = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        self._connect_task.add_done_callback(self._connection_ended)
        ready = asyncio.create_task(self._ready.wait())
        try:
            done, _ = await asyncio.wait(
                {ready, self._connect_task}, timeout=self._ready_timeout, return_when="FIRST_COMPLETED"
            )
        finally:
            ready.cancel()
        if ready in done:
            return
        if self._connect_task in done and not self._connect_task.cancelled():
            failure = self._connect_task.exception()
            if failure is not None:
                raise start_error(failure) from failure
        raise PlatformStartError(f"discord gateway not READY within {self._ready_timeout:.0f}s")

    async def stop(self) -> None:
        """Stop syncing and receiving and close the connection, while messages being stored get a
        moment (`drain_timeout`) to finish."""
        sync, self._sync_task = self._sync_task, None
        if sync is not None:
            sync.cancel()
            await asyncio.gather(sync, return_exceptions=True)
        cancelled, _ = await asyncio.gather(self._lanes.drain(self._drain_timeout), self._disconnect())
        if cancelled:
            logger.warning("discord: %d message(s) were still being stored at shutdown", cancelled)
        self._restore_library_urls()

    async def _disconnect(self) -> None:
        client, self._client = self._client, None
        task, self._connect_task = self._connect_task, None
        if client is not None:
            await client.close()
        if task is not None:
            # close() ends a connected gateway; one stuck before READY (no HELLO, a hung socket) is
            # only ended by cancelling it.
            _, pending = await asyncio.wait({task}, timeout=CLOSE_WAIT_S)
            for stuck in pending:
                stuck.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _connection_ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or not self._ready.is_set():
            return  # a failure before READY is reported by start()
        exc = task.exception()
        if exc is not None:
            logger.error("discord: the gateway connection ended: %s", start_error(exc))

    def _point_library_at_urls(self) -> None:
        # The only two library settings touched; they are module-level, so restore them on stop.
        self._saved_urls = (discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
        if self._api_base_url is not None:
            discord.http.Route.BASE = self._api_base_url
        if self._gateway_url is not None:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self._gateway_url)

    def _restore_library_urls(self) -> None:
        if self._saved_urls is not None:
            discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = self._saved_urls
            self._saved_urls = None

    # ---- inbound ---------------------------------------------------------------------------------

    def _slash_command(self, spec: CommandSpec) -> app_commands.Command[Any, Any, None]:
        name = spec.name
        description = (spec.description or name)[:100]
        if spec.args_hint:

            async def with_args(interaction: discord.Interaction, args: str | None = None) -> None:
                await self._on_slash(interaction, name, args or "")

            callback = app_commands.describe(args=spec.args_hint[:100])(with_args)
            return app_commands.Command(name=name, description=description, callback=callback)

        async def no_args(interaction: discord.Interaction) -> None:
            await self._on_slash(interaction, name, "")

        return app_commands.Command(name=name, description=description, callback=no_args)

    async def _on_slash(self, interaction: discord.Interaction, command: str, args: str) -> None:
        try:
            await interaction.response.defer(thinking=True)
        except discord.HTTPException as exc:
            logger.warning("discord: could not defer /%s (status %s, code %s)", command, exc.status, exc.code)
        user = interaction.user
        message = IncomingMessage(
            chat=self._chat_ref(interaction.channel, interaction.channel_id, interaction.guild_id),
            author=Author(user_id=str(user.id), display_name=user.display_name, is_bot=user.bot),
            text=f"/{command} {args}".rstrip(),
            platform_message_id=str(interaction.id),
            sent_at=interaction.created_at,
            is_command=True,
            command=command.lower(),
            command_args=args.strip(),
            is_interaction=True,
            reply_handle=interaction,
        )
        await self._deliver(message)

    async def _deliver(self, message: IncomingMessage) -> None:
        """Hand the message over on its chat's lane (arrival order per chat) and wait until it is kept.

        Discord does not deliver a message again outside a RESUME, so a failing hand-over is retried
        for `store_retry_s`; after that the chat's later messages must not wait any longer.
        """
        handler = self._handler
        if handler is None:
            return
        stored = await self._lanes.submit(
            message.chat.key,
            lambda: hand_over(handler, message, platform=PLATFORM, give_up_after_s=self._store_retry_s),
        )
        if not stored:
            logger.error(
                "discord: message %s in chat %s could not be stored within %.0fs; it is lost",
                message.platform_message_id,
                message.chat.chat_id,
                self._store_retry_s,
            )

    def _chat_ref(self, channel: Any, channel_id: int | None, guild_id: int | None) -> ChatRef:
        if isinstance(channel, discord.Thread):
            return ChatRef(PLATFORM, str(channel.parent_id), str(channel.id), ChatKind.GROUP, channel.name)
        if isinstance(channel, discord.DMChannel):
            return ChatRef(PLATFORM, str(channel.id), None, ChatKind.PRIVATE, None)
        if isinstance(channel, discord.GroupChannel):
            return ChatRef(PLATFORM, str(channel.id), None, ChatKind.GROUP, channel.name)
        if isinstance(channel, discord.abc.GuildChannel):
            return ChatRef(PLATFORM, str(channel.id), None, ChatKind.GROUP, f"#{channel.name}")
        kind = ChatKind.PRIVATE if guild_id is None else ChatKind.GROUP
        return ChatRef(PLATFORM, str(channel_id if channel is None else channel.id), None, kind, None)

    def _convert(self, message: discord.Message, *, is_edit: bool) -> IncomingMessage:
        """Turn a discord.py message into the gateway's value; own and other bots' messages included."""
        me = self._client.user if self._client is not None else None
        my_id = me.id if me is not None else None
        text = message.content
        mentions_bot = my_id is not None and any(u.id == my_id for u in message.mentions)
        if mentions_bot:
            text = re.sub(rf"<@!?{my_id}>", "", text).strip()
        command = command_args = None
        match = _COMMAND_RE.match(text)
        if match is not None:
            command, command_args = match.group(1).lower(), (match.group(2) or "").strip()
        reference = message.reference
        is_forwarded = reference is not None and reference.type is discord.MessageReferenceType.forward
        if is_forwarded and not text and message.message_snapshots:
            text = message.message_snapshots[0].content
        media = _media_kinds(message)
        replies_to_me = not is_forwarded and self._replies_to_me(reference, my_id)
        return IncomingMessage(
            chat=self._chat_ref(
                message.channel, message.channel.id, message.guild.id if message.guild else None
            ),
            author=Author(
                user_id=str(message.author.id),
                display_name=message.author.display_name,
                is_bot=message.author.bot,
                is_self=my_id is not None and message.author.id == my_id,
            ),
            text=text,
            platform_message_id=str(message.id),
            sent_at=(message.edited_at or message.created_at) if is_edit else message.created_at,
            mentions_bot=mentions_bot,
            reply_to_bot=replies_to_me,
            is_command=command is not None,
            command=command,
            command_args=command_args or "",
            is_edit=is_edit,
            is_forwarded=is_forwarded,
            media=media,
            # Discord has no captions: the text is the message's text, next to its attachments.
            attachments=attachments_of(message),
            reply_to=reply_of(message, to_bot=replies_to_me),
        )

    def _replies_to_me(self, reference: discord.MessageReference | None, my_id: int | None) -> bool:
        if reference is None or my_id is None or reference.message_id is None:
            return False
        target = reference.resolved or reference.cached_message
        if isinstance(target, discord.Message):
            return target.author.id == my_id
        return reference.message_id in self._own_message_ids

    def _remember_own(self, message_id: int) -> None:
        self._own_message_ids[message_id] = None
        while len(self._own_message_ids) > _OWN_IDS_KEPT:
            del self._own_message_ids[next(iter(self._own_message_ids))]

    # ---- outbound --------------------------------------------------------------------------------

    async def send(self, message: OutgoingMessage) -> SentMessage:
        """Split under 2000 chars and send; a slash-command reply goes out as the interaction followup."""
        ids: list[str] = []
        reference = message.reply_to_message_id
        for chunk in split_text(message.text, MAX_LENGTH, unit="chars"):
            try:
                ids.append(await self._send_chunk(message, chunk, reference))
            except SendRejected:
                ids.extend(await self._send_smaller(message, chunk))
            reference = None
        return SentMessage(tuple(ids))

    async def _send_smaller(self, message: OutgoingMessage, chunk: str) -> list[str]:
        """Second attempt after Discord rejected a chunk: smaller pieces, link embeds suppressed.

        A piece that is rejected again raises `SendRejected` carrying the chat id.
        """
        logger.warning(
            "discord: chat %s rejected a chunk; re-sending in smaller pieces", message.chat.chat_id
        )
        return [
            await self._send_chunk(message, piece, None, plain=True)
            for piece in split_text(chunk, FALLBACK_LENGTH, unit="chars")
        ]

    async def _send_chunk(
        self, message: OutgoingMessage, chunk: str, reply_to: str | None, *, plain: bool = False
    ) -> str:
        """Send one chunk; translate discord.py's errors into the gateway's send errors."""
        chat_id = message.chat.chat_id
        try:
            sent_id = await self._post(message, chunk, reply_to, plain=plain)
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise send_error(exc, chat_id) from exc
        self._remember_own(sent_id)
        return str(sent_id)

    async def _post(self, message: OutgoingMessage, chunk: str, reply_to: str | None, *, plain: bool) -> int:
        handle = message.reply_handle
        if isinstance(handle, discord.Interaction) and not handle.is_expired():
            try:
                followup = await handle.followup.send(
                    chunk, allowed_mentions=SAFE_MENTIONS, wait=True, suppress_embeds=plain
                )
            except discord.NotFound:
                logger.warning("discord: interaction %s is gone; replying in the channel", handle.id)
            else:
                return followup.id
        target = int(message.chat.thread_id or message.chat.chat_id)
        channel = self._require_client().get_partial_messageable(target)
        if reply_to:
            ref = discord.MessageReference(
                message_id=int(reply_to), channel_id=target, fail_if_not_exists=False
            )
            posted = await channel.send(
                chunk, allowed_mentions=SAFE_MENTIONS, reference=ref, suppress_embeds=plain
            )
        else:
            posted = await channel.send(chunk, allowed_mentions=SAFE_MENTIONS, suppress_embeds=plain)
        return posted.id

    def typing(self, chat: ChatRef) -> _Typing:
        return _Typing(self._require_client(), int(chat.thread_id or chat.chat_id))

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        """Add a reaction (PUT .../reactions/{emoji}/@me); needs the Add Reactions permission."""
        channel = self._require_client().get_partial_messageable(int(chat.thread_id or chat.chat_id))
        try:
            await channel.get_partial_message(int(platform_message_id)).add_reaction(emoji)
        except discord.HTTPException as exc:
            detail = f"discord refused the reaction ({exc.status}, code {exc.code})"
            raise SendError(detail, chat_id=chat.chat_id) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise SendError(f"discord unreachable: {type(exc).__name__}", chat_id=chat.chat_id) from exc

    # ---- streaming and per-part delivery ---------------------------------------------------------

    def parts(self, text: str) -> list[str]:
        return split_text(text, MAX_LENGTH, unit="chars")

    def live(self, chat: ChatRef, *, reply_to: str | None) -> DiscordLive:
        return DiscordLive(self, chat, reply_to=reply_to)

    async def post(self, chat: ChatRef, text: str, reply_to: str | None) -> str:
        """Post one message (no retries; errors translated); returns its id."""
        message = OutgoingMessage(chat=chat, text=text)
        try:
            sent_id = await self._post(message, text, reply_to, plain=False)
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise send_error(exc, chat.chat_id) from exc
        self._remember_own(sent_id)
        return str(sent_id)

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        """Replace the content of one of the bot's messages (PATCH; discord.py handles rate limits)."""
        channel = self._require_client().get_partial_messageable(int(chat.thread_id or chat.chat_id))
        try:
            await channel.get_partial_message(int(message_id)).edit(
                content=text, allowed_mentions=SAFE_MENTIONS
            )
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise send_error(exc, chat.chat_id, editing=True) from exc

    def _require_client(self) -> _Client:
        if self._client is None:
            raise SendError("discord adapter is not started")
        return self._client


class _Typing:
    """Keeps the typing indicator alive (discord.py re-posts it every 5 s); failures are only logged."""

    def __init__(self, client: discord.Client, channel_id: int) -> None:
        self._inner = client.get_partial_messageable(channel_id).typing()
        self._channel_id = channel_id
        self._entered = False

    async def __aenter__(self) -> None:
        try:
            await self._inner.__aenter__()
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            logger.warning("discord: typing in channel %s failed: %s", self._channel_id, type(exc).__name__)
        else:
            self._entered = True

    async def __aexit__(self, *exc: object) -> None:
        if self._entered:
            await self._inner.__aexit__(None, None, None)


def _media_kinds(message: discord.Message) -> tuple[MediaKind, ...]:
    kinds: list[MediaKind] = []
    for attachment in message.attachments:
        content_type = attachment.content_type or ""
        if content_type.startswith("image/"):
            kinds.append("photo")
        elif content_type.startswith("audio/"):
            kinds.append("voice")
        elif content_type.startswith("video/"):
            kinds.append("video")
        else:
            kinds.append("document")
    kinds.extend("sticker" for _ in message.stickers)
    return tuple(kinds)


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


def send_error(exc: BaseException, chat_id: str, *, editing: bool = False) -> SendError:
    """discord.py's and aiohttp's errors as the gateway's send errors."""
    if isinstance(exc, discord.RateLimited):
        return SendRetryLater("discord rate limit", retry_after=exc.retry_after, chat_id=chat_id)
    if isinstance(exc, discord.NotFound) and editing:
        return SendRejected(f"discord: the message to edit is gone (code {exc.code})", chat_id=chat_id)
    if isinstance(exc, discord.Forbidden | discord.NotFound):
        return SendGone(f"discord refused the send ({exc.status}, code {exc.code})", chat_id=chat_id)
    if isinstance(exc, discord.HTTPException):
        if exc.status == 429:
            # discord.py retried on its own already; give up for now and let the caller wait.
            return SendRetryLater("discord rate limit", retry_after=_retry_after(exc), chat_id=chat_id)
        if exc.status == 400:
            return SendRejected(f"discord rejected the content (code {exc.code})", chat_id=chat_id)
        return SendError(f"discord send failed ({exc.status}, code {exc.code})", chat_id=chat_id)
    return SendError(f"discord unreachable: {type(exc).__name__}", chat_id=chat_id)


def _retry_after(exc: discord.HTTPException) -> float:
    header = exc.response.headers.get("Retry-After") if exc.response is not None else None
    try:
        return float(header) if header else 1.0
    except ValueError:
        return 1.0


def _websocket_url(url: str) -> str:
    """The gateway URL with a websocket scheme; http(s) settings values are accepted and mapped."""
    parsed = yarl.URL(url)
    scheme = {"http": "ws", "https": "wss"}.get(parsed.scheme, parsed.scheme)
    return str(parsed.with_scheme(scheme))

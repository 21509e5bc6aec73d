"""Discord adapter on discord.py: the gateway connection, events in as `IncomingMessage`, replies out.

`start` returns once this worker's shards are READY (`shards`: which ones, leased over the fleet);
the slash commands are synced afterwards in the background
with their own retries, so a rate-limited sync never keeps the bot deaf. Each chat's messages reach
the gateway one at a time in arrival order (`lanes`). Slash commands are deferred at once. What a
message becomes is `inbound`'s. The adapter builds the one `DiscordSender` (`rest`) that every
outgoing call goes through (its `sender`, which the gateway's `Platforms` calls), and hands it to the
replies being written (`edits`). discord.py types
never leave these modules.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import discord
import yarl
from discord import app_commands

from gateway.errors import PlatformConfigError, PlatformStartError, SendError
from gateway.platforms.base import (
    Capabilities,
    ChatRef,
    CommandSpec,
    IncomingMessage,
    MessageHandler,
)
from gateway.platforms.discord.edits import DiscordLive
from gateway.platforms.discord.inbound import PLATFORM, convert_message, slash_message
from gateway.platforms.discord.rest import MAX_LENGTH, DiscordSender, reply_parts
from gateway.platforms.discord.shards import ShardKeeper
from gateway.platforms.discord.startup import TOKEN_HELP, start_error, sync_commands
from gateway.platforms.fleet import Fleet, FleetTimings, SoleWorker
from gateway.platforms.lanes import ChatLanes, hand_over

logger = logging.getLogger(__name__)

CLOSE_WAIT_S = 2.0
"""After closing the client, how long the gateway task may take to end before it is cancelled."""


class _Client(discord.Client):
    """A discord.Client that forwards the events the adapter needs (one per connected shard)."""

    def __init__(self, adapter: DiscordAdapter, ready: asyncio.Event | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._adapter = adapter
        self._ready_event = ready or asyncio.Event()

    async def on_ready(self) -> None:
        self._ready_event.set()

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        # Replaces discord.py's own 5 s pause: the IDENTIFY bucket is paced across the fleet.
        await self._adapter._identify_slot(shard_id)

    async def on_message(self, message: discord.Message) -> None:
        await self._adapter._deliver(self._adapter._convert(message, is_edit=False))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self._adapter._deliver(self._adapter._convert(payload.message, is_edit=True))


@dataclass
class _Shard:
    client: _Client
    task: asyncio.Task[None]
    ready: asyncio.Event


class DiscordAdapter:
    """`PlatformAdapter` for Discord. `api_base_url`/`gateway_url` point discord.py elsewhere (fakes).

    One logged-in client (never connected) sends; each shard this worker holds (`shards`) has a client
    of its own connected to the gateway. With `shard_count` 1 that is the whole bot, as one client.
    """

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
        shard_count: int | Literal["auto"] = 1,
        identify_interval_s: float = 5.0,
        fleet: Fleet | None = None,
        fleet_timings: FleetTimings | None = None,
    ) -> None:
        self._token = token
        self._api_base_url = api_base_url.rstrip("/") if api_base_url else None
        self._gateway_url = _websocket_url(gateway_url) if gateway_url else None
        self._guild_ready_timeout = guild_ready_timeout
        self._ready_timeout = ready_timeout
        self._max_ratelimit_timeout = max_ratelimit_timeout
        self._shard_count = shard_count
        self._identify_interval_s = identify_interval_s
        self._fleet: Fleet = fleet if fleet is not None else SoleWorker()
        self._fleet_timings = fleet_timings or FleetTimings()
        self._client: _Client | None = None
        """The sending client: logged in, never connected."""
        self._shards: dict[int, _Shard] = {}
        self._keeper: ShardKeeper | None = None
        self._handler: MessageHandler | None = None
        self._commands: list[CommandSpec] = []
        self.sender = DiscordSender(self._require_client)
        self._saved_urls: tuple[str, yarl.URL] | None = None
        self._sync_task: asyncio.Task[None] | None = None
        self._lanes = ChatLanes("discord")
        self._drain_timeout = drain_timeout
        self._store_retry_s = store_retry_s

    @property
    def shards(self) -> list[int]:
        """The shards this worker has connected."""
        return sorted(self._shards)

    # ---- lifecycle -------------------------------------------------------------------------------

    async def start(self, handler: MessageHandler, commands: list[CommandSpec]) -> None:
        """Log in, take this worker's shards and return once they are READY (none: standing by).

        Commands are synced in the background.
        """
        self._handler = handler
        self._commands = commands
        self._point_library_at_urls()
        client = _Client(self, **self._client_options(None, 1))
        self._client = client
        tree = self._tree(client)
        try:
            await self._login(client)
            count, concurrency = await self._shard_plan(client)
            self._keeper = ShardKeeper(
                self._fleet,
                self._fleet_timings,
                count=count,
                max_concurrency=concurrency,
                identify_interval_s=self._identify_interval_s,
                connect=self._connect_shard,
                disconnect=self._disconnect_shard,
                alive=self._shard_alive,
            )
            await self._keeper.start()
        except BaseException:  # a start error, or cancelled because a stop was requested
            await self.stop()
            raise
        self._sync_task = asyncio.create_task(sync_commands(tree, len(commands)), name="discord-sync")
        logger.info(
            "discord: connected as %s (shards %s of %d); syncing %d slash commands in the background",
            client.user,
            self.shards or "none",
            count,
            len(commands),
        )

    def _tree(self, client: _Client) -> app_commands.CommandTree[Any]:
        tree: app_commands.CommandTree[Any] = app_commands.CommandTree(client)
        for spec in self._commands:
            tree.add_command(self._slash_command(spec))
        return tree

    async def _login(self, client: _Client) -> None:
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            raise PlatformConfigError(TOKEN_HELP) from None
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            raise PlatformStartError(f"discord login failed: {type(exc).__name__}") from exc

    async def _shard_plan(self, client: _Client) -> tuple[int, int]:
        """(shard count, IDENTIFY max_concurrency); `auto` and the concurrency from GET /gateway/bot."""
        if self._shard_count == 1:
            return 1, 1
        try:
            recommended, _url, limit = await client.http.get_bot_gateway()
        except (discord.DiscordException, aiohttp.ClientError, OSError) as exc:
            if self._shard_count == "auto":
                raise PlatformStartError(f"discord: GET /gateway/bot failed ({type(exc).__name__})") from exc
            logger.warning("discord: GET /gateway/bot failed; identifying one shard at a time")
            return self._shard_count, 1
        count = int(recommended) if self._shard_count == "auto" else self._shard_count
        return count, int(limit.get("max_concurrency", 1))

    async def _connect_shard(self, shard_id: int) -> None:
        """Connect one shard with a client of its own; return once READY."""
        count = self._keeper.count if self._keeper is not None else 1
        ready = asyncio.Event()
        sharded = None if count == 1 else shard_id
        client = _Client(self, ready, **self._client_options(sharded, count))
        self._tree(client)
        await self._login(client)
        task = asyncio.create_task(client.connect(reconnect=True), name=f"discord-shard-{shard_id}")
        shard = _Shard(client, task, ready)
        self._shards[shard_id] = shard
        task.add_done_callback(lambda t: self._connection_ended(shard_id, t, ready))
        waiter = asyncio.create_task(ready.wait())
        try:
            done, _ = await asyncio.wait(
                {waiter, task}, timeout=self._ready_timeout, return_when="FIRST_COMPLETED"
            )
        finally:
            waiter.cancel()
        if waiter in done:
            return
        if task in done and not task.cancelled():
            failure = task.exception()
            if failure is not None:
                raise start_error(failure) from failure
        raise PlatformStartError(f"discord gateway not READY within {self._ready_timeout:.0f}s")

    def _client_options(self, shard_id: int | None, count: int) -> dict[str, Any]:
        intents = discord.Intents.default()
        intents.message_content = True
        intents.dm_messages = True
        intents.guilds = True
        options: dict[str, Any] = {
            "intents": intents,
            "guild_ready_timeout": self._guild_ready_timeout,
            "max_ratelimit_timeout": self._max_ratelimit_timeout,
            "chunk_guilds_at_startup": False,
        }
        if shard_id is not None:
            options |= {"shard_id": shard_id, "shard_count": count}
        return options

    def _shard_alive(self, shard_id: int) -> bool:
        shard = self._shards.get(shard_id)
        return shard is not None and not shard.task.done()

    async def _disconnect_shard(self, shard_id: int) -> None:
        shard = self._shards.pop(shard_id, None)
        if shard is None:
            return
        await shard.client.close()
        # close() ends a connected gateway; one stuck before READY (no HELLO, a hung socket) is only
        # ended by cancelling it.
        _, pending = await asyncio.wait({shard.task}, timeout=CLOSE_WAIT_S)
        for stuck in pending:
            stuck.cancel()
        await asyncio.gather(shard.task, return_exceptions=True)

    async def _identify_slot(self, shard_id: int | None) -> None:
        if self._keeper is not None:
            await self._keeper.identify_slot(shard_id)

    async def stop(self) -> None:
        """Stop syncing and receiving and close the connections (handing the shards back), while
        messages being stored get a moment (`drain_timeout`) to finish."""
        sync, self._sync_task = self._sync_task, None
        if sync is not None:
            sync.cancel()
            await asyncio.gather(sync, return_exceptions=True)
        cancelled, _ = await asyncio.gather(self._lanes.drain(self._drain_timeout), self._disconnect())
        if cancelled:
            logger.warning("discord: %d message(s) were still being stored at shutdown", cancelled)
        self._restore_library_urls()

    async def _disconnect(self) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            await keeper.stop()
        for shard_id in list(self._shards):
            await self._disconnect_shard(shard_id)
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _connection_ended(self, shard_id: int, task: asyncio.Task[None], ready: asyncio.Event) -> None:
        if task.cancelled() or not ready.is_set():
            return  # a failure before READY is reported by the connect
        exc = task.exception()
        if exc is not None:
            logger.error("discord: the gateway connection of shard %d ended: %s", shard_id, start_error(exc))

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
        await self._deliver(slash_message(interaction, command, args))

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

    def _convert(self, message: discord.Message, *, is_edit: bool) -> IncomingMessage:
        me = self._client.user if self._client is not None else None
        my_id = me.id if me is not None else None
        return convert_message(message, my_id=my_id, own_ids=self.sender.own_ids, is_edit=is_edit)

    # ---- outbound: everything goes through `sender` (gateway.platforms.discord.rest) --------------

    def parts(self, text: str) -> list[str]:
        return reply_parts(text)

    def live(self, chat: ChatRef, *, reply_to: str | None) -> DiscordLive:
        """Each part posted, then edited as it grows (gateway.platforms.discord.edits)."""
        return DiscordLive(self.sender, chat, parts=reply_parts, reply_to=reply_to)

    def _require_client(self) -> _Client:
        if self._client is None:
            raise SendError("discord adapter is not started")
        return self._client


def _websocket_url(url: str) -> str:
    """The gateway URL with a websocket scheme; http(s) settings values are accepted and mapped."""
    parsed = yarl.URL(url)
    scheme = {"http": "ws", "https": "wss"}.get(parsed.scheme, parsed.scheme)
    return str(parsed.with_scheme(scheme))

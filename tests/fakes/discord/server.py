"""A protocol-level fake of Discord (REST API v10 + gateway websocket + interactions) on 127.0.0.1.

The real discord.py client talks to it unchanged except for its two base URLs. Tests inject
messages and slash-command interactions, read what the bot sent, force gateway disconnects (the
client RESUMEs and missed dispatches are replayed with their sequence numbers) and inject REST
faults (429 with the headers discord.py's rate limiter honours, 400 code 50035, 403, 404, 500).
This module holds those control handles; the REST routes live in `rest`, the websocket in
`gateway`.

    async with FakeDiscord(token="t", app_id=1, bot_user_id=2) as dc:
        dc.add_guild(10, "guild", channels=[(11, "general")])
        dc.push_message(11, "hello", author_id=5, username="ann", guild_id=10)
        await dc.wait_sent(1)
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from tests.fakes.discord import payloads as p
from tests.fakes.discord.gateway import FakeGateway, shard_of
from tests.fakes.discord.http import FaultSpec
from tests.fakes.discord.payloads import Channel, Guild, Json
from tests.fakes.discord.records import InteractionRecord, SentMessage
from tests.fakes.discord.rest import API_PREFIX, DiscordRest


class FakeDiscord(DiscordRest):
    """The fake server plus the control handles tests drive it with."""

    def __init__(
        self,
        *,
        token: str = "fake-discord-token",
        app_id: int = 100_000_000_000_000_001,
        bot_user_id: int = 100_000_000_000_000_002,
        bot_username: str = "gatewaybot",
        echo_sent: bool = True,
    ) -> None:
        self.token = token
        self.app_id = app_id
        self.bot_user_id = bot_user_id
        self.bot_user = p.user(bot_user_id, bot_username, bot=True)
        self.echo_sent = echo_sent
        """Dispatch MESSAGE_CREATE for the bot's own messages, as Discord does."""
        self.recommended_shards = 1
        """`shards` in GET /gateway/bot."""
        self.max_concurrency = 1
        """`session_start_limit.max_concurrency` in GET /gateway/bot (IDENTIFYs per 5 s bucket)."""

        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, Channel] = {}
        self.messages: dict[int, Json] = {}
        self.sent: list[SentMessage] = []
        self.interactions: dict[str, InteractionRecord] = {}
        self.interaction_responses: list[Json] = []
        self.typing_calls: list[int] = []
        self.reactions: list[tuple[int, int, str]] = []
        """(channel id, message id, emoji) of every reaction the bot added."""
        self.commands: list[Json] = []
        self.guild_commands: dict[int, list[Json]] = {}
        self.unexpected: list[str] = []
        self.faults_served: list[FaultSpec] = []
        self.files: dict[str, bytes] = {}
        """Attachment bytes by attachment id, served at the attachment's CDN URL on this server."""
        self.downloads: list[str] = []

        self._faults: list[FaultSpec] = []
        self._sent_cond = asyncio.Condition()
        self.gateway = FakeGateway(token=token, ready=self._ready_payload, guilds=self._guild_payloads)
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ---- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/gateway", self.gateway.handler)
        app.router.add_get("/attachments/{att_id}/{filename}", self._serve_attachment)
        app.router.add_route("*", API_PREFIX + "/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.gateway.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    @property
    def identifies(self) -> list[Json]:
        """IDENTIFY payloads received (token, intents, properties)."""
        return self.gateway.identifies

    @property
    def resumes(self) -> list[Json]:
        return self.gateway.resumes

    @property
    def replayed(self) -> list[int]:
        """Sequence numbers sent again after a RESUME."""
        return self.gateway.replayed

    def _ready_payload(self, session_id: str, shard: tuple[int, int] | None = None) -> Json:
        return {
            "v": 10,
            "user": self.bot_user,
            "session_id": session_id,
            "resume_gateway_url": self.gateway_url,
            "guilds": [{"id": str(gid), "unavailable": True} for gid in self._on_shard(self.guilds, shard)],
            **({"shard": list(shard)} if shard else {}),
            "application": {"id": str(self.app_id), "flags": p.GATEWAY_MESSAGE_CONTENT_FLAG},
            "private_channels": [],
            "relationships": [],
        }

    def _guild_payloads(self, shard: tuple[int, int] | None = None) -> list[Json]:
        return [p.guild_create(self.guilds[g], self.bot_user) for g in self._on_shard(self.guilds, shard)]

    @staticmethod
    def _on_shard(guild_ids: Iterable[int], shard: tuple[int, int] | None) -> list[int]:
        if shard is None:
            return list(guild_ids)
        return [g for g in guild_ids if shard_of(g, shard[1]) == shard[0]]

    # ---- control: world state --------------------------------------------------------------------

    def add_guild(self, guild_id: int, name: str, channels: Iterable[tuple[int, str]] = ()) -> None:
        guild = Guild(guild_id, name)
        for channel_id, channel_name in channels:
            ch = Channel(channel_id, channel_name, guild_id=guild_id)
            guild.channels[channel_id] = ch
            self.channels[channel_id] = ch
        self.guilds[guild_id] = guild
        if self.gateway.has_sessions:
            self.gateway.dispatch("GUILD_CREATE", p.guild_create(guild, self.bot_user))

    def add_thread(
        self, guild_id: int, parent_id: int, thread_id: int, name: str, *, owner_id: int = 1
    ) -> None:
        ch = Channel(
            thread_id, name, type=p.PUBLIC_THREAD, guild_id=guild_id, parent_id=parent_id, owner_id=owner_id
        )
        self.guilds[guild_id].channels[thread_id] = ch
        self.channels[thread_id] = ch
        if self.gateway.has_sessions:
            self.gateway.dispatch("THREAD_CREATE", {**p.channel(ch), "newly_created": True})

    # ---- control: inbound traffic ----------------------------------------------------------------

    def push_message(
        self,
        channel_id: int,
        content: str,
        *,
        author_id: int,
        username: str,
        guild_id: int | None = None,
        mentions_bot: bool = False,
        reply_to_bot_message_id: int | None = None,
        reply_to_message_id: int | None = None,
        resolved: bool = True,
        author_bot: bool = False,
        message_id: int | None = None,
        attachments: list[Json] | None = None,
        mention_everyone: bool = False,
    ) -> int:
        """Dispatch MESSAGE_CREATE as if a user posted `content`; returns the message id."""
        if guild_id is None and channel_id not in self.channels:
            self.channels[channel_id] = Channel(channel_id, "dm", type=p.DM_CHANNEL)
        mentions: list[Json] = []
        if mentions_bot:
            token = f"<@{self.bot_user_id}>"
            if token not in content:
                content = f"{token} {content}"
            mentions.append(self.bot_user)
        reference = referenced = None
        replied_id = reply_to_message_id if reply_to_message_id is not None else reply_to_bot_message_id
        if replied_id is not None:
            reference = {
                "message_id": str(replied_id),
                "channel_id": str(channel_id),
                "type": 0,
            }
            if guild_id is not None:
                reference["guild_id"] = str(guild_id)
            # Discord sends null when it could not load the message (deleted, or not resolved).
            referenced = self.messages.get(replied_id) if resolved else None
        msg = p.message(
            message_id=message_id or p.snowflake(),
            channel_id=channel_id,
            guild_id=guild_id,
            author=p.user(author_id, username, bot=author_bot),
            content=content,
            mentions=mentions,
            mention_everyone=mention_everyone,
            attachments=attachments,
            reference=reference,
            referenced_message=referenced,
            flags=p.VOICE_MESSAGE_FLAG if any("waveform" in a for a in attachments or ()) else 0,
        )
        self.messages[int(msg["id"])] = msg
        self.gateway.dispatch("MESSAGE_CREATE", msg)
        return int(msg["id"])

    def attachment(
        self,
        filename: str,
        content_type: str,
        data: bytes,
        *,
        width: int | None = None,
        height: int | None = None,
    ) -> Json:
        """An attachment payload whose URL this server answers with `data` (as Discord's CDN does)."""
        payload = p.attachment(
            filename,
            content_type,
            size=len(data),
            cdn=f"http://127.0.0.1:{self.port}",
            width=width,
            height=height,
        )
        self.files[payload["id"]] = data
        return payload

    def voice_attachment(self, data: bytes, *, seconds: float = 3.0) -> Json:
        """A voice message's attachment as the Discord client records it (`voice-message.ogg`, Opus in
        Ogg, with its length and waveform); `push_message` sets the message's IS_VOICE_MESSAGE flag."""
        payload = p.attachment(
            "voice-message.ogg",
            "audio/ogg",
            size=len(data),
            cdn=f"http://127.0.0.1:{self.port}",
            duration_secs=seconds,
            waveform=p.WAVEFORM,
        )
        self.files[payload["id"]] = data
        return payload

    def push_edit(self, message_id: int, content: str) -> None:
        """Dispatch MESSAGE_UPDATE for a message pushed earlier, with new content."""
        msg = {**self.messages[message_id], "content": content, "edited_timestamp": p.iso_now()}
        self.messages[message_id] = msg
        self.gateway.dispatch("MESSAGE_UPDATE", msg)

    def push_interaction(
        self,
        command: str,
        args: str | dict[str, str] | None = None,
        *,
        channel_id: int,
        guild_id: int | None = None,
        user_id: int,
        username: str = "user",
    ) -> int:
        """Dispatch INTERACTION_CREATE for slash command `command`; a string `args` fills option "args"."""
        options = {"args": args} if isinstance(args, str) else dict(args or {})
        if guild_id is None and channel_id not in self.channels:
            self.channels[channel_id] = Channel(channel_id, "dm", type=p.DM_CHANNEL)
        ch = self.channels[channel_id]
        registered = [*self.commands, *self.guild_commands.get(guild_id or 0, [])]
        command_id = next((int(c["id"]) for c in registered if c["name"] == command), p.snowflake())
        interaction_id = p.snowflake()
        token = "aW50ZXJhY3Rpb24" + secrets.token_urlsafe(24)
        payload = p.interaction(
            interaction_id=interaction_id,
            token=token,
            app_id=self.app_id,
            command_id=command_id,
            command=command,
            options=options,
            channel_obj=p.channel(ch),
            guild_id=guild_id,
            invoker=p.user(user_id, username),
        )
        self.interactions[token] = InteractionRecord(interaction_id, token, channel_id, guild_id, command)
        self.gateway.dispatch("INTERACTION_CREATE", payload)
        return interaction_id

    # ---- control: faults and waiting -------------------------------------------------------------

    def fail_next(
        self,
        route: str,
        *,
        status: int,
        retry_after: float = 0.5,
        global_: bool = False,
        code: int | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next `times` requests matching e.g. "POST /channels/{id}/messages" with `status`."""
        method, path = route.split(" ", 1)
        segments = path.strip("/").split("/")
        self._faults.append(FaultSpec(method.upper(), segments, status, retry_after, global_, code, times))

    async def disconnect(self, code: int = 4000, *, replay_last: int = 0) -> None:
        """Close every gateway socket with `code`; dispatches until the client RESUMEs are buffered.

        `replay_last` also replays that many already-delivered dispatches (not READY/RESUMED) on the
        next RESUME: at-least-once delivery, as when the client's last sequence number was lost.
        """
        self.gateway.disconnect(code, replay_last=replay_last)

    async def wait_sent(self, n: int, timeout: float = 5.0) -> list[SentMessage]:
        """Wait until at least `n` messages were sent by the bot; returns them all."""
        async with self._sent_cond:
            await asyncio.wait_for(self._sent_cond.wait_for(lambda: len(self.sent) >= n), timeout)
            return list(self.sent)

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> None:
        """Wait until `predicate()` holds (checked whenever the fake records something)."""
        async with self._sent_cond:
            await asyncio.wait_for(self._sent_cond.wait_for(predicate), timeout)

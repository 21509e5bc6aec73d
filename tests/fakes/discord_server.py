"""A protocol-level fake of Discord (REST API v10 + gateway websocket + interactions) on 127.0.0.1.

The real discord.py client talks to it unchanged except for its two base URLs. Tests inject
messages and slash-command interactions, read what the bot sent, force gateway disconnects (the
client RESUMEs and missed dispatches are replayed with their sequence numbers) and inject REST
faults (429 with the headers discord.py's rate limiter honours, 400 code 50035, 403, 404, 500).

    async with FakeDiscord(token="t", app_id=1, bot_user_id=2) as dc:
        dc.add_guild(10, "guild", channels=[(11, "general")])
        dc.push_message(11, "hello", author_id=5, username="ann", guild_id=10)
        await dc.wait_sent(1)
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_gateway import FakeGateway
from tests.fakes.discord_http import FaultSpec, error_response, json_response
from tests.fakes.discord_payloads import Channel, Guild, Json

logger = logging.getLogger(__name__)

API_PREFIX = "/api/v10"
MAX_CONTENT = 2000


@dataclass
class SentMessage:
    """A message the bot made visible: a channel post, an interaction reply or a followup."""

    channel_id: int
    content: str
    allowed_mentions: Json | None
    message_reference: Json | None
    message_id: int
    interaction_id: int | None = None
    kind: str = "message"
    """"message", "interaction_reply" (callback type 4), "followup", "original_edit" or "edit"."""
    at: float = field(default_factory=time.monotonic)


@dataclass
class InteractionRecord:
    interaction_id: int
    token: str
    channel_id: int
    guild_id: int | None
    command: str
    responses: list[Json] = field(default_factory=list)


class FakeDiscord:
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

    def _ready_payload(self, session_id: str) -> Json:
        return {
            "v": 10,
            "user": self.bot_user,
            "session_id": session_id,
            "resume_gateway_url": self.gateway_url,
            "guilds": [{"id": str(gid), "unavailable": True} for gid in self.guilds],
            "application": {"id": str(self.app_id), "flags": p.GATEWAY_MESSAGE_CONTENT_FLAG},
            "private_channels": [],
            "relationships": [],
        }

    def _guild_payloads(self) -> list[Json]:
        return [p.guild_create(g, self.bot_user) for g in self.guilds.values()]

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
        )
        self.messages[int(msg["id"])] = msg
        self.gateway.dispatch("MESSAGE_CREATE", msg)
        return int(msg["id"])

    def attachment(self, filename: str, content_type: str, data: bytes, **dims: int) -> Json:
        """An attachment payload whose URL this server answers with `data` (as Discord's CDN does)."""
        payload = p.attachment(
            filename, content_type, size=len(data), cdn=f"http://127.0.0.1:{self.port}", **dims
        )
        self.files[payload["id"]] = data
        return payload

    async def _serve_attachment(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["att_id"])
        if data is None:
            return web.Response(status=404, text="Not Found")
        self.downloads.append(request.match_info["filename"])
        return web.Response(body=data, content_type="application/octet-stream")

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

    # ---- REST ------------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)  # type: ignore[no-any-return]
        path = request.path[len(API_PREFIX) :]
        webhook_auth = path.startswith(("/interactions/", "/webhooks/"))
        if not webhook_auth and request.headers.get("Authorization") != f"Bot {self.token}":
            return json_response({"message": "401: Unauthorized", "code": 0}, 401)
        for fault in self._faults:
            if fault.remaining > 0 and fault.matches(request.method, path):
                fault.remaining -= 1
                self.faults_served.append(fault)
                return fault.response()
        return await handler(request)  # type: ignore[no-any-return]

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        method = request.method
        parts = request.match_info["tail"].strip("/").split("/")
        route = (method, *parts)
        match route:
            case ("GET", "users", "@me"):
                return json_response(self.bot_user)
            case ("GET", "oauth2", "applications", "@me"):
                return json_response(p.application(self.app_id, p.user(1, "owner")))
            case ("GET", "gateway"):
                return json_response({"url": self.gateway_url})
            case ("GET", "gateway", "bot"):
                limit = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}
                return json_response({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})
            case ("GET", "channels", cid):
                ch = self.channels.get(int(cid))
                return (
                    error_response(404, 10003, "Unknown Channel")
                    if ch is None
                    else json_response(p.channel(ch))
                )
            case ("POST", "channels", cid, "messages"):
                return await self._create_message(request, int(cid))
            case ("PUT", "channels", cid, "messages", mid, "reactions", emoji, "@me"):
                return await self._add_reaction(int(cid), int(mid), emoji)
            case ("PATCH", "channels", cid, "messages", mid):
                return await self._edit_message(request, int(cid), int(mid))
            case ("POST", "channels", cid, "typing"):
                if int(cid) not in self.channels:
                    return error_response(404, 10003, "Unknown Channel")
                await self._record(lambda: self.typing_calls.append(int(cid)))
                return web.Response(status=204)
            case ("GET", "applications", app, "commands"):
                return json_response(self.commands if int(app) == self.app_id else [])
            case ("PUT", "applications", app, "commands"):
                stored = self._store_commands(int(app), None, await request.json())
                await self._record(lambda: setattr(self, "commands", stored))
                return json_response(stored)
            case ("GET", "applications", _app, "guilds", gid, "commands"):
                return json_response(self.guild_commands.get(int(gid), []))
            case ("PUT", "applications", app, "guilds", gid, "commands"):
                stored = self._store_commands(int(app), int(gid), await request.json())
                await self._record(lambda: self.guild_commands.__setitem__(int(gid), stored))
                return json_response(stored)
            case ("POST", "interactions", iid, token, "callback"):
                return await self._interaction_callback(request, int(iid), token)
            case ("POST", "webhooks", app, token):
                return await self._webhook_message(request, int(app), token, kind="followup")
            case ("PATCH", "webhooks", app, token, "messages", _which):
                return await self._webhook_message(request, int(app), token, kind="original_edit")
        logger.warning("fake discord: unexpected %s %s", method, request.path)
        self.unexpected.append(f"{method} {request.path}")
        return error_response(404, 0, "404: Not Found")

    async def _add_reaction(self, channel_id: int, message_id: int, emoji: str) -> web.Response:
        """Discord answers 204; an unknown message is 404 (10008), a custom emoji it does not know 400."""
        msg = self.messages.get(message_id)
        if channel_id not in self.channels or msg is None or int(msg["channel_id"]) != channel_id:
            return error_response(404, 10008, "Unknown Message")
        if not emoji or emoji.isascii():
            return error_response(400, 10014, "Unknown Emoji")
        await self._record(lambda: self.reactions.append((channel_id, message_id, emoji)))
        return web.Response(status=204)

    async def _record(self, change: Any) -> None:
        async with self._sent_cond:
            change()
            self._sent_cond.notify_all()

    def _store_commands(self, app_id: int, guild_id: int | None, payload: list[Json]) -> list[Json]:
        stored = []
        for cmd in payload:
            item = {
                "type": 1,
                **cmd,
                "id": str(p.snowflake()),
                "application_id": str(app_id),
                "version": str(p.snowflake()),
            }
            if guild_id is not None:
                item["guild_id"] = str(guild_id)
            stored.append(item)
        return stored

    async def _payload(self, request: web.Request) -> Json:
        if request.content_type.startswith("multipart/"):
            form = await request.post()
            return json.loads(str(form.get("payload_json") or "{}"))  # type: ignore[no-any-return]
        return await request.json()  # type: ignore[no-any-return]

    def _invalid_content(self, payload: Json) -> web.Response | None:
        content = payload.get("content")
        if not content and not payload.get("embeds") and not payload.get("attachments"):
            return error_response(400, 50006, "Cannot send an empty message")
        if content is not None and len(content) > MAX_CONTENT:
            text = f"Must be {MAX_CONTENT} or fewer in length."
            return json_response(p.form_error("content", "BASE_TYPE_MAX_LENGTH", text), 400)
        return None

    async def _post_visible(
        self, channel_id: int, payload: Json, *, kind: str, interaction_id: int | None = None
    ) -> Json:
        ch = self.channels[channel_id]
        reference = payload.get("message_reference")
        referenced = None
        if reference:
            # Discord echoes snowflakes as strings whatever the client sent.
            reference = {k: str(v) if k.endswith("_id") else v for k, v in reference.items()}
            referenced = self.messages.get(int(reference["message_id"]))
        msg = p.message(
            message_id=p.snowflake(),
            channel_id=channel_id,
            guild_id=ch.guild_id,
            author=self.bot_user,
            content=payload.get("content") or "",
            reference=reference,
            referenced_message=referenced,
        )
        self.messages[int(msg["id"])] = msg
        sent = SentMessage(
            channel_id=channel_id,
            content=msg["content"],
            allowed_mentions=payload.get("allowed_mentions"),
            message_reference=reference,
            message_id=int(msg["id"]),
            interaction_id=interaction_id,
            kind=kind,
        )
        await self._record(lambda: self.sent.append(sent))
        if self.echo_sent:
            self.gateway.dispatch("MESSAGE_CREATE", msg)
        return msg

    async def _edit_message(self, request: web.Request, channel_id: int, message_id: int) -> web.Response:
        """PATCH /channels/{id}/messages/{id}: the bot edits its own message (Discord answers the message)."""
        if channel_id not in self.channels:
            return error_response(404, 10003, "Unknown Channel")
        msg = self.messages.get(message_id)
        if msg is None or int(msg["channel_id"]) != channel_id:
            return error_response(404, 10008, "Unknown Message")
        if msg["author"]["id"] != self.bot_user["id"]:
            return error_response(403, 50005, "Cannot edit a message authored by another user")
        payload = await self._payload(request)
        invalid = self._invalid_content({**payload, "content": payload.get("content", msg["content"])})
        if invalid is not None:
            return invalid
        msg = {**msg, "content": payload.get("content", msg["content"]), "edited_timestamp": p.iso_now()}
        self.messages[message_id] = msg
        sent = SentMessage(
            channel_id=channel_id,
            content=msg["content"],
            allowed_mentions=payload.get("allowed_mentions"),
            message_reference=msg.get("message_reference"),
            message_id=message_id,
            kind="edit",
        )
        await self._record(lambda: self.sent.append(sent))
        headers = {
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "4",
            "X-RateLimit-Reset-After": "1.000",
            "X-RateLimit-Bucket": f"edits-{channel_id}",
        }
        return json_response(msg, 200, headers)

    async def _create_message(self, request: web.Request, channel_id: int) -> web.Response:
        if channel_id not in self.channels:
            return error_response(404, 10003, "Unknown Channel")
        payload = await self._payload(request)
        invalid = self._invalid_content(payload)
        if invalid is not None:
            return invalid
        msg = await self._post_visible(channel_id, payload, kind="message")
        headers = {
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": "4",
            "X-RateLimit-Reset-After": "1.000",
            "X-RateLimit-Bucket": f"messages-{channel_id}",
        }
        return json_response(msg, 200, headers)

    async def _interaction_callback(
        self, request: web.Request, interaction_id: int, token: str
    ) -> web.Response:
        record = self.interactions.get(token)
        if record is None or record.interaction_id != interaction_id:
            return error_response(404, 10062, "Unknown interaction")
        if record.responses:
            return error_response(400, 40060, "Interaction has already been acknowledged.")
        payload = await self._payload(request)
        kind = payload.get("type")
        data = payload.get("data") or {}
        if kind not in (4, 5):
            return error_response(400, 50035, f"unsupported callback type {kind}")
        resource: Json = {"type": kind}
        if kind == 4:
            invalid = self._invalid_content(data)
            if invalid is not None:
                return invalid
            msg = await self._post_visible(
                record.channel_id, data, kind="interaction_reply", interaction_id=interaction_id
            )
            resource["message"] = msg
        entry = {"interaction_id": interaction_id, "type": kind, "data": data}
        record.responses.append(entry)
        await self._record(lambda: self.interaction_responses.append(entry))
        body = {
            "interaction": {
                "id": str(interaction_id),
                "type": 2,
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(int(data.get("flags") or 0) & 64),
            },
            "resource": resource,
        }
        if request.query.get("with_response") in ("1", "true", "True"):
            return json_response(body)
        return web.Response(status=204)

    async def _webhook_message(
        self, request: web.Request, app_id: int, token: str, *, kind: str
    ) -> web.Response:
        record = self.interactions.get(token)
        if record is None or app_id != self.app_id:
            return error_response(404, 10015, "Unknown Webhook")
        if not record.responses:
            # Discord refuses followups before the interaction was acknowledged.
            return error_response(404, 10015, "Unknown Webhook")
        payload = await self._payload(request)
        invalid = self._invalid_content(payload)
        if invalid is not None:
            return invalid
        msg = await self._post_visible(
            record.channel_id, payload, kind=kind, interaction_id=record.interaction_id
        )
        return json_response({**msg, "webhook_id": str(self.app_id), "application_id": str(self.app_id)})

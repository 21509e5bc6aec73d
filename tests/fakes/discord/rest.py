"""The HTTP half of the fake Discord: REST API v10 routes and the attachment CDN.

Bot-token checks and injected faults sit in a middleware in front of the routes. Each handler answers
as Discord does (status, error code, rate-limit headers), records what the bot did and notifies the
waiters, and echoes the bot's visible messages on the gateway. `FakeDiscord` mixes it in and owns the
state it reads and writes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.typedefs import Handler

from tests.fakes.discord import payloads as p
from tests.fakes.discord.gateway import FakeGateway
from tests.fakes.discord.http import FaultSpec, error_response, json_response
from tests.fakes.discord.payloads import Channel, Json
from tests.fakes.discord.records import InteractionRecord, SentMessage

logger = logging.getLogger(__name__)

API_PREFIX = "/api/v10"
MAX_CONTENT = 2000


class DiscordRest:
    """The REST routes and their handlers, over the state `FakeDiscord` sets up."""

    if TYPE_CHECKING:
        token: str
        app_id: int
        bot_user: Json
        echo_sent: bool
        recommended_shards: int
        max_concurrency: int
        channels: dict[int, Channel]
        messages: dict[int, Json]
        sent: list[SentMessage]
        interactions: dict[str, InteractionRecord]
        interaction_responses: list[Json]
        typing_calls: list[int]
        reactions: list[tuple[int, int, str]]
        commands: list[Json]
        guild_commands: dict[int, list[Json]]
        unexpected: list[str]
        faults_served: list[FaultSpec]
        files: dict[str, bytes]
        downloads: list[str]
        gateway: FakeGateway
        _faults: list[FaultSpec]
        _sent_cond: asyncio.Condition

        @property
        def gateway_url(self) -> str: ...

    # ---- attachment CDN --------------------------------------------------------------------------

    async def _serve_attachment(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["att_id"])
        if data is None:
            return web.Response(status=404, text="Not Found")
        self.downloads.append(request.match_info["filename"])
        return web.Response(body=data, content_type="application/octet-stream")

    # ---- REST ------------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)
        path = request.path[len(API_PREFIX) :]
        webhook_auth = path.startswith(("/interactions/", "/webhooks/"))
        if not webhook_auth and request.headers.get("Authorization") != f"Bot {self.token}":
            return json_response({"message": "401: Unauthorized", "code": 0}, 401)
        for fault in self._faults:
            if fault.remaining > 0 and fault.matches(request.method, path):
                fault.remaining -= 1
                self.faults_served.append(fault)
                return fault.response()
        return await handler(request)

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
                limit = {
                    "total": 1000,
                    "remaining": 1000 - len(self.gateway.identifies),
                    "reset_after": 86_400_000,
                    "max_concurrency": self.max_concurrency,
                }
                return json_response(
                    {"url": self.gateway_url, "shards": self.recommended_shards, "session_start_limit": limit}
                )
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
            payload: Json = json.loads(str(form.get("payload_json") or "{}"))
            return payload
        body: Json = await request.json()
        return body

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
        return json_response(msg, 200, _rate_limit_headers(f"edits-{channel_id}"))

    async def _create_message(self, request: web.Request, channel_id: int) -> web.Response:
        if channel_id not in self.channels:
            return error_response(404, 10003, "Unknown Channel")
        payload = await self._payload(request)
        invalid = self._invalid_content(payload)
        if invalid is not None:
            return invalid
        msg = await self._post_visible(channel_id, payload, kind="message")
        return json_response(msg, 200, _rate_limit_headers(f"messages-{channel_id}"))

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


def _rate_limit_headers(bucket: str) -> dict[str, str]:
    """The rate-limit headers Discord sends with a message it created or edited (4 of 5 left)."""
    return {
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "4",
        "X-RateLimit-Reset-After": "1.000",
        "X-RateLimit-Bucket": bucket,
    }

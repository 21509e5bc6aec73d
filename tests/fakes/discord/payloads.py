"""Wire payloads of the Discord API (v10) as the fake Discord server emits them.

Pure builders: ids are snowflakes (creation time in the high bits, as discord.py reads them) and
every dict carries the keys discord.py requires when it parses the object.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1_420_070_400_000
_counter = itertools.count(1)

Json = dict[str, Any]

TEXT_CHANNEL = 0
DM_CHANNEL = 1
PUBLIC_THREAD = 11
GATEWAY_MESSAGE_CONTENT_FLAG = 1 << 19
"""Application flag: the app may receive message content."""


def snowflake() -> int:
    """A fresh, increasing snowflake id stamped with the current time."""
    millis = int(time.time() * 1000) - DISCORD_EPOCH_MS
    return (millis << 22) | (next(_counter) & 0x3FFFFF)


def iso_now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Channel:
    """A channel the fake knows: a guild text channel, a thread (parent_id set) or a DM."""

    id: int
    name: str
    type: int = TEXT_CHANNEL
    guild_id: int | None = None
    parent_id: int | None = None
    owner_id: int | None = None


@dataclass
class Guild:
    id: int
    name: str
    channels: dict[int, Channel] = field(default_factory=dict)


def user(user_id: int, username: str, *, bot: bool = False) -> Json:
    return {
        "id": str(user_id),
        "username": username,
        "discriminator": "0",
        "global_name": username,
        "avatar": None,
        "bot": bot,
        "flags": 0,
        "public_flags": 0,
    }


def member(roles: list[int] | None = None, *, user_obj: Json | None = None) -> Json:
    data: Json = {
        "roles": [str(r) for r in roles or []],
        "joined_at": iso_now(),
        "deaf": False,
        "mute": False,
        "flags": 0,
        "nick": None,
    }
    if user_obj is not None:
        data["user"] = user_obj
    return data


def channel(ch: Channel) -> Json:
    if ch.type == DM_CHANNEL:
        return {"id": str(ch.id), "type": DM_CHANNEL, "last_message_id": None, "recipients": []}
    data: Json = {
        "id": str(ch.id),
        "type": ch.type,
        "name": ch.name,
        "guild_id": str(ch.guild_id),
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "topic": None,
        "rate_limit_per_user": 0,
        "last_message_id": None,
        "parent_id": str(ch.parent_id) if ch.parent_id is not None else None,
    }
    if ch.type == PUBLIC_THREAD:
        data.update(
            owner_id=str(ch.owner_id or 0),
            message_count=0,
            member_count=1,
            thread_metadata={
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": iso_now(),
                "locked": False,
            },
        )
    return data


def guild_create(g: Guild, bot_user: Json) -> Json:
    text = [channel(c) for c in g.channels.values() if c.type != PUBLIC_THREAD]
    threads = [channel(c) for c in g.channels.values() if c.type == PUBLIC_THREAD]
    return {
        "id": str(g.id),
        "name": g.name,
        "icon": None,
        "owner_id": "1",
        "unavailable": False,
        "member_count": 2,
        "large": False,
        "features": [],
        "roles": [
            {
                "id": str(g.id),
                "name": "@everyone",
                "permissions": "2248473465835073",
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }
        ],
        "emojis": [],
        "stickers": [],
        "channels": text,
        "threads": threads,
        "members": [member(user_obj=bot_user)],
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
        "joined_at": iso_now(),
        "premium_tier": 0,
        "preferred_locale": "en-US",
        "system_channel_flags": 0,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
    }


def attachment(
    filename: str,
    content_type: str,
    *,
    size: int = 1024,
    cdn: str = "https://cdn.invalid",
    width: int | None = None,
    height: int | None = None,
    duration_secs: float | None = None,
    waveform: str | None = None,
) -> Json:
    """An attachment; a voice message's carries `duration_secs` and a base64 `waveform` (and its
    message the IS_VOICE_MESSAGE flag, `VOICE_MESSAGE_FLAG`)."""
    att_id = snowflake()
    url = f"{cdn}/attachments/{att_id}/{filename}"
    data: Json = {
        "id": str(att_id),
        "filename": filename,
        "content_type": content_type,
        "size": size,
        "url": url,
        "proxy_url": url,
    }
    if width is not None and height is not None:
        data["width"], data["height"] = width, height
    if duration_secs is not None:
        data["duration_secs"] = duration_secs
    if waveform is not None:
        data["waveform"] = waveform
    return data


VOICE_MESSAGE_FLAG = 1 << 13
"""Message flag IS_VOICE_MESSAGE (8192): the message is a voice message (one audio attachment, no text)."""
WAVEFORM = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
"""A flat waveform, base64 (Discord sends up to 256 one-byte samples)."""


def message(
    *,
    message_id: int,
    channel_id: int,
    guild_id: int | None,
    author: Json,
    content: str,
    mentions: list[Json] | None = None,
    mention_everyone: bool = False,
    mention_roles: list[int] | None = None,
    attachments: list[Json] | None = None,
    reference: Json | None = None,
    referenced_message: Json | None = None,
    edited: bool = False,
    flags: int = 0,
) -> Json:
    data: Json = {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "author": author,
        "content": content,
        "timestamp": iso_now(),
        "edited_timestamp": iso_now() if edited else None,
        "tts": False,
        "mention_everyone": mention_everyone,
        "mentions": mentions or [],
        "mention_roles": [str(r) for r in mention_roles or []],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": 19 if reference is not None else 0,
        "flags": flags,
    }
    if guild_id is not None:
        data["guild_id"] = str(guild_id)
        data["member"] = member()
    if reference is not None:
        data["message_reference"] = reference
        data["referenced_message"] = referenced_message
    return data


def interaction(
    *,
    interaction_id: int,
    token: str,
    app_id: int,
    command_id: int,
    command: str,
    options: dict[str, str],
    channel_obj: Json,
    guild_id: int | None,
    invoker: Json,
) -> Json:
    data: Json = {
        "id": str(interaction_id),
        "application_id": str(app_id),
        "type": 2,
        "token": token,
        "version": 1,
        "data": {
            "id": str(command_id),
            "name": command,
            "type": 1,
            "options": [{"name": k, "type": 3, "value": v} for k, v in options.items()],
        },
        "channel_id": channel_obj["id"],
        "channel": channel_obj,
        "app_permissions": "2248473465835073",
        "locale": "en-US",
        "entitlements": [],
        "attachment_size_limit": 10 * 1024 * 1024,
        "authorizing_integration_owners": {"0": str(guild_id)} if guild_id else {"1": invoker["id"]},
        "context": 0 if guild_id else 1,
    }
    if guild_id is not None:
        data["guild_id"] = str(guild_id)
        data["guild_locale"] = "en-US"
        data["member"] = {**member(user_obj=invoker), "permissions": "2248473465835073"}
    else:
        data["user"] = invoker
    return data


def application(app_id: int, owner: Json) -> Json:
    return {
        "id": str(app_id),
        "name": "gateway-test-app",
        "description": "",
        "icon": None,
        "bot_public": True,
        "bot_require_code_grant": False,
        "owner": owner,
        "verify_key": "0" * 64,
        "flags": GATEWAY_MESSAGE_CONTENT_FLAG,
        "team": None,
    }


def form_error(field_name: str, code: str, text: str) -> Json:
    """The body Discord answers with a 400 when a field fails validation (code 50035)."""
    return {
        "code": 50035,
        "errors": {field_name: {"_errors": [{"code": code, "message": text}]}},
        "message": "Invalid Form Body",
    }

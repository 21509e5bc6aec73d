"""Turn discord.py messages and slash-command interactions into the gateway's `IncomingMessage`.

DMs are private chats, guild text channels and group DMs are group chats, and a thread is its own chat
(chat id = parent channel, thread id = the thread). A mention of the bot is taken out of the text; a
forward with no text of its own carries its snapshot's text; a reply is to the bot when the referenced
message is the bot's, or, when Discord did not resolve it, one the bot sent (`own_ids`).
"""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Any

import discord

from gateway.platforms.base import Author, ChatKind, ChatRef, IncomingMessage, MediaKind
from gateway.platforms.discord.attachments import attachments_of, kind_of
from gateway.platforms.discord.references import reply_of

PLATFORM = "discord"
_COMMAND_RE = re.compile(r"^/([\w-]{1,32})(?:\s+(.*))?$", re.DOTALL)


def chat_ref(channel: Any, channel_id: int | None, guild_id: int | None) -> ChatRef:
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


def slash_message(interaction: discord.Interaction, command: str, args: str) -> IncomingMessage:
    """A slash-command invocation as a command message; its reply goes out through the interaction."""
    user = interaction.user
    return IncomingMessage(
        chat=chat_ref(interaction.channel, interaction.channel_id, interaction.guild_id),
        author=Author(user_id=str(user.id), display_name=user.display_name, is_bot=user.bot),
        text=f"/{command} {args}".rstrip(),
        platform_message_id=str(interaction.id),
        sent_at=interaction.created_at,
        is_command=True,
        command=command.lower(),
        command_args=args.strip(),
        reply_handle=interaction,
    )


def convert_message(
    message: discord.Message, *, my_id: int | None, own_ids: Container[int], is_edit: bool
) -> IncomingMessage:
    """Turn a discord.py message into the gateway's value; own and other bots' messages included.

    `my_id` is the bot's user id (None before READY); `own_ids` are ids of messages the bot sent.
    """
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
    replies_to_me = not is_forwarded and _replies_to(reference, my_id, own_ids)
    return IncomingMessage(
        chat=chat_ref(message.channel, message.channel.id, message.guild.id if message.guild else None),
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


def _replies_to(
    reference: discord.MessageReference | None, my_id: int | None, own_ids: Container[int]
) -> bool:
    if reference is None or my_id is None or reference.message_id is None:
        return False
    target = reference.resolved or reference.cached_message
    if isinstance(target, discord.Message):
        return target.author.id == my_id
    return reference.message_id in own_ids


def _media_kinds(message: discord.Message) -> tuple[MediaKind, ...]:
    kinds: list[MediaKind] = []
    kinds.extend(
        kind_of(attachment.content_type, voice_message=attachment.is_voice_message())
        for attachment in message.attachments
    )
    kinds.extend("sticker" for _ in message.stickers)
    return tuple(kinds)

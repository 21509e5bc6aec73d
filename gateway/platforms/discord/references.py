"""What a Discord message replies to (its message reference), as a `ReplyTo`; discord.py types stay here.

A reply references a message of the same channel; Discord resolves it into `referenced_message` when it
can (it is null when the message was deleted or not loaded, and the id alone still lets the gateway
find its own stored copy). Forwards are not replies, and a reference to another channel brings nothing.
"""

from __future__ import annotations

import discord

from gateway.platforms.base import ReplyTo


def reply_of(message: discord.Message, *, to_bot: bool) -> ReplyTo | None:
    """The message `message` replies to; `to_bot` says whether that message is the bot's own."""
    reference = message.reference
    if reference is None or reference.message_id is None:
        return None
    if reference.type is discord.MessageReferenceType.forward or reference.channel_id != message.channel.id:
        return None
    target = reference.resolved or reference.cached_message
    if not isinstance(target, discord.Message):
        return ReplyTo(platform_message_id=str(reference.message_id), to_bot=to_bot)
    return ReplyTo(
        platform_message_id=str(reference.message_id),
        author_name=target.author.display_name,
        text=_visible_text(target),
        to_bot=to_bot,
    )


def _visible_text(message: discord.Message) -> str:
    if message.content:
        return message.content
    names = [f"[attachment: {a.filename}]" for a in message.attachments]
    names += [f"[sticker: {s.name}]" for s in message.stickers]
    return " ".join(names)

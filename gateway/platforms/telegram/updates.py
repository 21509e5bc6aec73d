"""Turn a python-telegram-bot `Update` into the gateway's `IncomingMessage`, at the edge of the adapter.

Rules: private chats are PRIVATE, groups and supergroups GROUP, channels CHANNEL; a forum topic message
is its own chat (thread_id = message_thread_id); `/cmd@name` records the addressee so commands for other
bots can be ignored; messages sent on behalf of a chat (anonymous admins, channels) get no verifiable user.
A reply carries the replied-to message as Telegram showed it (`reply_to_message`, and the `quote` when
the user quoted a part); a reply to another chat's message (`external_reply`) carries only its quote.
"""

from __future__ import annotations

from dataclasses import dataclass

from telegram import (
    Chat,
    Message,
    MessageEntity,
    MessageOrigin,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
    Update,
)

from gateway.platforms.base import Author, ChatKind, ChatRef, IncomingMessage, MediaKind, ReplyTo

PLATFORM = "telegram"
_MEDIA_ATTRS: tuple[MediaKind, ...] = (
    "photo",
    "sticker",
    "voice",
    "audio",
    "video_note",
    "video",
    "document",
    "animation",
)


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who "we" are, learned from getMe at start-up."""

    user_id: int
    username: str

    def is_us(self, name: str) -> bool:
        return name.lstrip("@").lower() == self.username.lower()


def chat_kind(chat: Chat) -> ChatKind:
    if chat.type == Chat.PRIVATE:
        return ChatKind.PRIVATE
    if chat.type == Chat.CHANNEL:
        return ChatKind.CHANNEL
    return ChatKind.GROUP


def chat_ref(message: Message) -> ChatRef:
    chat = message.chat
    thread_id = (
        str(message.message_thread_id) if message.is_topic_message and message.message_thread_id else None
    )
    title = chat.title or chat.full_name or chat.username
    return ChatRef(
        platform=PLATFORM, chat_id=str(chat.id), thread_id=thread_id, kind=chat_kind(chat), title=title
    )


def convert_update(update: Update, bot: BotIdentity) -> IncomingMessage | None:
    """The update as an `IncomingMessage`, or None for updates that carry no chat message."""
    message = update.effective_message
    if message is None or update.effective_chat is None:
        return None
    is_edit = update.edited_message is not None or update.edited_channel_post is not None
    text = message.text or ""
    caption = message.caption
    entities = message.entities if message.text is not None else message.caption_entities
    body = text if message.text is not None else (caption or "")
    command, args, target = _command(body, entities)
    if target is not None and bot.is_us(target):
        target = None  # `/cmd@ourbot` is ours; only a command for another bot keeps its target
    media = tuple(kind for kind in _MEDIA_ATTRS if getattr(message, kind))
    message_id = str(message.message_id)
    if is_edit and message.edit_date is not None:
        message_id = f"{message.message_id}:edit:{int(message.edit_date.timestamp())}"
    return IncomingMessage(
        chat=chat_ref(message),
        author=_author(message, bot),
        text=text,
        platform_message_id=message_id,
        sent_at=message.date,
        mentions_bot=_mentions(body, entities, bot),
        reply_to_bot=_replies_to_bot(message, bot),
        is_command=command is not None,
        command=command,
        command_args=args,
        command_target=target,
        is_edit=is_edit,
        is_forwarded=message.forward_origin is not None,
        forward_origin=_origin(message.forward_origin) if message.forward_origin is not None else None,
        media=media if media else (("other",) if not text and not caption and _has_other(message) else ()),
        caption=caption,
        reply_to=_reply_to(message, bot),
    )


def _reply_to(message: Message, bot: BotIdentity) -> ReplyTo | None:
    quote = message.quote.text if message.quote is not None else None
    replied = message.reply_to_message
    if replied is not None and replied.forum_topic_created is None:
        return ReplyTo(
            platform_message_id=str(replied.message_id),
            author_name=_author(replied, bot).display_name,
            text=_visible_text(replied),
            quote=quote,
            to_bot=replied.from_user is not None and replied.from_user.id == bot.user_id,
        )
    external = message.external_reply
    if external is not None and quote:
        # Another chat's message: only what the user quoted from it, never a lookup in our store.
        return ReplyTo(platform_message_id=None, author_name=_origin(external.origin), quote=quote)
    return None


def _visible_text(message: Message) -> str:
    """A replied-to message's text or caption, or what it carried when it had neither."""
    if message.text or message.caption:
        return message.text or message.caption or ""
    kinds = [kind for kind in _MEDIA_ATTRS if getattr(message, kind)]
    return f"[{kinds[0]}]" if kinds else ""


def _author(message: Message, bot: BotIdentity) -> Author:
    if message.sender_chat is not None:
        sender = message.sender_chat
        name = sender.title or sender.full_name or sender.username or str(sender.id)
        return Author(user_id=f"chat:{sender.id}", display_name=name, is_anonymous_admin=True)
    user = message.from_user
    if user is None:  # pragma: no cover - Telegram sets from or sender_chat on every chat message
        return Author(user_id="unknown", display_name="unknown", is_anonymous_admin=True)
    return Author(
        user_id=str(user.id),
        display_name=user.full_name or user.username or str(user.id),
        is_bot=user.is_bot,
        is_self=user.id == bot.user_id,
    )


def _command(text: str, entities: tuple[MessageEntity, ...]) -> tuple[str | None, str, str | None]:
    """(name, args, @target) for a message starting with a bot_command entity, else (None, "", None)."""
    head = next((e for e in entities if e.type == MessageEntity.BOT_COMMAND and e.offset == 0), None)
    if head is None:
        return None, "", None
    token = _utf16_slice(text, 0, head.length)
    name, _, target = token[1:].partition("@")
    args = text[len(token) :].strip()
    return name.lower(), args, (target or None)


def _mentions(text: str, entities: tuple[MessageEntity, ...], bot: BotIdentity) -> bool:
    for entity in entities:
        if entity.type == MessageEntity.MENTION and bot.is_us(
            _utf16_slice(text, entity.offset, entity.length)
        ):
            return True
        if (
            entity.type == MessageEntity.TEXT_MENTION
            and entity.user is not None
            and entity.user.id == bot.user_id
        ):
            return True
    return False


def _replies_to_bot(message: Message, bot: BotIdentity) -> bool:
    replied = message.reply_to_message
    if replied is None or replied.forum_topic_created is not None:
        return False  # a topic message "replies" to the topic's service message; that is not a reply
    return replied.from_user is not None and replied.from_user.id == bot.user_id


def _origin(origin: MessageOrigin) -> str:
    if isinstance(origin, MessageOriginUser):
        return f"user {origin.sender_user.full_name} ({origin.sender_user.id})"
    if isinstance(origin, MessageOriginHiddenUser):
        return f"user {origin.sender_user_name}"
    if isinstance(origin, MessageOriginChat):
        return f"chat {origin.sender_chat.title or origin.sender_chat.id}"
    if isinstance(origin, MessageOriginChannel):
        return f"channel {origin.chat.title or origin.chat.id}"
    return origin.type


def _has_other(message: Message) -> bool:
    """Content we do not model (polls, locations, contacts...), so the gateway can say it is unsupported."""
    return any(
        getattr(message, attr) is not None
        for attr in ("poll", "location", "contact", "venue", "dice", "game", "story")
    )


def _utf16_slice(text: str, offset: int, length: int) -> str:
    """Telegram entity offsets count UTF-16 code units (a lone surrogate in the text is one unit too)."""
    encoded = text.encode("utf-16-le", errors="surrogatepass")
    return encoded[offset * 2 : (offset + length) * 2].decode("utf-16-le", errors="surrogatepass")

"""Builders for real Telegram `Update` payloads (the JSON the Bot API returns), used by the fake server.

Entities are filled in as Telegram does: a `bot_command` at offset 0 for `/cmd[@bot]`, `mention` for
every `@username`, offsets and lengths in UTF-16 code units. Topic messages carry the forum's
"topic created" service message as `reply_to_message`, as Telegram sends them. A reply
(`reply_to_message_id`) embeds the replied-to message the builder or the server saw in that chat, without
its own `reply_to_message` (Telegram does not nest them), plus a `quote` when one is given.
"""

from __future__ import annotations

import re
import time
from typing import Any

ANONYMOUS_ADMIN_BOT = {
    "id": 1087968824,
    "is_bot": True,
    "first_name": "Group",
    "username": "GroupAnonymousBot",
}
_COMMAND_RE = re.compile(r"^/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,})?")
_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{3,32}")
_MEDIA_DEFAULTS: dict[str, Any] = {
    "photo": [
        {"file_id": "ph-s", "file_unique_id": "u-ph-s", "width": 90, "height": 60, "file_size": 1200},
        {"file_id": "ph-m", "file_unique_id": "u-ph-m", "width": 800, "height": 533, "file_size": 52000},
    ],
    "sticker": {
        "file_id": "st",
        "file_unique_id": "u-st",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
        "emoji": "👍",
    },
    "voice": {"file_id": "vo", "file_unique_id": "u-vo", "duration": 3, "mime_type": "audio/ogg"},
    "audio": {"file_id": "au", "file_unique_id": "u-au", "duration": 180, "title": "Song"},
    "video_note": {"file_id": "vn", "file_unique_id": "u-vn", "length": 384, "duration": 5},
    "video": {"file_id": "vi", "file_unique_id": "u-vi", "width": 640, "height": 360, "duration": 5},
    "document": {
        "file_id": "do",
        "file_unique_id": "u-do",
        "file_name": "report.pdf",
        "mime_type": "application/pdf",
    },
    "animation": {"file_id": "an", "file_unique_id": "u-an", "width": 320, "height": 240, "duration": 2},
}


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def auto_entities(text: str) -> list[dict[str, Any]]:
    """The entities Telegram attaches to plain text: a leading bot command and @mentions."""
    entities: list[dict[str, Any]] = []
    command = _COMMAND_RE.match(text)
    if command:
        entities.append({"type": "bot_command", "offset": 0, "length": _utf16(command.group(0))})
    for m in _MENTION_RE.finditer(text):
        if command and m.start() < command.end():
            continue
        entities.append(
            {"type": "mention", "offset": _utf16(text[: m.start()]), "length": _utf16(m.group(0))}
        )
    return entities


class UpdateBuilder:
    """Holds the bot's identity, known chats and id counters, and turns keyword arguments into Updates."""

    def __init__(self, *, bot: dict[str, Any]) -> None:
        self.bot = bot
        self.chats: dict[int, dict[str, Any]] = {}
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        """Every message pushed or sent, by (chat id, message id), as replies embed them."""
        self._next_update_id = 1
        self._next_incoming_id = 1

    def push_update(self, update: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def default_media(self, kind: str) -> Any:
        """The payload `kind=True` stands for (the server replaces it with files it can serve)."""
        return _MEDIA_DEFAULTS[kind]

    def push_message(
        self,
        chat_id: int,
        text: str = "",
        *,
        user_id: int | None = None,
        first_name: str = "Alice",
        last_name: str | None = None,
        username: str | None = None,
        chat_type: str = "private",
        chat_title: str | None = None,
        message_thread_id: int | None = None,
        is_topic_message: bool = False,
        reply_to_bot: bool = False,
        reply_to_message_id: int | None = None,
        reply_copy: dict[str, Any] | None = None,
        quote: str | None = None,
        external_reply: dict[str, Any] | None = None,
        entities: list[dict[str, Any]] | None = None,
        sender_chat: dict[str, Any] | int | None = None,
        from_bot: bool = False,
        forward_origin: dict[str, Any] | str | None = None,
        photo: bool | list[dict[str, Any]] = False,
        sticker: bool | dict[str, Any] = False,
        voice: bool | dict[str, Any] = False,
        audio: bool | dict[str, Any] = False,
        video: bool | dict[str, Any] = False,
        video_note: bool | dict[str, Any] = False,
        document: bool | dict[str, Any] = False,
        animation: bool | dict[str, Any] = False,
        caption: str | None = None,
        edited: bool = False,
        message_id: int | None = None,
        update_id: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Build a message Update as Telegram would send it and queue it; returns the Update dict."""
        now = int(time.time())
        chat = self._chat(chat_id, chat_type, chat_title, first_name, is_topic_message)
        if message_id is None:
            message_id = self._next_incoming_id
            self._next_incoming_id += 1
        message: dict[str, Any] = {"message_id": message_id, "date": now, "chat": chat}
        if chat_type != "channel":
            if sender_chat is not None:
                message["from"] = ANONYMOUS_ADMIN_BOT if user_id is None else self._user(user_id, first_name)
            else:
                user = self._user(user_id if user_id is not None else chat_id, first_name, from_bot)
                if last_name:
                    user["last_name"] = last_name
                if username:
                    user["username"] = username
                message["from"] = user
        if sender_chat is not None or chat_type == "channel":
            message["sender_chat"] = self._sender_chat(sender_chat, chat)
        if message_thread_id is not None:
            message["message_thread_id"] = message_thread_id
            if is_topic_message:
                message["is_topic_message"] = True
        media = {"photo": photo, "sticker": sticker, "voice": voice, "audio": audio, "video": video}
        media |= {"document": document, "animation": animation, "video_note": video_note}
        has_media = False
        for kind, value in media.items():
            if value:
                message[kind] = self.default_media(kind) if value is True else value
                has_media = True
        if has_media:
            if caption:
                message["caption"] = caption
                message["caption_entities"] = entities if entities is not None else auto_entities(caption)
        else:
            message["text"] = text
            found = entities if entities is not None else auto_entities(text)
            if found:
                message["entities"] = found
        if reply_to_message_id is not None:
            message["reply_to_message"] = self._replied(chat_id, reply_to_message_id, reply_copy)
        elif reply_to_bot:
            message["reply_to_message"] = self._reply_to_bot(chat, message_thread_id, now)
        elif is_topic_message and message_thread_id is not None:
            message["reply_to_message"] = self._topic_created(chat, message_thread_id, now)
        if forward_origin is not None:
            message["forward_origin"] = (
                {"type": "hidden_user", "sender_user_name": forward_origin, "date": now - 60}
                if isinstance(forward_origin, str)
                else forward_origin
            )
        if external_reply is not None:
            message["external_reply"] = external_reply
        if quote is not None:
            message["quote"] = self._quote(message, quote)
        if edited:
            message["edit_date"] = now
        if extra:
            message.update(extra)
        self.messages[(chat_id, message_id)] = message
        key = ("edited_" if edited else "") + ("channel_post" if chat_type == "channel" else "message")
        if update_id is None:
            update_id = self._next_update_id
        self._next_update_id = max(self._next_update_id, update_id + 1)
        return self.push_update({"update_id": update_id, key: message})

    def _replied(self, chat_id: int, message_id: int, copy: dict[str, Any] | None) -> dict[str, Any]:
        """The replied-to message as Telegram embeds it (`copy` overrides fields, e.g. a shortened text)."""
        known = self.messages.get((chat_id, message_id))
        if known is None:
            raise ValueError(f"no message {message_id} in chat {chat_id} to reply to")
        replied = {k: v for k, v in known.items() if k not in ("reply_to_message", "quote", "external_reply")}
        return {**replied, **(copy or {})}

    @staticmethod
    def _quote(message: dict[str, Any], quote: str) -> dict[str, Any]:
        """A manual TextQuote; Telegram requires it to be a part of the replied-to message."""
        replied = message.get("reply_to_message") or {}
        source = replied.get("text") or replied.get("caption") or ""
        position = source.find(quote)
        if "external_reply" not in message and position < 0:
            raise ValueError(f"quote {quote!r} is not part of the replied-to message")
        return {"text": quote, "position": _utf16(source[: max(position, 0)]), "is_manual": True}

    def _chat(
        self, chat_id: int, chat_type: str, title: str | None, first_name: str, forum: bool
    ) -> dict[str, Any]:
        if chat_type == "private":
            chat: dict[str, Any] = {"id": chat_id, "type": "private", "first_name": first_name}
        elif chat_type in ("group", "supergroup", "channel"):
            chat = {"id": chat_id, "type": chat_type, "title": title or f"Chat {chat_id}"}
            if forum:
                chat["is_forum"] = True
        else:
            raise ValueError(f"unknown chat_type {chat_type!r}")
        self.chats[chat_id] = chat
        return chat

    @staticmethod
    def _user(user_id: int, first_name: str, is_bot: bool = False) -> dict[str, Any]:
        return {"id": user_id, "is_bot": is_bot, "first_name": first_name, "language_code": "en"}

    @staticmethod
    def _sender_chat(sender_chat: dict[str, Any] | int | None, chat: dict[str, Any]) -> dict[str, Any]:
        if isinstance(sender_chat, dict):
            return sender_chat
        if sender_chat is None or sender_chat == chat["id"]:
            return chat
        return {"id": sender_chat, "type": "channel", "title": f"Channel {sender_chat}"}

    def _reply_to_bot(self, chat: dict[str, Any], thread_id: int | None, now: int) -> dict[str, Any]:
        replied: dict[str, Any] = {
            "message_id": 1,
            "date": now - 30,
            "chat": chat,
            "from": self.bot,
            "text": "…",
        }
        if thread_id is not None:
            replied["message_thread_id"] = thread_id
        return replied

    @staticmethod
    def _topic_created(chat: dict[str, Any], thread_id: int, now: int) -> dict[str, Any]:
        return {
            "message_id": thread_id,
            "date": now - 3600,
            "chat": chat,
            "from": {"id": 777, "is_bot": False, "first_name": "Topic creator"},
            "message_thread_id": thread_id,
            "forum_topic_created": {"name": f"Topic {thread_id}", "icon_color": 7322096},
        }

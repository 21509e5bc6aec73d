"""Posting a message the gateway writes itself (a reminder, a scheduling confirmation) to a stored chat,
in the chat and thread it belongs to, through `Platforms`; optionally kept in the chat's history as an
assistant turn, so a reply to it has its context."""

from __future__ import annotations

from agent.tokens import estimate_text
from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.store import NewMessage, Store
from gateway.store.records import ChatRecord, Role

POSTED_AUTHOR = "gateway:reminder"
"""The author name of a posted message kept in history (the text itself carries its label)."""


def chat_ref(chat: ChatRecord) -> ChatRef:
    return ChatRef(chat.platform, chat.chat_id, chat.thread_id or None, ChatKind(chat.kind), chat.title)


class ChatPoster:
    def __init__(self, *, store: Store, platforms: Platforms) -> None:
        self.store = store
        self.platforms = platforms

    async def where(self, chat_pk: int) -> ChatRef | None:
        """The chat's address, or None when it is unknown or its platform does not run here."""
        chat = await self.store.get_chat(chat_pk)
        if chat is None or not self.platforms.has(chat.platform):
            return None
        return chat_ref(chat)

    async def post(self, chat: ChatRef, chat_pk: int, text: str, *, keep: bool) -> str | None:
        """Send `text`; returns the first platform message id. Raises `SendError`. With `keep`, the
        message joins the chat's active session as an assistant row (after it was sent)."""
        sent = await self.platforms.send(OutgoingMessage(chat, text))
        message_id = sent.platform_message_ids[0] if sent.platform_message_ids else None
        if keep:
            await self.record(
                chat_pk, "assistant", text, author=POSTED_AUTHOR, platform_message_id=message_id
            )
        return message_id

    async def record(
        self,
        chat_pk: int,
        role: Role,
        text: str,
        *,
        author: str,
        platform_message_id: str | None = None,
        needs_reply: bool = False,
    ) -> None:
        """Keep a text the gateway wrote in the chat's active session (a posted reminder, a scheduled
        task's instruction for its turn)."""
        session = await self.store.active_session(chat_pk)
        row = NewMessage(
            role=role,
            content=text,
            text=text,
            token_estimate=estimate_text(text),
            author_name=author,
            platform_message_id=platform_message_id,
            needs_reply=needs_reply,
        )
        await self.store.append_messages(session.id, [row])

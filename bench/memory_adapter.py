"""An in-memory platform adapter: benchmarks hand it messages and read back what the gateway sent.

It implements the same `PlatformAdapter` seam as Telegram or Discord, so the whole pipeline (auth,
store, turn scheduling, the agent loop, persistence, replies) runs unchanged behind it.
`StreamingMemoryAdapter` also shows replies while they are written (drafts, every update at once, as on
the console), noting when each chat first showed the reply's text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from gateway.platforms.base import (
    Author,
    Capabilities,
    ChatKind,
    ChatRef,
    CommandSpec,
    IncomingMessage,
    MessageHandler,
    OutgoingMessage,
    SentMessage,
)

PLATFORM = "bench"


class _NoTyping:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Delivered:
    """One reply the gateway sent, with the `time.perf_counter` at which it was handed over."""

    message: OutgoingMessage
    at: float


@dataclass
class MemoryAdapter:
    """Delivers messages straight to the gateway's handler and records every reply."""

    name: str = PLATFORM
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            max_message_length=1_000_000, length_unit="chars", markdown="plain", supports_edit=False
        )
    )
    sent: list[Delivered] = field(default_factory=list)
    _handler: MessageHandler | None = None
    _ids: int = 0

    async def start(self, handler: MessageHandler, commands: list[CommandSpec]) -> None:
        self._handler = handler

    async def stop(self) -> None:
        self._handler = None

    async def send(self, message: OutgoingMessage) -> SentMessage:
        self._ids += 1
        self.sent.append(Delivered(message, time.perf_counter()))
        return SentMessage((f"out{self._ids}",))

    def typing(self, chat: ChatRef) -> _NoTyping:
        return _NoTyping()

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        return None

    async def deliver(self, message: IncomingMessage) -> None:
        if self._handler is None:
            raise RuntimeError("the adapter has not been started")
        await self._handler(message)


def chat_ref(chat_id: str, *, group: bool) -> ChatRef:
    kind = ChatKind.GROUP if group else ChatKind.PRIVATE
    return ChatRef(platform=PLATFORM, chat_id=chat_id, kind=kind, title=f"chat {chat_id}" if group else None)


def incoming(
    chat: ChatRef,
    *,
    user_id: str,
    name: str,
    text: str,
    message_id: str,
    sent_at: datetime,
    mentions_bot: bool = False,
) -> IncomingMessage:
    return IncomingMessage(
        chat=chat,
        author=Author(user_id=user_id, display_name=name),
        text=text,
        platform_message_id=message_id,
        sent_at=sent_at,
        mentions_bot=mentions_bot,
    )


class _MemoryLive:
    """A draft surface that shows every update at once and notes when reply text first appeared."""

    drafts = True
    throttled = False

    def __init__(self, adapter: StreamingMemoryAdapter, chat: ChatRef) -> None:
        self._adapter = adapter
        self._chat = chat

    def parts(self, text: str) -> list[str]:
        return self._adapter.parts(text)

    async def preview(self, index: int, text: str, message_id: str | None) -> None:
        if text.strip():
            self._adapter.first_text.setdefault(self._chat.chat_id, time.perf_counter())

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        await self.preview(index, text, message_id)
        self._adapter._ids += 1
        return f"out{self._adapter._ids}"

    async def status(self, text: str) -> None:
        return None  # "Working…" during a tool round is not the reply's text


@dataclass
class StreamingMemoryAdapter(MemoryAdapter):
    """A `MemoryAdapter` whose chats show replies as they are written; `first_text` maps a chat id to
    the `time.perf_counter` at which its reply's first words were shown (the last reply's, per chat)."""

    first_text: dict[str, float] = field(default_factory=dict)

    def parts(self, text: str) -> list[str]:
        return [text] if text.strip() else []

    def live(self, chat: ChatRef, *, reply_to: str | None) -> _MemoryLive:
        return _MemoryLive(self, chat)

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        return None

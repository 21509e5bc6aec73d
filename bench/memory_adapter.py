"""An in-memory platform adapter: benchmarks hand it messages and read back what the gateway sent.

It implements the same `PlatformAdapter` seam as Telegram or Discord, so the whole pipeline (auth,
store, turn scheduling, the agent loop, persistence, replies) runs unchanged behind it.
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

"""The one way out to the platforms: every reply, reaction, typing indicator, streamed reply and edit.

`Platforms` is built once from the running adapters and routes each call to the chat's platform, to
the adapter's sender (`PlatformSender`). What only some platforms can do (show a reply while it is
written, edit it into the final text) is looked up when it is built, so its callers never ask an
adapter what it is. A chat of a platform that is not running gets `SendError` for what must reach it,
and nothing for what may be skipped (typing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from gateway.errors import SendError, SendRejected
from gateway.platforms.base import (
    ChatRef,
    LiveSurface,
    OutgoingMessage,
    PlatformAdapter,
    PlatformSender,
    SentMessage,
    StreamingAdapter,
    TypingContext,
)


class Platforms:
    """The running adapters by platform name; iterating gives the adapters (to start and stop them)."""

    def __init__(self, adapters: Iterable[PlatformAdapter]) -> None:
        self._adapters = {adapter.name: adapter for adapter in adapters}
        self._senders = {name: adapter.sender for name, adapter in self._adapters.items()}
        self._streaming = {
            name: adapter for name, adapter in self._adapters.items() if isinstance(adapter, StreamingAdapter)
        }

    def __iter__(self) -> Iterator[PlatformAdapter]:
        return iter(self._adapters.values())

    def has(self, platform: str) -> bool:
        """Whether `platform` runs in this process (chats of another are left to the process that runs it)."""
        return platform in self._adapters

    def _sender(self, chat: ChatRef) -> PlatformSender:
        sender = self._senders.get(chat.platform)
        if sender is None:
            raise _not_running(chat)
        return sender

    async def send(self, message: OutgoingMessage) -> SentMessage:
        """Format, split and send to the chat's platform; raises `SendError` (the caller decides what a
        failure means)."""
        return await self._sender(message.chat).send(message)

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        """Put a reaction on a received message; raises `SendError`."""
        await self._sender(chat).react(chat, platform_message_id, emoji)

    def typing(self, chat: ChatRef) -> TypingContext:
        """Keeps the typing indicator alive while the block runs (nothing where the platform is not
        running)."""
        sender = self._senders.get(chat.platform)
        return sender.typing(chat) if sender is not None else contextlib.nullcontext()

    def parts(self, chat: ChatRef, text: str) -> list[str]:
        """`text` split into the messages it is sent as (one where the platform does not say)."""
        streaming = self._streaming.get(chat.platform)
        return streaming.parts(text) if streaming is not None else [text]

    def live(self, chat: ChatRef, *, reply_to: str | None) -> LiveSurface | None:
        """A surface to show a reply in `chat` while it is written (None where the chat cannot show one)."""
        streaming = self._streaming.get(chat.platform)
        return streaming.live(chat, reply_to=reply_to) if streaming is not None else None

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        """Replace one of the bot's messages with `text`, formatted as a final reply; raises `SendError`
        (`SendRejected` where the platform does not edit its messages)."""
        streaming = self._streaming.get(chat.platform)
        if streaming is not None:
            await streaming.sender.edit(chat, message_id, text)
        elif self.has(chat.platform):
            raise SendRejected(f"{chat.platform} does not edit messages", chat_id=chat.chat_id)
        else:
            raise _not_running(chat)


def _not_running(chat: ChatRef) -> SendError:
    return SendError(f"no adapter for platform {chat.platform} (chat {chat.chat_id})")

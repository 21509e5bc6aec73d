"""An in-memory `PlatformAdapter` for fast gateway tests: a queue in, a list out.

Tests drive it like a platform: `await adapter.say("hi")` delivers one message through the real
pipeline, waits until every turn it caused has finished, and returns the replies sent meanwhile.
`post` only waits until the message has been handled (stored), so several can arrive during one turn.

Benchmarks use `DirectMemoryAdapter` (each message handled in the caller's task, as the Telegram and
Discord adapters handle chats concurrently; no length limit) and `StreamingMemoryAdapter` (replies shown
while they are written); every adapter notes when each reply was handed over (`sent_at`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gateway.errors import SendError
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

BOT_USERNAME = "testbot"
ALICE = Author(user_id="42", display_name="Alice")
BOB = Author(user_id="43", display_name="Bob")
ADMIN = Author(user_id="1", display_name="Admin")


def private_chat(user: Author, platform: str = "telegram") -> ChatRef:
    return ChatRef(platform=platform, chat_id=user.user_id, kind=ChatKind.PRIVATE)


def group_chat(chat_id: str = "-100", title: str = "Team", platform: str = "telegram") -> ChatRef:
    return ChatRef(platform=platform, chat_id=chat_id, kind=ChatKind.GROUP, title=title)


def parse_command(text: str, username: str) -> tuple[str, str, str | None] | None:
    """`/name@target args` -> (name, args, target or None when addressed to us / to nobody)."""
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        return None
    head, _, rest = text[1:].partition(" ")
    name, _, target = head.partition("@")
    foreign = target if target and target.lower() != username.lower() else None
    return name.lower(), rest.strip(), foreign


@dataclass
class TypingEvent:
    chat: ChatRef
    entered: bool


class _Typing:
    """Records entering and leaving, as a platform would start and stop its typing indicator."""

    def __init__(self, adapter: MemoryAdapter, chat: ChatRef) -> None:
        self._adapter = adapter
        self._chat = chat

    async def __aenter__(self) -> None:
        self._adapter.typing_events.append(TypingEvent(self._chat, entered=True))
        self._adapter.typing_started.set()

    async def __aexit__(self, *exc: object) -> None:
        self._adapter.typing_events.append(TypingEvent(self._chat, entered=False))


@dataclass
class _Delivery:
    message: IncomingMessage
    handled: asyncio.Future[None]


@dataclass
class MemoryAdapter:
    """Poses as platform `name` so the gateway's per-platform admin and allow lists apply to it."""

    name: str = "telegram"
    username: str = BOT_USERNAME
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            max_message_length=4096, length_unit="chars", markdown="plain", supports_edit=False
        )
    )
    settle: Callable[[], Awaitable[None]] | None = None
    """Waits for every running turn (the harness sets it to the pipeline's `drain`)."""
    sent: list[OutgoingMessage] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    """The `time.perf_counter` at which each of `sent` was handed over."""
    typing_events: list[TypingEvent] = field(default_factory=list)
    reactions: list[tuple[ChatRef, str, str]] = field(default_factory=list)
    """(chat, platform message id, emoji) of every reaction the gateway put on a message."""
    fail_reactions: bool = False
    commands: list[CommandSpec] = field(default_factory=list)
    fail_sends: bool = False
    typing_started: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a turn starts showing the typing indicator (a turn is running)."""
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    """The time each incoming message says it was sent (a test fixes it for output that names the date)."""
    _inbox: asyncio.Queue[_Delivery] = field(default_factory=asyncio.Queue)
    _task: asyncio.Task[None] | None = None
    _handler: MessageHandler | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # -- PlatformAdapter -----------------------------------------------------------------------------

    @property
    def sender(self) -> MemoryAdapter:
        """The adapter sends itself: `sent`, `reactions` and `typing_events` record what went out."""
        return self

    async def start(self, handler: MessageHandler, commands: list[CommandSpec]) -> None:
        self.commands = list(commands)
        self._handler = handler
        self._task = asyncio.create_task(self._deliver(handler), name=f"memory-adapter:{self.name}")

    async def _deliver(self, handler: MessageHandler) -> None:
        while True:
            delivery = await self._inbox.get()
            try:
                await handler(delivery.message)
            except BaseException as exc:
                delivery.handled.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
            else:
                delivery.handled.set_result(None)

    async def stop(self) -> None:
        self._handler = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def send(self, message: OutgoingMessage) -> SentMessage:
        if self.fail_sends:
            raise SendError("memory adapter told to fail", chat_id=message.chat.chat_id)
        self.sent.append(message)
        self.sent_at.append(time.perf_counter())
        return SentMessage(platform_message_ids=(f"out-{next(self._ids)}",))

    def typing(self, chat: ChatRef) -> _Typing:
        return _Typing(self, chat)

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        if self.fail_reactions:
            raise SendError("memory adapter told to fail reactions", chat_id=chat.chat_id)
        self.reactions.append((chat, platform_message_id, emoji))

    # -- driving it from a test ----------------------------------------------------------------------

    def incoming(
        self,
        text: str,
        *,
        user: Author = ALICE,
        chat: ChatRef | None = None,
        message_id: str | None = None,
        **flags: Any,
    ) -> IncomingMessage:
        """An `IncomingMessage` as an adapter would build it; `flags` set any other field."""
        command = parse_command(text, self.username)
        fields: dict[str, Any] = {
            "chat": chat or private_chat(user, self.name),
            "author": user,
            "text": text,
            "platform_message_id": message_id or f"m{next(self._ids)}",
            "sent_at": self.clock(),
        }
        if command is not None:
            fields.update(
                is_command=True, command=command[0], command_args=command[1], command_target=command[2]
            )
        fields.update(flags)
        return IncomingMessage(**fields)

    async def post(self, text: str, **kwargs: Any) -> IncomingMessage:
        """Deliver one message and wait until the gateway has handled it (not for the turn it starts)."""
        message = self.incoming(text, **kwargs)
        await self.deliver(message)
        return message

    async def deliver(self, message: IncomingMessage) -> None:
        handled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._inbox.put(_Delivery(message, handled))
        await handled

    async def say(self, text: str, **kwargs: Any) -> list[OutgoingMessage]:
        """Deliver one message, wait for every turn to finish, return the replies sent meanwhile."""
        before = len(self.sent)
        await self.post(text, **kwargs)
        await self.wait_idle()
        return self.sent[before:]

    async def wait_idle(self) -> None:
        if self.settle is not None:
            await self.settle()

    def texts(self) -> list[str]:
        return [m.text for m in self.sent]


DIRECT_PLATFORM = "bench"


@dataclass
class DirectMemoryAdapter(MemoryAdapter):
    """Hands each message to the gateway in the caller's task, so callers deliver concurrently (as the
    Telegram and Discord adapters handle their chats), and sends replies of any length unsplit."""

    name: str = DIRECT_PLATFORM
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            max_message_length=1_000_000, length_unit="chars", markdown="plain", supports_edit=False
        )
    )

    async def deliver(self, message: IncomingMessage) -> None:
        if self._handler is None:
            raise RuntimeError("the adapter has not been started")
        await self._handler(message)


def chat_ref(chat_id: str, *, group: bool, platform: str = DIRECT_PLATFORM) -> ChatRef:
    kind = ChatKind.GROUP if group else ChatKind.PRIVATE
    return ChatRef(platform=platform, chat_id=chat_id, kind=kind, title=f"chat {chat_id}" if group else None)


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
    """A plain message (never a command) in `chat`, sent at `sent_at`."""
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
        return f"out-{next(self._adapter._ids)}"

    async def status(self, text: str) -> None:
        return None  # "Working…" during a tool round is not the reply's text


@dataclass
class StreamingMemoryAdapter(DirectMemoryAdapter):
    """A `DirectMemoryAdapter` whose chats show replies as they are written (drafts, every update at
    once, as on the console); `first_text` maps a chat id to the `time.perf_counter` at which its
    reply's first words were shown (the last reply's, per chat)."""

    first_text: dict[str, float] = field(default_factory=dict)

    @property
    def sender(self) -> StreamingMemoryAdapter:
        return self

    def parts(self, text: str) -> list[str]:
        return [text] if text.strip() else []

    def live(self, chat: ChatRef, *, reply_to: str | None) -> _MemoryLive:
        return _MemoryLive(self, chat)

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        return None

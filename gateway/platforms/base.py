"""The adapter seam: what every platform module provides and the plain values that cross it.

Platform SDK types never leave their adapter module; an adapter turns each update into an
`IncomingMessage` at once and hands it to the gateway's `MessageHandler`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable


class ChatKind(StrEnum):
    PRIVATE = "private"
    GROUP = "group"
    CHANNEL = "channel"


@dataclass(frozen=True, slots=True)
class ChatRef:
    """Where a message came from and where replies go. A forum topic / Discord thread is its own chat."""

    platform: str
    chat_id: str
    thread_id: str | None = None
    kind: ChatKind = ChatKind.PRIVATE
    title: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.platform, self.chat_id, self.thread_id or "")


@dataclass(frozen=True, slots=True)
class Author:
    user_id: str
    display_name: str
    is_bot: bool = False
    is_self: bool = False
    """The message was sent by this bot itself."""
    is_anonymous_admin: bool = False
    """Telegram anonymous group admin / message sent on behalf of a chat: no verifiable user."""


MediaKind = Literal[
    "photo", "sticker", "voice", "audio", "video_note", "video", "document", "animation", "other"
]

Fetch = Callable[[], Awaitable[bytes]]
"""Downloads an attachment's bytes; raises `gateway.errors.MediaFetchError` when it cannot."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """One file that came with a message, described by the platform; the bytes come later.

    The adapter supplies `fetch` (a download through its library); the gateway calls it only for
    authorized senders and only when the declared size is within the limit, and keeps the result in
    `data` (so a message spooled during a database outage keeps its files).
    """

    kind: MediaKind
    filename: str | None = None
    mime_type: str | None = None
    size: int | None = None
    """Bytes, when the platform says so before downloading."""
    width: int | None = None
    height: int | None = None
    label: str | None = None
    """What stands for the file when it cannot be shown (a sticker's emoji, a voice note's length)."""
    duration_s: float | None = None
    """Length of a voice note, audio file or video note, as the platform declares it."""
    fetch: Fetch | None = field(default=None, compare=False, repr=False)
    data: bytes | None = field(default=None, repr=False)
    error: str | None = None
    """Why the bytes could not be fetched, worded for the sender (set by the gateway)."""


@dataclass(frozen=True, slots=True)
class ReplyTo:
    """The message an incoming message replies to, as the platform showed it.

    The gateway prefers its own stored copy (looked up by `platform_message_id` within the same chat)
    and falls back to `text`, the platform's copy; a partial `quote` replaces the text either way.
    """

    platform_message_id: str | None
    """The replied-to message's id in the same chat; None when it lives in another chat."""
    author_name: str | None = None
    text: str = ""
    """The platform's copy of the replied-to text (may be shortened, empty, or a media note)."""
    quote: str | None = None
    """Only the part of the message the user quoted, when they quoted a part."""
    to_bot: bool = False
    """The replied-to message was written by this bot."""


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """One message (or slash-command invocation) from a platform, already converted."""

    chat: ChatRef
    author: Author
    text: str
    platform_message_id: str
    sent_at: datetime
    mentions_bot: bool = False
    reply_to_bot: bool = False
    is_command: bool = False
    command: str | None = None
    """Command name without slash or @botname, lower-case (e.g. "compact")."""
    command_args: str = ""
    command_target: str | None = None
    """The @botname a command was addressed to, if any (`/stats@other_bot` is not ours)."""
    is_edit: bool = False
    is_forwarded: bool = False
    forward_origin: str | None = None
    media: tuple[MediaKind, ...] = ()
    caption: str | None = None
    attachments: tuple[Attachment, ...] = ()
    """Files the gateway can download and read (photos, images, PDFs, text files...); kinds it cannot
    read are listed here too, so it can say so, and also in `media`."""
    reply_to: ReplyTo | None = None
    """What this message replies to (a reply, a quote); None for a plain message."""
    """Discord slash-command interaction: replies go through the interaction response."""
    reply_handle: object | None = field(default=None, compare=False, repr=False)
    """Opaque adapter handle (e.g. a pending interaction) passed back to `send`; never inspected elsewhere."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    max_message_length: int
    length_unit: Literal["utf16", "chars"]
    markdown: Literal["telegram_html", "discord_markdown", "plain"]
    supports_edit: bool
    supports_typing: bool = True


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    chat: ChatRef
    text: str
    """Markdown-ish text as the model wrote it; the adapter formats and splits for its platform."""
    reply_to_message_id: str | None = None
    reply_handle: object | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SentMessage:
    platform_message_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    description: str
    admin_only: bool
    args_hint: str = ""


MessageHandler = Callable[[IncomingMessage], Awaitable[None]]


@runtime_checkable
class PlatformAdapter(Protocol):
    """What the gateway needs from a platform. Implementations live in one module each."""

    name: str
    capabilities: Capabilities

    @property
    def sender(self) -> PlatformSender:
        """Everything that goes out to the platform."""
        ...

    async def start(self, handler: MessageHandler, commands: list[CommandSpec]) -> None:
        """Connect, register `commands` in the platform's menu, and deliver updates to `handler`."""
        ...

    async def stop(self) -> None: ...


class PlatformSender(Protocol):
    """A platform's one way out: its adapter's `sender`, which the gateway reaches only through
    `gateway.platforms.router.Platforms`. The single call path that waits out the platform's flood
    control and translates its errors."""

    async def send(self, message: OutgoingMessage) -> SentMessage:
        """Format, split to the platform's limits, send; raise `gateway.errors.SendError` when it cannot."""
        ...

    def typing(self, chat: ChatRef) -> TypingContext:
        """An async context manager that keeps the typing indicator alive while a turn runs."""
        ...

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        """Put `emoji` on a received message (a no-op where the platform has no reactions); raise
        `gateway.errors.SendError` when the platform refuses."""
        ...


class TypingContext(Protocol):
    async def __aenter__(self) -> None: ...

    async def __aexit__(self, *exc: object) -> None: ...


class LiveSurface(Protocol):
    """How a platform shows one reply while it is being written (see `gateway.reply.live_reply.LiveReply`).

    Either drafts (ephemeral previews without a message id; each finished part is sent as a message)
    or a message per part that is posted, then edited as it grows. Calls never wait out flood control:
    they raise `SendRetryLater` and the caller skips updates until then.
    """

    drafts: bool
    throttled: bool
    """False where updates cost nothing (a terminal): every delta is shown at once."""

    def parts(self, text: str) -> list[str]:
        """`text` split as the final reply will be (each part one message)."""
        ...

    async def preview(self, index: int, text: str, message_id: str | None) -> str | None:
        """Show part `index` as it is so far; returns its message id (None for a draft)."""
        ...

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        """Part `index` is finished: show it formatted as final; returns its message id."""
        ...

    async def status(self, text: str) -> None:
        """Show that the bot is working (e.g. a tool round) where the platform can."""
        ...


class EditingSender(PlatformSender, Protocol):
    """The sender of a platform that streams replies: it also edits the bot's messages."""

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        """Replace one of the bot's messages with `text`, formatted as a final reply."""
        ...


@runtime_checkable
class StreamingAdapter(PlatformAdapter, Protocol):
    """The optional adapter abilities behind streamed replies and per-part delivery."""

    @property
    def sender(self) -> EditingSender: ...

    def parts(self, text: str) -> list[str]:
        """A reply split into the messages it is sent as (the same split `sender.send` makes)."""
        ...

    def live(self, chat: ChatRef, *, reply_to: str | None) -> LiveSurface | None:
        """A surface to stream a reply into `chat` (None when the chat cannot show one)."""
        ...


@runtime_checkable
class WebhookReceiver(PlatformAdapter, Protocol):
    """An adapter with a webhook server that refuses requests without the platform's secret."""

    @property
    def refused_deliveries(self) -> int:
        """Requests refused for a missing or wrong secret since start."""
        ...

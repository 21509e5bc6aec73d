"""A local terminal chat: one private chat, the local user is admin. Try the product with only an API key.

Each line on stdin is one message (`/cmd args` lines are commands); replies go to stdout, rendered for
the terminal (`terminal_render`: bold, indented code, wrapped prose on a TTY). Lines up to 8 MiB are
accepted so a pasted log arrives whole. `/file PATH [question]` sends a local file (an image, a PDF or
a text file) with an optional question, as a photo or document would arrive from a platform. Logs go
to a file (`console.log_file`) so they do not interleave with the conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import mimetypes
import shlex
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from gateway.errors import MediaFetchError
from gateway.platforms.base import (
    Attachment,
    Author,
    Capabilities,
    ChatKind,
    ChatRef,
    CommandSpec,
    Fetch,
    IncomingMessage,
    MessageHandler,
    OutgoingMessage,
    SentMessage,
)
from gateway.platforms.console import CONSOLE_USER_ID
from gateway.platforms.console.terminal_render import Style, render_reply

logger = logging.getLogger(__name__)

LINE_LIMIT = 8 * 1024 * 1024
CHAT = ChatRef(platform="console", chat_id="local", kind=ChatKind.PRIVATE, title="console")


def parse_command(text: str) -> tuple[str, str] | None:
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        return None
    head, _, rest = text[1:].partition(" ")
    return head.split("@", 1)[0].lower(), rest.strip()


def parse_file_command(text: str) -> tuple[str, str] | None:
    """(path, question) for `/file PATH [question]`; a path with spaces goes in quotes."""
    command = parse_command(text)
    if command is None or command[0] != "file":
        return None
    try:
        parts = shlex.split(command[1])
    except ValueError:
        parts = command[1].split()
    if not parts:
        return "", ""
    return parts[0], " ".join(parts[1:])


def _locate(path_text: str) -> tuple[Path, int | None]:
    """The path (with ~ expanded) and its size, if it can be seen (the fetch reports why not)."""
    path = Path(path_text).expanduser()
    try:
        return path, path.stat().st_size
    except OSError:
        return path, None


def _file_reader(path: Path) -> Fetch:
    async def fetch() -> bytes:
        if not str(path) or str(path) == ".":
            raise MediaFetchError("no file was named (use /file PATH [question])")
        try:
            return await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            raise MediaFetchError(f"{path} could not be read ({exc.strerror or type(exc).__name__})") from exc

    return fetch


class _Typing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


class _ConsoleLive:
    """`LiveSurface` for the terminal: deltas are printed at once (nothing to throttle)."""

    drafts = True
    throttled = False

    def __init__(self, adapter: ConsoleAdapter) -> None:
        self._adapter = adapter

    def parts(self, text: str) -> list[str]:
        return self._adapter.parts(text)

    async def preview(self, index: int, text: str, message_id: str | None) -> None:
        self._adapter._print_live(text)

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        self._adapter._print_live(text)
        return "console-live"

    async def status(self, text: str) -> None:
        self._adapter._print_status(text)


class ConsoleAdapter:
    name = "console"
    capabilities = Capabilities(
        max_message_length=1_000_000,
        length_unit="chars",
        markdown="plain",
        supports_edit=False,
        supports_typing=False,
    )

    def __init__(
        self,
        *,
        stdin: asyncio.StreamReader | None = None,
        stdout: IO[str] | None = None,
        user_name: str = "you",
    ) -> None:
        self._reader = stdin
        self._out = stdout or sys.stdout
        self._user_name = user_name
        self._task: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self.finished = asyncio.Event()
        self._printed: str | None = None
        """The reply printed so far while it is written (None: no reply in progress)."""

    async def start(self, handler: MessageHandler, commands: list[CommandSpec]) -> None:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=LINE_LIMIT)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
            self._reader = reader
        names = ", ".join(["/" + c.name for c in commands] + ["/file PATH [question]"])
        self._print(f"Console chat ready. Type a message and press Enter; commands: {names}. Ctrl-D quits.")
        self._task = asyncio.create_task(self._read_loop(handler), name="console-reader")

    async def _read_loop(self, handler: MessageHandler) -> None:
        assert self._reader is not None
        try:
            while True:
                try:
                    raw = await self._reader.readline()
                except ValueError:  # a line above the limit: drain it and tell the user
                    self._print(
                        f"(That line is longer than {LINE_LIMIT // (1024 * 1024)} MiB and was not sent.)"
                    )
                    continue
                if not raw:
                    break
                text = raw.decode("utf-8", "replace").rstrip("\n")
                if not text.strip():
                    continue
                file_command = parse_file_command(text)
                if file_command is not None:
                    await handler(await self._file_message(*file_command))
                    continue
                await handler(self._incoming(text))
        finally:
            self.finished.set()

    def _incoming(self, text: str) -> IncomingMessage:
        command = parse_command(text)
        return IncomingMessage(
            chat=CHAT,
            author=Author(user_id=CONSOLE_USER_ID, display_name=self._user_name),
            text=text,
            platform_message_id=f"console-{datetime.now(UTC).timestamp():.6f}-{next(self._ids)}",
            sent_at=datetime.now(UTC),
            is_command=command is not None,
            command=command[0] if command else None,
            command_args=command[1] if command else "",
        )

    async def _file_message(self, path_text: str, question: str) -> IncomingMessage:
        path, size = await asyncio.to_thread(_locate, path_text)
        attachment = Attachment(
            kind="document",
            filename=path.name,
            mime_type=mimetypes.guess_type(path.name)[0],
            size=size,
            fetch=_file_reader(path),
        )
        message = self._incoming(question)
        return dataclasses.replace(message, media=("document",), attachments=(attachment,))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def send(self, message: OutgoingMessage) -> SentMessage:
        printed, self._printed = self._printed, None
        if printed is not None and message.text.startswith(printed):
            self._print(message.text[len(printed) :])  # the rest of a reply printed as it was written
        else:
            if printed is not None:
                self._print("")
            self._print(render_reply(message.text, self._style()))
        return SentMessage(platform_message_ids=(f"console-out-{next(self._ids)}",))

    # Streaming: the reply is printed as it arrives; `send` then prints what is missing.

    def parts(self, text: str) -> list[str]:
        return [text] if text.strip() else []

    def live(self, chat: ChatRef, *, reply_to: str | None) -> _ConsoleLive:
        return _ConsoleLive(self)

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        self._print(f"bot> {text}")

    def _print_live(self, text: str) -> None:
        """Print `text` as the reply so far: only what is new, or anew if it changed."""
        printed = self._printed
        if printed is not None and text.startswith(printed):
            self._out.write(text[len(printed) :])
        else:
            self._out.write(("\n" if printed is not None else "") + "bot> " + text)
        self._out.flush()
        self._printed = text

    def _print_status(self, text: str) -> None:
        if self._printed is not None:
            self._out.write("\n")
        self._printed = None
        self._print(f"({text})")

    def typing(self, chat: ChatRef) -> _Typing:
        return _Typing()

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        return None  # the terminal shows the reply itself; there is nothing to react on

    def _style(self) -> Style:
        """Colour and wrapping on a terminal; the text as written when output goes to a pipe or file."""
        isatty = getattr(self._out, "isatty", None)
        if not (callable(isatty) and isatty()):
            return Style(color=False, width=None)
        return Style(color=True, width=shutil.get_terminal_size().columns)

    def _print(self, text: str) -> None:
        if self._printed is not None and text:
            self._out.write("\n")
            self._printed = None
        self._out.write(text + "\n")
        self._out.flush()

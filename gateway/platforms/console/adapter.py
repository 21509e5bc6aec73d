"""A local terminal chat: one private chat, the local user is admin. Try the product with only an API key.

On a terminal, lines are read at a `you> ` prompt with line editing and history (`prompt_input`);
from a pipe, each line on stdin is one message. `/cmd args` lines are commands. Replies are printed as
they stream, rendered for the terminal (`screen`, `stream_render`: bold, indented code, prose wrapped
to the width on a TTY). Lines up to 8 MiB are accepted so a pasted log arrives whole.
`/file PATH [question]` sends a local file (an image, a PDF or a text file) with an optional question,
as a photo or document would arrive from a platform; a file that is missing or empty is not sent. Logs go
to a file (`console.log_file`) so they do not interleave with the conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import mimetypes
import os
import shlex
import stat
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Protocol

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
    MediaKind,
    MessageHandler,
    OutgoingMessage,
    SentMessage,
    TypingContext,
)
from gateway.platforms.console import CONSOLE_USER_ID
from gateway.platforms.console.prompt_input import PromptInput
from gateway.platforms.console.screen import DEMO_PREFIX, ConsoleLive, Screen, message_id
from gateway.platforms.console.terminal_render import PREFIX

logger = logging.getLogger(__name__)

LINE_LIMIT = 8 * 1024 * 1024
DEMO_BANNER = (
    "DEMO: a local fake model answers (it repeats your message back), not Claude, and no API key is used; "
    "replies are marked demo>. For the real bot put ANTHROPIC_API_KEY in .env and run `make chat`."
)
ANSWER_WAIT_S = 600.0
"""From a pipe or a file, how long one line's answer is waited for before the next line is sent."""
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


class ConsoleSender:
    """The console's way out: replies printed on the screen; no typing indicator, nothing to react on."""

    def __init__(self, screen: Screen, ids: Iterator[int]) -> None:
        self._screen = screen
        self._ids = ids

    async def send(self, message: OutgoingMessage) -> SentMessage:
        self._screen.show(message)
        return SentMessage(platform_message_ids=(f"console-out-{next(self._ids)}",))

    async def edit(self, chat: ChatRef, message_id: str, text: str) -> None:
        self._screen.show(OutgoingMessage(chat=chat, text=text))

    def typing(self, chat: ChatRef) -> TypingContext:
        return contextlib.nullcontext()

    async def react(self, chat: ChatRef, platform_message_id: str, emoji: str) -> None:
        return None  # the terminal shows the reply itself; there is nothing to react on


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


class LineSource(Protocol):
    async def readline(self) -> bytes: ...


class FileLines:
    """Lines of a regular file or `/dev/null` on stdin: the event loop cannot watch those (epoll refuses
    them), and reading them never blocks for long, so each line is read in a thread."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        return await asyncio.to_thread(self._stream.readline)


def _watchable(fd: int) -> bool:
    """Whether the event loop can wait on `fd` (a pipe, a socket, a terminal); not a file or /dev/null."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


async def stdin_lines() -> LineSource:
    """The process's stdin as lines (up to `LINE_LIMIT` each from a pipe)."""
    if not _watchable(sys.stdin.fileno()):
        return FileLines(sys.stdin.buffer)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


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
        stdin: LineSource | None = None,
        stdout: IO[str] | None = None,
        user_name: str = "you",
        demo: bool = False,
    ) -> None:
        self._reader = stdin
        self._one_at_a_time = False
        """From the process's own stdin (not a terminal), each line is answered before the next is sent."""
        self._user_name = user_name
        self._task: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self.finished = asyncio.Event()
        self._prompt: PromptInput | None = None
        self._demo = demo
        prefix = DEMO_PREFIX if demo else PREFIX
        if stdin is None and stdout is None and _interactive():
            self._prompt = PromptInput()
            self.screen = Screen(tty=True, activity=self._prompt.activity, prefix=prefix)
        else:
            out = stdout or sys.stdout
            isatty = getattr(out, "isatty", None)
            self.screen = Screen(out=out, tty=bool(callable(isatty) and isatty()), prefix=prefix)
        self.sender = ConsoleSender(self.screen, self._ids)

    async def start(self, handler: MessageHandler, commands: list[CommandSpec]) -> None:
        names = ", ".join(["/" + c.name for c in commands] + ["/file PATH [question]"])
        if self._demo:
            self.screen.line(DEMO_BANNER)
        self.screen.line(
            f"Console chat ready. Type a message and press Enter; commands: {names}. Ctrl-D quits."
        )
        if self._prompt is not None:
            self._task = asyncio.create_task(self._prompt_loop(handler, self._prompt), name="console-prompt")
            return
        if self._reader is None:
            self._reader = await stdin_lines()
            self._one_at_a_time = True
        self._task = asyncio.create_task(self._read_loop(handler), name="console-reader")

    async def _prompt_loop(self, handler: MessageHandler, prompt: PromptInput) -> None:
        try:
            async for text in prompt.lines():
                await self._line(handler, text)
        finally:
            self.finished.set()

    async def _read_loop(self, handler: MessageHandler) -> None:
        assert self._reader is not None
        try:
            while True:
                try:
                    raw = await self._reader.readline()
                except ValueError:  # a line above the limit: drain it and tell the user
                    self.screen.line(
                        f"(That line is longer than {LINE_LIMIT // (1024 * 1024)} MiB and was not sent.)"
                    )
                    continue
                if not raw:
                    break
                await self._line(handler, raw.decode("utf-8", "replace").rstrip("\n"))
                if self._one_at_a_time:
                    await self._answered()
        finally:
            self.finished.set()

    async def _answered(self) -> None:
        try:
            async with asyncio.timeout(ANSWER_WAIT_S):
                await self.screen.idle.wait()
        except TimeoutError:
            self.screen.line(f"(No answer within {ANSWER_WAIT_S:.0f} s; sending the next line.)")

    async def _line(self, handler: MessageHandler, text: str) -> None:
        if not text.strip():
            return
        file_command = parse_file_command(text)
        if file_command is None:
            message = self._incoming(text)
        else:
            found = await self._file_message(*file_command)
            if isinstance(found, str):
                self.screen.line(found)
                return
            message = found
        self.screen.sent(message.platform_message_id)
        await handler(message)

    def _incoming(self, text: str) -> IncomingMessage:
        command = parse_command(text)
        now = datetime.now(UTC)
        return IncomingMessage(
            chat=CHAT,
            author=Author(user_id=CONSOLE_USER_ID, display_name=self._user_name),
            text=text,
            platform_message_id=message_id(now, next(self._ids)),
            sent_at=now,
            is_command=command is not None,
            command=command[0] if command else None,
            command_args=command[1] if command else "",
        )

    async def _file_message(self, path_text: str, question: str) -> IncomingMessage | str:
        """The message carrying the file, or why nothing is sent (no such file, an empty one)."""
        if not path_text:
            return "(Name a file: /file PATH [question]. Nothing was sent.)"
        path, size = await asyncio.to_thread(_locate, path_text)
        if size is None:
            return f"(There is no file {path} that I can read. Nothing was sent.)"
        if size == 0:
            return f"({path} is empty. Nothing was sent.)"
        mime_type = mimetypes.guess_type(path.name)[0]
        # Sound goes as an audio file: heard when transcription is on, else the gateway says it cannot be.
        kind: MediaKind = "audio" if (mime_type or "").startswith("audio/") else "document"
        attachment = Attachment(
            kind=kind,
            filename=path.name,
            mime_type=mime_type,
            size=size,
            fetch=_file_reader(path),
        )
        message = self._incoming(question)
        return dataclasses.replace(message, media=(kind,), attachments=(attachment,))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    # Streaming: the reply is printed as it is written (`screen`); `sender.send` prints what is missing.

    def parts(self, text: str) -> list[str]:
        return [text] if text.strip() else []

    def live(self, chat: ChatRef, *, reply_to: str | None) -> ConsoleLive:
        return self.screen.live(reply_to)

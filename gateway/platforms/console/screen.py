"""What the terminal chat prints: replies rendered as they stream and printed once, their notices, the
"Working…" status while the bot has not answered yet, and a note before answering a message sent before
a restart.

Streamed text and the final reply meet here: the turn streams its reply into `ConsoleLive` (one per
reply, known by the message it answers), and the final text (the reply with any notices, such as a
compaction's) arrives through `show`; only what was not printed yet is printed then.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import textwrap
from collections.abc import Callable
from datetime import datetime
from typing import IO

from gateway.platforms.base import OutgoingMessage
from gateway.platforms.console.stream_render import ReplyStream
from gateway.platforms.console.terminal_render import DIM, PREFIX, RESET, Style, line_rows, render_reply

WORKING = "Working\u2026"
WRITING = "Writing\u2026"
"""Capitalised like the status the turn sends during tool calls ("Working… (recall)")."""
DEMO_PREFIX = "demo> "
ID_PREFIX = "console-"


def message_id(sent_at: datetime, number: int) -> str:
    """A console message's id: when it was sent (so a later process can say when) and a counter."""
    return f"{ID_PREFIX}{sent_at.timestamp():.6f}-{number}"


def sent_time(platform_message_id: str) -> datetime | None:
    """When a console message was sent, read back from its id (None for another kind of id)."""
    stamp = platform_message_id.removeprefix(ID_PREFIX).rsplit("-", 1)[0]
    try:
        return datetime.fromtimestamp(float(stamp))
    except ValueError:
        return None


def recovered_note(platform_message_id: str) -> str:
    when = sent_time(platform_message_id)
    at = f" from {when:%H:%M}" if when is not None else ""
    return f"(Answering your message{at}, sent before the restart.)"


class ConsoleLive:
    """`LiveSurface` for one reply in the terminal: every update is shown (nothing to throttle)."""

    drafts = True
    throttled = False

    def __init__(self, screen: Screen, reply_to: str | None) -> None:
        self._screen = screen
        self.reply_to = reply_to
        self.stream: ReplyStream | None = None
        self.text = ""

    def parts(self, text: str) -> list[str]:
        return [text] if text.strip() else []

    async def preview(self, index: int, text: str, message_id: str | None) -> None:
        self._screen.streamed(self, text)

    async def complete(self, index: int, text: str, message_id: str | None) -> str:
        self._screen.streamed(self, text)
        return "console-live"

    async def status(self, text: str) -> None:
        self._screen.tool_status(self, text)


class Screen:
    """The console's output; `activity` is where the status line goes (the prompt, or nowhere)."""

    def __init__(
        self,
        *,
        out: IO[str] | None = None,
        tty: bool = False,
        activity: Callable[[str | None], None] | None = None,
        prefix: str = PREFIX,
    ) -> None:
        self._out = out
        self._prefix = prefix
        self._tty = tty
        self._activity = activity or (lambda _text: None)
        self._live: dict[str | None, ConsoleLive] = {}
        self._mine: set[str] = set()
        self._waiting: list[str] = []
        self._noted: set[str] = set()
        self.idle = asyncio.Event()
        """Set while every message the user sent has been answered."""
        self.idle.set()

    # -- what the user sent ---------------------------------------------------------------------------

    def sent(self, platform_message_id: str) -> None:
        """A line the user entered was handed to the gateway: show that the bot is on it."""
        self._mine.add(platform_message_id)
        self._waiting.append(platform_message_id)
        self.idle.clear()
        self._activity(WORKING)

    # -- what the bot prints --------------------------------------------------------------------------

    def live(self, reply_to: str | None) -> ConsoleLive:
        surface = ConsoleLive(self, reply_to)
        self._live[reply_to] = surface
        return surface

    def streamed(self, live: ConsoleLive, text: str) -> None:
        text = text.lstrip()
        if not text:
            return
        if live.stream is None:
            self._note_recovered(live.reply_to)
            live.stream = ReplyStream(self.style())
        live.text = text
        rows = live.stream.feed(text)
        if rows:
            self._activity(None)
            self.write(rows)
        elif not live.stream.started:
            self._activity(WRITING)

    def tool_status(self, live: ConsoleLive, text: str) -> None:
        """The reply goes on after tool calls: what was written before them is complete."""
        if live.stream is not None:
            self.write(live.stream.finish(live.text))
        live.stream, live.text = None, ""
        self._activity(text)

    def show(self, message: OutgoingMessage) -> None:
        """The final text of a reply (or any message): print what its stream has not printed."""
        reply_to = message.reply_to_message_id
        live = self._live.pop(reply_to, None) if reply_to is not None else None
        core = live.text.strip() if live is not None and live.stream is not None else ""
        start = message.text.find(core) if core else -1
        if live is not None and live.stream is not None and start >= 0:
            rows = live.stream.finish(message.text[start:])
            rows.extend(self._notices(message.text[:start]))
        elif live is not None and live.stream is not None:
            rows = live.stream.finish(message.text)
        else:
            self._note_recovered(reply_to)
            rows = render_reply(message.text, self.style()).splitlines()
        self.write(rows)
        self._answered(reply_to)

    def line(self, text: str) -> None:
        """A line of the console's own (the banner, a refusal of a bad `/file`), wrapped between words."""
        width = self.style().width
        self.write(textwrap.wrap(text, width=width, break_long_words=False) if width else [text])

    # -- helpers ----------------------------------------------------------------------------------------

    def _answered(self, reply_to: str | None) -> None:
        if reply_to in self._waiting:
            del self._waiting[: self._waiting.index(reply_to) + 1]
        elif reply_to is None and self._waiting:
            self._waiting.pop(0)  # a reply to no message in particular: count it for the oldest
        # a reply to a message from before a restart leaves the messages typed since waiting
        self._activity(WORKING if self._waiting else None)
        if not self._waiting:
            self.idle.set()

    def _note_recovered(self, reply_to: str | None) -> None:
        if reply_to is None or reply_to in self._mine or reply_to in self._noted:
            return
        if not reply_to.startswith(ID_PREFIX):
            return
        self._noted.add(reply_to)
        self.write([self._dim(recovered_note(reply_to))])

    def _notices(self, text: str) -> list[str]:
        """Notices that came with a streamed reply (a compaction's), printed under it."""
        style = Style(color=False, width=self.style().width)
        rows = [row for line in text.splitlines() for row in line_rows(line, style, in_code=False)[0]]
        return [self.style().indent + self._dim(row) for row in rows if row.strip()]

    def _dim(self, text: str) -> str:
        return f"{DIM}{text}{RESET}" if self._tty else text

    def style(self) -> Style:
        """Colour and wrapping to the current width on a terminal; the text as written in a pipe or file."""
        if not self._tty:
            return Style(color=False, width=None, prefix=self._prefix)
        return Style(color=True, width=shutil.get_terminal_size().columns, prefix=self._prefix)

    def write(self, rows: list[str]) -> None:
        if not rows:
            return
        out = self._out or sys.stdout  # the prompt's stdout proxy while the prompt is up
        out.write("\n".join(rows) + "\n")
        out.flush()

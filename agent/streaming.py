"""What a turn shows while the model writes: a `StreamSink` receives the reply's text as it arrives.

The loop calls `text` with each delta of the current model call, `progress` with each delta of the
progress the model writes before calling tools (on the 5.5 models it arrives as thinking, readable with
`display: "updates"`), and `working` when the model turns to tools (the text so far was a preamble, not
the reply: a sink discards it and may show a status). The
sink must not raise: showing progress is best effort, the final reply is delivered separately.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

TextSink = Callable[[str], Awaitable[None]]
"""Receives one text delta of a streamed model call."""


class StreamSink(Protocol):
    async def text(self, delta: str) -> None:
        """The next piece of the reply being written."""
        ...

    async def working(self, tools: Sequence[str]) -> None:
        """The model called tools: the text so far is discarded; show that the bot is working."""
        ...

    async def progress(self, delta: str) -> None:
        """The next piece of what the model says it is doing between tool calls (shown as status)."""
        ...

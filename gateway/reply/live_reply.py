"""A reply shown while it is written: the model's text goes to a `LiveSurface` at most once per interval.

`LiveReply` is the turn's `agent.streaming.StreamSink`. Receiving text never waits on the platform: a
background task shows the newest text when the interval allows, so updates in between are skipped, and
flood control (`SendRetryLater`) only pushes the next update back. A part that passes the platform's
length limit is completed (shown as final) and the text continues in the next part. Nothing here is
stored or decides what the final reply is: `gateway.reply.outbox` sends the final parts, reusing what this
put on screen (the message ids, the parts already completed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from gateway.errors import SendError, SendRetryLater
from gateway.platforms.base import ChatRef, LiveSurface

logger = logging.getLogger(__name__)

WORKING = "Working\u2026"


def status_line(tools: Sequence[str], progress: str = "") -> str:
    """What a draft shows during a tool round: what the model said it is doing, if anything, then the
    tools it called."""
    names = ", ".join(dict.fromkeys(t for t in tools if t))
    working = f"{WORKING} ({names})" if names else WORKING
    said = progress.strip()
    return f"{said}\n\n{working}" if said else working


class LiveReply:
    """Streams one reply into one chat; `close` stops it, after which its state is read by delivery."""

    def __init__(
        self,
        surface: LiveSurface,
        chat: ChatRef,
        *,
        interval_s: float,
        first_delay_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.surface = surface
        self.chat = chat
        self.interval_s = interval_s if surface.throttled else 0.0
        self.first_delay_s = first_delay_s if surface.throttled else 0.0
        """Nothing is shown before the reply has been written for this long (a reply that is complete
        by then is sent once, without a preview to edit)."""
        self.clock = clock
        self.message_ids: dict[int, str] = {}
        """Part index -> the message showing it (edited surfaces, and parts already completed)."""
        self.completed: dict[int, str] = {}
        """Part index -> the text it was completed with (shown as final)."""
        self.updates = 0
        self.first_shown_at: float | None = None
        self._text = ""
        self._progress = ""
        self._said = False
        """The status carries what the model said (not only "Working…")."""
        self._status: str | None = None
        self._shown: dict[int, str] = {}
        self._last_update = -float("inf")
        self._started_at: float | None = None
        self._blocked_until = 0.0
        self._broken = False
        self._wake = asyncio.Event()
        self._closed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- StreamSink ---------------------------------------------------------------------------------

    async def text(self, delta: str) -> None:
        self._text += delta
        self._status = None
        self._kick()

    async def progress(self, delta: str) -> None:
        # What the model says it is about to do (a progress update before its tool calls): shown as
        # the status until the tools are named, then with them.
        self._progress += delta
        self._said = True
        self._status = status_line((), self._progress)
        self._kick()

    async def working(self, tools: Sequence[str]) -> None:
        # The text so far introduced tool calls; the reply starts again after them.
        self._text = ""
        self._status = status_line(tools, self._progress)
        self._said = bool(self._progress.strip())
        self._progress = ""
        self.completed.clear()
        if self.surface.drafts:
            self.message_ids.clear()  # a part sent before the tools stays as it is; the reply starts anew
        self._kick()

    # -- lifecycle ----------------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop showing updates; an update under way finishes first (so its message id is known)."""
        self._closed.set()
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            await task

    def _kick(self) -> None:
        if self._broken or self._closed.is_set():
            return
        self._wake.set()
        if self._started_at is None:
            self._started_at = self.clock()
        if self._task is None:
            self._task = asyncio.create_task(
                self._run(), name=f"live:{self.chat.platform}:{self.chat.chat_id}"
            )

    async def _run(self) -> None:
        while not self._closed.is_set() and not self._broken:
            await self._wake.wait()
            self._wake.clear()
            if self._closed.is_set():
                return
            earliest = (self._started_at or 0.0) + self.first_delay_s
            wait = max(earliest, self._last_update + self.interval_s, self._blocked_until) - self.clock()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closed.wait(), wait)
                if self._closed.is_set():
                    return
            self._last_update = self.clock()
            try:
                await self._show()
            except SendRetryLater as exc:
                self._blocked_until = self.clock() + exc.retry_after
                logger.info(
                    "streaming to %s:%s: flood control, next update in %.1fs",
                    self.chat.platform,
                    self.chat.chat_id,
                    exc.retry_after,
                )
                self._wake.set()  # show the newest text once allowed
            except SendError as exc:
                self._broken = True
                logger.warning(
                    "streaming to %s:%s stopped (the final reply is still sent): %s",
                    self.chat.platform,
                    self.chat.chat_id,
                    exc,
                )
            except Exception:
                # Showing progress is cosmetic: a bug here must not abort the turn.
                self._broken = True
                logger.exception("streaming to %s:%s failed", self.chat.platform, self.chat.chat_id)

    async def _show(self) -> None:
        if not self._text:
            if self._status is not None:
                status, self._status = self._status, None
                if self._said and not self.surface.drafts:
                    # what the model said it is doing is worth a message where there are no drafts;
                    # the reply then edits that message
                    shown = await self.surface.preview(0, status, self.message_ids.get(0))
                    if shown is not None:
                        self.message_ids[0] = shown
                    self._shown[0] = status
                else:
                    await self.surface.status(status)
                self._count()
            return
        parts = self.surface.parts(self._text)
        for index, part in enumerate(parts):
            finished = index < len(parts) - 1
            if index in self.completed or self._shown.get(index) == part:
                continue
            if finished:
                self.message_ids[index] = await self.surface.complete(
                    index, part, self.message_ids.get(index)
                )
                self.completed[index] = part
            else:
                shown = await self.surface.preview(index, part, self.message_ids.get(index))
                if shown is not None:
                    self.message_ids[index] = shown
            self._shown[index] = part
            self._count()

    def _count(self) -> None:
        self.updates += 1
        if self.first_shown_at is None:
            self.first_shown_at = self.clock()

    # -- what delivery reuses -----------------------------------------------------------------------

    def on_screen(self, index: int, text: str) -> str | None:
        """The message id of part `index` when it already shows exactly `text` as a final part."""
        if self.completed.get(index) == text:
            return self.message_ids.get(index)
        return None

    def message_for(self, index: int) -> str | None:
        """The message part `index` was previewed in (to be edited into the final text), if any."""
        return None if self.surface.drafts else self.message_ids.get(index)

    def shown(self, index: int) -> str | None:
        return self._shown.get(index)

    @property
    def written(self) -> str:
        """The reply text received so far from the model's current call (shown, or about to be): what
        a reply cut off in the middle ends with before its note."""
        return self._text

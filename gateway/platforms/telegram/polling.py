"""Long polling that confirms an update to Telegram only once the gateway has stored its message.

Telegram keeps returning an update from `getUpdates` until a later call passes an `offset` above its
`update_id`. python-telegram-bot's `Updater` moves the offset on as soon as an update is queued, so a
crash before the message is stored loses it. This loop asks with `Bot.get_updates` itself and only
passes an offset past updates whose hand-over finished (`UpdateOffsets`): after a crash everything
not yet stored is delivered again, and the store's unique platform message id drops what was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Callable, Sequence
from datetime import timedelta

from telegram import Bot, Update
from telegram.error import Conflict, InvalidToken, RetryAfter, TelegramError, TimedOut
from telegram.warnings import PTBDeprecationWarning

logger = logging.getLogger(__name__)

BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
IDLE_WAIT_S = 1.0
"""How long to wait for a stored update before asking again when Telegram only returned known ones."""
CONFIRM_TIMEOUT_S = 1.0
STOP_POLL_S = 0.2

Dispatch = Callable[[Update], "asyncio.Task[bool] | None"]
"""Starts handing an update over; None when there is nothing to store (it is settled at once)."""


class UpdateOffsets:
    """Which fetched updates are still being stored, and the offset that confirms only the others.

    Update ids only grow, so an id at or below the highest one seen was fetched before: it is either
    still open (being stored) or settled, and must not be handed over twice.
    """

    def __init__(self) -> None:
        self._open: set[int] = set()
        self._highest: int | None = None

    def admit(self, update_id: int) -> bool:
        """True for an update not seen before (it is now open); False for one fetched again."""
        if self._highest is not None and update_id <= self._highest:
            return False
        self._highest = update_id
        self._open.add(update_id)
        return True

    def settle(self, update_id: int) -> None:
        self._open.discard(update_id)

    @property
    def open_count(self) -> int:
        return len(self._open)

    @property
    def offset(self) -> int | None:
        """The `getUpdates` offset: the oldest open update, else one past the newest settled one."""
        if self._open:
            return min(self._open)
        return None if self._highest is None else self._highest + 1


class LongPoller:
    """Fetches updates, hands new ones to `dispatch`, and confirms them once their task succeeded."""

    def __init__(
        self,
        bot: Bot,
        dispatch: Dispatch,
        *,
        timeout: float,
        allowed_updates: Sequence[str],
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self._bot = bot
        self._dispatch = dispatch
        self._timeout = timedelta(seconds=timeout)
        self._allowed = list(allowed_updates)
        self._redact = redact
        self.offsets = UpdateOffsets()
        self._progress = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="telegram:polling")

    async def stop(self) -> None:
        """Stop fetching at once; a request in flight is abandoned (its updates stay unconfirmed)."""
        task, self._task = self._task, None
        self._stopping = True
        if task is None:
            return
        # The HTTP stack underneath may absorb one cancellation while it closes the connection;
        # cancel again until the loop has really ended (it also checks `_stopping` on every pass).
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=STOP_POLL_S)
        if not task.cancelled() and task.exception() is not None:
            logger.error("telegram: the polling loop had failed", exc_info=task.exception())

    async def confirm(self) -> None:
        """Tell Telegram which updates are stored, so a restart does not receive them again.

        Only an optimisation (a redelivered update is stored once anyway), so failures are logged.
        """
        offset = self.offsets.offset
        if offset is None:
            return
        try:
            await self._bot.get_updates(
                offset=offset,
                limit=1,
                timeout=timedelta(0),
                allowed_updates=self._allowed,
                read_timeout=CONFIRM_TIMEOUT_S,
                connect_timeout=CONFIRM_TIMEOUT_S,
                pool_timeout=CONFIRM_TIMEOUT_S,
            )
        except (TelegramError, OSError) as exc:
            logger.warning(
                "telegram: could not confirm updates below %d (%s); they are delivered again and "
                "dropped as duplicates",
                offset,
                type(exc).__name__,
            )

    async def _run(self) -> None:
        failures = 0
        while not self._stopping:
            self._progress.clear()
            try:
                updates = await self._bot.get_updates(
                    offset=self.offsets.offset, timeout=self._timeout, allowed_updates=self._allowed
                )
            except RetryAfter as exc:
                wait = retry_after_seconds(exc)
                logger.warning("telegram: getUpdates flood control, waiting %.0fs", wait)
                await asyncio.sleep(wait)
                continue
            except TimedOut:
                continue  # the long poll outlived the connection; ask again
            except Exception as exc:
                delay = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                failures += 1
                logger.log(
                    logging.ERROR if failures > 2 or isinstance(exc, InvalidToken) else logging.WARNING,
                    "telegram: getUpdates failed (%s); retrying in %.0fs",
                    self._describe(exc),
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            if self._stopping:
                return  # fetched but not handed over: they stay unconfirmed
            failures = 0
            fresh = [u for u in updates if self.offsets.admit(u.update_id)]
            for update in fresh:
                self._start(update)
            if updates and not fresh:
                # Telegram returned only updates still being stored: wait for one to finish (or a
                # moment) instead of asking again at once.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._progress.wait(), IDLE_WAIT_S)

    def _start(self, update: Update) -> None:
        task = self._dispatch(update)
        if task is None:
            self._settle(update.update_id)
            return
        task.add_done_callback(lambda t: self._finished(update.update_id, t))

    def _finished(self, update_id: int, task: asyncio.Task[bool]) -> None:
        # Only a completed hand-over confirms; a cancelled one (shutdown) leaves the update to Telegram.
        if not task.cancelled() and task.exception() is None and task.result():
            self._settle(update_id)

    def _settle(self, update_id: int) -> None:
        self.offsets.settle(update_id)
        self._progress.set()

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, InvalidToken):
            return "the bot token was rejected; check TELEGRAM_BOT_TOKEN"
        if isinstance(exc, Conflict):
            return "another process polls with this token, or a webhook is set"
        if isinstance(exc, TelegramError):
            return f"{type(exc).__name__}: {self._redact(exc.message)}"
        return f"{type(exc).__name__}: {self._redact(str(exc))}"


def retry_after_seconds(exc: RetryAfter) -> float:
    """`RetryAfter.retry_after` as seconds; PTB 22 warns on int access while it migrates to timedelta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)

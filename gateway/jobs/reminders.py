"""The reminders ticker: run by `JobScheduler` every `reminders.tick_s`, it records the occurrences that
fell due, claims them (each by exactly one worker: `gateway/store/reminders/ledger.py`) and delivers
them to the chat and thread they were set in.

- A reminder is sent as written, framed ("⏰ Reminder: ..."), with no model call, and joins the chat's
  history as an assistant turn. A task stores its text as an instruction in the chat and runs one turn
  through `ChatTasks` (the chat's spending caps apply as to any turn).
- Downtime: an occurrence that fell due while no worker ran is sent late with the time it was due,
  within `reminders.late_window_h`; past that it is marked missed and the chat is told so. A repeating
  reminder collapses an outage to one catch-up, its latest due time.
- A claim a killed worker left `sending` (past `STALE_CLAIM`) is sent once more, with the note that it
  may be a repeat; if that attempt is interrupted too, it is marked failed (never a third send).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from agent.tools.schedule_message import last_until, next_after
from gateway.config import RemindersSettings, Settings
from gateway.errors import SendError, SendGone, SendRejected
from gateway.metrics import Metrics
from gateway.platforms.base import ChatRef
from gateway.reply.posting import ChatPoster
from gateway.reply.wording import reminder_message, reminder_missed, task_instruction
from gateway.store import Store
from gateway.store.reminders import ClaimedOccurrence, ReminderRecord
from gateway.store.reminders.ledger import INTERRUPTED
from gateway.turn.reminder_tool import TASK_AUTHOR
from gateway.turn.tasks import ChatTasks

logger = logging.getLogger(__name__)

STALE_CLAIM = timedelta(seconds=60)
"""A claim older than this whose worker never closed it was interrupted (a send takes seconds)."""
LATE_AFTER = timedelta(seconds=60)
"""Sent later than this after its due time, a reminder says when it was due."""
MAX_SEND_TRIES = 5
"""A transient send failure leaves the occurrence due for the next ticks, this many claims at most."""


def reminders_every(settings: Settings) -> timedelta | None:
    """How often the ticker runs with these settings (None: reminders are off)."""
    if not settings.reminders.enabled:
        return None
    return timedelta(seconds=settings.reminders.tick_s)


def advance(record: ReminderRecord, now: datetime) -> tuple[datetime, datetime | None]:
    """The one occurrence to record now and the reminder's next due time (pure; `Advance`)."""
    due = record.next_due_at or now
    if record.rrule is None:
        return due, None
    tz = ZoneInfo(record.tz)
    latest = last_until(record.rrule, record.first_at, tz, now) or due
    return max(due, latest), next_after(record.rrule, record.first_at, tz, now)


class ReminderTicker:
    def __init__(
        self,
        *,
        store: Store,
        poster: ChatPoster,
        tasks: ChatTasks | None,
        settings: RemindersSettings,
        clock: Callable[[], datetime],
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.poster = poster
        self.tasks = tasks
        self.settings = settings
        self.clock = clock
        self.metrics = metrics
        self.platform_names = frozenset(adapter.name for adapter in poster.platforms)
        """A worker claims only what it can send: chats of another platform are another worker's."""

    async def tick(self) -> int:
        """One pass: record what fell due, claim and deliver it; returns the occurrences handled."""
        await self.store.advance_reminders(advance)
        claimed = await self.store.claim_occurrences(
            stale_before=self.clock() - STALE_CLAIM, platforms=self.platform_names
        )
        for occurrence in claimed:
            await self._handle(occurrence)
        return len(claimed)

    def _observe(self, outcome: str, late_s: float | None = None) -> None:
        if self.metrics is not None:
            self.metrics.observe_reminder(outcome, late_s)

    async def _handle(self, occ: ClaimedOccurrence) -> None:
        reminder = occ.reminder
        if occ.attempts == 1:
            self._observe("due")
        if occ.interrupted > 1:
            await self.store.finish_occurrence(occ.id, "failed", error=INTERRUPTED)
            logger.error("reminder %s due %s: interrupted twice, marked failed", reminder.id, occ.due_at)
            self._observe("failed")
            return
        interrupted = occ.interrupted == 1
        chat = await self.poster.where(reminder.chat_pk)
        if chat is None:
            await self.store.finish_occurrence(
                occ.id, "failed", error="the chat's platform does not run here"
            )
            self._observe("failed")
            return
        late = self.clock() - occ.due_at
        window = timedelta(hours=self.settings.late_window_h)
        try:
            if late > window:
                text = reminder_missed(reminder.text, occ.due_at, reminder.tz, self.settings.late_window_h)
                message_id = await self.poster.post(chat, reminder.chat_pk, text, keep=True)
                await self.store.finish_occurrence(occ.id, "missed", platform_message_id=message_id)
                logger.warning(
                    "reminder %s due %s missed (%.0f s late)", reminder.id, occ.due_at, late.total_seconds()
                )
                self._observe("missed")
                return
            late_since = occ.due_at if late > LATE_AFTER else None
            if reminder.kind == "task":
                message_id = await self._run_task(chat, reminder, occ)
            else:
                text = reminder_message(
                    reminder.text, late_since=late_since, tz=reminder.tz, interrupted=interrupted
                )
                message_id = await self.poster.post(chat, reminder.chat_pk, text, keep=True)
        except (SendGone, SendRejected) as exc:
            await self.store.finish_occurrence(occ.id, "failed", error=str(exc))
            logger.error("reminder %s to chat %s failed for good: %s", reminder.id, reminder.chat_pk, exc)
            self._observe("failed")
            return
        except SendError as exc:
            if occ.attempts >= MAX_SEND_TRIES:
                await self.store.finish_occurrence(occ.id, "failed", error=str(exc))
                self._observe("failed")
            else:  # transient: due again, picked up by a later tick
                await self.store.finish_occurrence(occ.id, "due", error=str(exc))
                self._observe("retried")
            logger.warning(
                "reminder %s to chat %s not sent (try %d): %s",
                reminder.id,
                reminder.chat_pk,
                occ.attempts,
                exc,
            )
            return
        late_s = late.total_seconds() if late_since is not None else None
        await self.store.finish_occurrence(occ.id, "delivered", platform_message_id=message_id, late_s=late_s)
        self._observe("delivered", late.total_seconds())
        logger.info(
            "reminder %s due %s delivered (%.1f s after)", reminder.id, occ.due_at, late.total_seconds()
        )

    async def _run_task(self, chat: ChatRef, reminder: ReminderRecord, occ: ClaimedOccurrence) -> str | None:
        """Store the task's instruction in the chat and start its turn; the turn's reply is the outbox's."""
        if self.tasks is None:
            raise SendRejected("scheduled tasks need the turn machinery, which this process does not run")
        text = task_instruction(reminder.text, occ.due_at, reminder.tz)
        await self.poster.record(reminder.chat_pk, "user", text, author=TASK_AUTHOR, needs_reply=True)
        self.tasks.schedule(chat, reminder.chat_pk)
        return None

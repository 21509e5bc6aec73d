"""The gateway's side of `schedule_message`: the chat's time zone, the per-chat limits, the ledger row,
and the confirmation the user reads (worded by `gateway/reply/wording.py`, posted by the gateway, not
left to the model). A scheduled task's own turn cannot schedule more: the tool stays in the chat's
list (taking it out would change the cached prefix of the chat's requests) and refuses there."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from agent.errors import ToolError
from agent.tools.registry import Tool
from agent.tools.schedule_message import ScheduleRequest, schedule_message_tool
from gateway.config import RemindersSettings
from gateway.errors import SendError
from gateway.reply.posting import ChatPoster
from gateway.reply.wording import local_time, reminder_limit, reminder_scheduled
from gateway.store import Store
from gateway.store.reminders import NewReminder

logger = logging.getLogger(__name__)

TASK_AUTHOR = "gateway:task"
"""The author name of a scheduled task's instruction stored in the chat (see `gateway/jobs/reminders.py`)."""


class ReminderDesk:
    """Per chat: its zone, and the `schedule_message` tool bound to it."""

    def __init__(
        self,
        *,
        store: Store,
        poster: ChatPoster | None,
        settings: RemindersSettings,
        clock: Callable[[], datetime],
    ) -> None:
        self.store = store
        self.poster = poster
        self.settings = settings
        self.clock = clock

    async def zone(self, chat_pk: int) -> ZoneInfo:
        return ZoneInfo(await self.store.chat_timezone(chat_pk) or self.settings.default_timezone)

    def tool(self, chat_pk: int) -> Tool:
        async def zone() -> ZoneInfo:
            return await self.zone(chat_pk)

        async def schedule(request: ScheduleRequest) -> str:
            return await self.schedule(chat_pk, request)

        return schedule_message_tool(
            schedule,
            clock=self.clock,
            zone=zone,
            min_repeat=timedelta(minutes=self.settings.min_repeat_minutes),
        )

    async def schedule(self, chat_pk: int, request: ScheduleRequest) -> str:
        """Record the request, post the confirmation; returns the tool's result for the model."""
        creator_id, creator_name = await self.store.latest_author(chat_pk)
        if creator_name == TASK_AUTHOR:
            raise ToolError("a scheduled task cannot schedule further messages")
        tz = (await self.zone(chat_pk)).key
        new = NewReminder(
            chat_pk=chat_pk,
            kind=request.kind,
            text=request.text,
            rrule=request.repeat,
            tz=tz,
            first_at=request.at,
            creator_id=creator_id,
            creator_name=creator_name,
        )
        record = await self.store.add_reminder(new, max_active=self.settings.max_active)
        if record is None:
            raise ToolError(reminder_limit(self.settings.max_active))
        confirmation = reminder_scheduled(
            record.id, record.kind, record.text, record.first_at, tz, record.rrule
        )
        shown = await self._confirm(chat_pk, confirmation)
        seen = "The user has been shown" if shown else "Tell the user exactly"
        return (
            f"Scheduled #{record.id} for {local_time(record.first_at, tz)} (chat time zone {tz}). "
            f'{seen}: "{confirmation}". Do not restate the time; /reminders lists it, '
            f"/reminders cancel {record.id} cancels it."
        )

    async def _confirm(self, chat_pk: int, text: str) -> bool:
        if self.poster is None:
            return False
        chat = await self.poster.where(chat_pk)
        if chat is None:
            return False
        try:
            await self.poster.post(chat, chat_pk, text, keep=False)
        except SendError as exc:
            logger.warning("reminder confirmation to chat %s not sent: %s", chat_pk, exc)
            return False
        return True

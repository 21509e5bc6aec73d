"""/reminders (list, cancel) and /timezone: a chat's scheduled messages and the zone they are read in.

A reminder can be cancelled by whoever it was set for (the author of the message that asked for it)
or an admin. The zone is per chat; times are shown in it and repeats are computed on its wall clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.commands.menu import CommandContext, Handler
from gateway.commands.stats_report import Line
from gateway.reply.wording import (
    reminder_cancelled,
    reminder_line,
    reminder_not_found,
    reminder_not_yours,
    reminders_list,
    timezone_set,
    timezone_unknown,
)
from gateway.store import Store

CANCEL_USAGE = "Usage: /reminders, or /reminders cancel <id> (the ids are in /reminders)."
TIMEZONE_USAGE = "Usage: /timezone <IANA name>, e.g. /timezone Europe/Berlin. Now: {tz}."


@dataclass
class ReminderHandlers:
    store: Store
    default_timezone: str
    clock: Callable[[], datetime]

    def handlers(self) -> dict[str, Handler]:
        return {"reminders": self.reminders, "timezone": self.timezone}

    async def _zone(self, chat_pk: int) -> str:
        return await self.store.chat_timezone(chat_pk) or self.default_timezone

    async def reminders(self, ctx: CommandContext) -> str:
        words = ctx.args.split()
        if not words:
            tz = await self._zone(ctx.chat_pk)
            pending = await self.store.pending_reminders(ctx.chat_pk)
            lines = [reminder_line(r.id, r.kind, r.text, r.next_due_at, tz, r.rrule) for r in pending]
            return reminders_list(lines, tz)
        if len(words) != 2 or words[0].lower() != "cancel" or not words[1].lstrip("#").isdigit():
            return CANCEL_USAGE
        reminder_id = int(words[1].lstrip("#"))
        record = await self.store.get_reminder(ctx.chat_pk, reminder_id)
        if record is None or record.state != "active":
            return reminder_not_found(reminder_id)
        mine = record.creator_id is None or record.creator_id == ctx.message.author.user_id
        if not (mine or ctx.is_admin):
            return reminder_not_yours(reminder_id, record.creator_name)
        if not await self.store.cancel_reminder(ctx.chat_pk, reminder_id):
            return reminder_not_found(reminder_id)
        return reminder_cancelled(reminder_id)

    async def timezone(self, ctx: CommandContext) -> str:
        name = ctx.args.strip()
        if not name:
            return TIMEZONE_USAGE.format(tz=await self._zone(ctx.chat_pk))
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            return timezone_unknown(name)
        await self.store.set_chat_timezone(ctx.chat_pk, zone.key)
        return timezone_set(zone.key, self.clock())


def reminder_stats(counts: dict[str, int]) -> list[Line]:
    """The `/stats` line: pending reminders, and how their due times went."""
    if not any(counts.values()):
        return []
    failed = counts.get("failed", 0)
    text = (
        f"{counts.get('pending', 0):,} pending, {counts.get('delivered', 0):,} delivered "
        f"({counts.get('late', 0):,} late), {counts.get('missed', 0):,} missed"
        + (f", {failed:,} failed" if failed else "")
    )
    return [Line("Reminders", text)]

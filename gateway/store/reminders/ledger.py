"""The reminders ledger: `reminders` (what and when next) and `reminder_occurrences` (one row per
reminder and due time, UNIQUE, so a due time exists once however many workers look).

Two steps, each one transaction, each reading only its partial index:
- `advance_reminders`: reminders whose `next_due_at` has come get their occurrence row, and their
  next due time (computed by the caller's pure `Advance`: a long outage collapses to one catch-up);
- `claim_occurrences`: due rows (and rows a killed worker left `sending` past the stale age) move to
  `sending` with `attempts + 1`. On Postgres the rows are locked `FOR UPDATE SKIP LOCKED`, so two
  workers never claim the same row; SQLite runs one worker (its writes serialise anyway).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, and_, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.db import StoreBase
from gateway.store.rows import chats, clean_text, messages
from gateway.store.tables import ChatTimezone, Reminder, ReminderOccurrence

reminders = cast(Table, Reminder.__table__)
occurrences = cast(Table, ReminderOccurrence.__table__)
chat_timezones = cast(Table, ChatTimezone.__table__)
ERROR_MAX_CHARS = 500
INTERRUPTED = "interrupted: the worker that claimed it stopped before it was marked"
BATCH = 50


@dataclass(frozen=True, slots=True)
class NewReminder:
    chat_pk: int
    kind: str
    text: str
    rrule: str | None
    tz: str
    first_at: datetime
    creator_id: str | None = None
    creator_name: str | None = None


@dataclass(frozen=True, slots=True)
class ReminderRecord:
    id: int
    chat_pk: int
    kind: str
    text: str
    rrule: str | None
    tz: str
    first_at: datetime
    next_due_at: datetime | None
    state: str
    creator_id: str | None
    creator_name: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ClaimedOccurrence:
    """An occurrence this worker now holds (`sending`), with its reminder."""

    id: int
    due_at: datetime
    attempts: int
    """Claims so far, this one included."""
    reminder: ReminderRecord
    interrupted: int = 0
    """How many claims before this one were left `sending` by a worker that stopped (0, 1 or 2)."""


Advance = Callable[[ReminderRecord, datetime], tuple[datetime, datetime | None]]
"""(reminder, now) -> (the due time of the one occurrence to record now, the next due time or None)."""


def _reminder(row: Any) -> ReminderRecord:
    return ReminderRecord(
        id=row.id,
        chat_pk=row.chat_pk,
        kind=row.kind,
        text=row.text,
        rrule=row.rrule,
        tz=row.tz,
        first_at=row.first_at,
        next_due_at=row.next_due_at,
        state=row.state,
        creator_id=row.creator_id,
        creator_name=row.creator_name,
        created_at=row.created_at,
    )


class ReminderMethods(StoreBase):
    """The ledger's queries, mixed into `Store`."""

    def _locked(self, query: Any) -> Any:
        return query.with_for_update(skip_locked=True) if self.dialect == "postgresql" else query

    async def add_reminder(self, new: NewReminder, *, max_active: int) -> ReminderRecord | None:
        """Record a reminder; None when the chat already has `max_active` pending ones."""
        now = self.now()
        async with self._tx("add_reminder") as conn:
            active = await self._active_count(conn, new.chat_pk)
            if active >= max_active:
                return None
            values = {
                "chat_pk": new.chat_pk,
                "creator_id": new.creator_id,
                "creator_name": new.creator_name,
                "kind": new.kind,
                "text": clean_text(new.text),
                "rrule": new.rrule,
                "tz": new.tz,
                "first_at": new.first_at,
                "next_due_at": new.first_at,
                "state": "active",
                "created_at": now,
            }
            row = (await conn.execute(reminders.insert().values(**values).returning(reminders))).one()
            return _reminder(row)

    async def _active_count(self, conn: AsyncConnection, chat_pk: int) -> int:
        query = select(func.count()).where(reminders.c.chat_pk == chat_pk, reminders.c.state == "active")
        return int((await conn.execute(query)).scalar_one())

    async def pending_reminders(self, chat_pk: int) -> list[ReminderRecord]:
        """The chat's active reminders, soonest first."""
        query = (
            select(reminders)
            .where(reminders.c.chat_pk == chat_pk, reminders.c.state == "active")
            .order_by(reminders.c.next_due_at, reminders.c.id)
        )
        async with self._tx("pending_reminders") as conn:
            return [_reminder(r) for r in (await conn.execute(query)).all()]

    async def upcoming_reminders(self, *, until: datetime, limit: int = 20) -> list[ReminderRecord]:
        """Every chat's active reminders due by `until` (overdue ones included), soonest first."""
        query = (
            select(reminders)
            .where(reminders.c.state == "active", reminders.c.next_due_at <= until)
            .order_by(reminders.c.next_due_at, reminders.c.id)
            .limit(limit)
        )
        async with self._tx("upcoming_reminders") as conn:
            return [_reminder(r) for r in (await conn.execute(query)).all()]

    async def get_reminder(self, chat_pk: int, reminder_id: int) -> ReminderRecord | None:
        query = select(reminders).where(reminders.c.id == reminder_id, reminders.c.chat_pk == chat_pk)
        async with self._tx("get_reminder") as conn:
            row = (await conn.execute(query)).one_or_none()
        return None if row is None else _reminder(row)

    async def cancel_reminder(self, chat_pk: int, reminder_id: int) -> bool:
        """Cancel an active reminder of the chat and its occurrences not yet claimed; False if none."""
        async with self._tx("cancel_reminder") as conn:
            done = await conn.execute(
                update(reminders)
                .where(
                    reminders.c.id == reminder_id,
                    reminders.c.chat_pk == chat_pk,
                    reminders.c.state == "active",
                )
                .values(state="cancelled", next_due_at=None)
            )
            if done.rowcount == 0:
                return False
            await conn.execute(
                delete(occurrences).where(
                    occurrences.c.reminder_id == reminder_id, occurrences.c.state == "due"
                )
            )
            return True

    async def chat_timezone(self, chat_pk: int) -> str | None:
        query = select(chat_timezones.c.tz).where(chat_timezones.c.chat_pk == chat_pk)
        async with self._tx("chat_timezone") as conn:
            value = (await conn.execute(query)).scalar_one_or_none()
        return None if value is None else str(value)

    async def set_chat_timezone(self, chat_pk: int, tz: str) -> None:
        values = {"tz": tz, "updated_at": self.now()}
        stmt = self._insert(chat_timezones).values(chat_pk=chat_pk, **values)
        async with self._tx("set_chat_timezone") as conn:
            await conn.execute(stmt.on_conflict_do_update(index_elements=["chat_pk"], set_=values))

    # The ticker ----------------------------------------------------------------------------------

    async def advance_reminders(self, advance: Advance, *, batch: int = BATCH) -> int:
        """Record the occurrence of each reminder that fell due and move it to its next due time;
        returns how many reminders moved."""
        now = self.now()
        query = self._locked(
            select(reminders)
            .where(reminders.c.state == "active", reminders.c.next_due_at <= now)
            .order_by(reminders.c.next_due_at)
            .limit(batch)
        )
        async with self._tx("advance_reminders") as conn:
            rows = [_reminder(r) for r in (await conn.execute(query)).all()]
            for record in rows:
                due, following = advance(record, now)
                values = {"reminder_id": record.id, "due_at": due, "state": "due", "attempts": 0}
                await conn.execute(
                    self._insert(occurrences)
                    .values(**values, updated_at=now)
                    .on_conflict_do_nothing(index_elements=["reminder_id", "due_at"])
                )
                await conn.execute(
                    update(reminders)
                    .where(reminders.c.id == record.id)
                    .values(next_due_at=following, state="active" if following is not None else "done")
                )
        return len(rows)

    async def claim_occurrences(
        self, *, stale_before: datetime, platforms: Collection[str] | None = None, batch: int = BATCH
    ) -> list[ClaimedOccurrence]:
        """Claim due occurrences, and those left `sending` since before `stale_before`; with
        `platforms`, only those of chats on these platforms (the ones this worker can send to)."""
        now = self.now()
        o = occurrences
        query = select(o.c.id, o.c.state, o.c.error).where(
            o.c.due_at <= now,
            or_(o.c.state == "due", and_(o.c.state == "sending", o.c.claimed_at < stale_before)),
        )
        if platforms is not None:
            query = (
                query.join(reminders, reminders.c.id == o.c.reminder_id)
                .join(chats, chats.c.id == reminders.c.chat_pk)
                .where(chats.c.platform.in_(list(platforms)))
            )
        query = self._locked(query.order_by(o.c.due_at).limit(batch))
        async with self._tx("claim_occurrences") as conn:
            rows = (await conn.execute(query)).all()
            if not rows:
                return []
            ids = [r.id for r in rows]
            stale = {r.id: 2 if r.error == INTERRUPTED else 1 for r in rows if r.state == "sending"}
            await conn.execute(
                update(o)
                .where(o.c.id.in_(ids))
                .values(state="sending", attempts=o.c.attempts + 1, claimed_at=now, updated_at=now)
            )
            if stale:
                await conn.execute(update(o).where(o.c.id.in_(list(stale))).values(error=INTERRUPTED))
            joined = (
                select(o.c.id.label("occurrence_id"), o.c.due_at, o.c.attempts, reminders)
                .join(reminders, reminders.c.id == o.c.reminder_id)
                .where(o.c.id.in_(ids))
                .order_by(o.c.due_at)
            )
            return [
                ClaimedOccurrence(
                    row.occurrence_id,
                    row.due_at,
                    row.attempts,
                    _reminder(row),
                    interrupted=stale.get(row.occurrence_id, 0),
                )
                for row in (await conn.execute(joined)).all()
            ]

    async def finish_occurrence(
        self,
        occurrence_id: int,
        state: str,
        *,
        platform_message_id: str | None = None,
        late_s: float | None = None,
        error: str | None = None,
    ) -> None:
        """Close a claimed occurrence: delivered, missed or failed (or back to due to try again)."""
        values = {
            "state": state,
            "platform_message_id": platform_message_id,
            "late_s": late_s,
            "error": error[:ERROR_MAX_CHARS] if error else None,
            "updated_at": self.now(),
        }
        async with self._tx("finish_occurrence") as conn:
            await conn.execute(update(occurrences).where(occurrences.c.id == occurrence_id).values(**values))

    async def occurrence_states(self, reminder_id: int) -> list[tuple[datetime, str, str | None]]:
        """(due time, state, platform message id) of a reminder's occurrences, oldest first."""
        o = occurrences
        query = select(o.c.due_at, o.c.state, o.c.platform_message_id).where(o.c.reminder_id == reminder_id)
        async with self._tx("occurrence_states") as conn:
            rows = (await conn.execute(query.order_by(o.c.due_at))).all()
        return [(r.due_at, r.state, r.platform_message_id) for r in rows]

    async def reminder_counts(self, chat_pk: int | None = None) -> dict[str, int]:
        """For `/stats`: pending reminders, and occurrences delivered, late, missed, failed."""
        pending = select(func.count()).where(reminders.c.state == "active")
        o = occurrences
        by_state = select(o.c.state, func.count(), func.count(o.c.late_s)).group_by(o.c.state)
        if chat_pk is not None:
            pending = pending.where(reminders.c.chat_pk == chat_pk)
            by_state = by_state.join(reminders, reminders.c.id == o.c.reminder_id).where(
                reminders.c.chat_pk == chat_pk
            )
        async with self._tx("reminder_counts") as conn:
            counts = {"pending": int((await conn.execute(pending)).scalar_one())}
            for state, total, late in (await conn.execute(by_state)).all():
                counts[str(state)] = int(total)
                if state == "delivered":
                    counts["late"] = int(late)
        return counts

    async def latest_author(self, chat_pk: int) -> tuple[str | None, str | None]:
        """(id, name) of the author of the chat's newest message that asked for an answer: whom a
        scheduling turn answers (a scheduled task's instruction has a name and no id)."""
        query = (
            select(messages.c.author_id, messages.c.author_name)
            .where(messages.c.chat_pk == chat_pk, messages.c.role == "user", messages.c.needs_reply)
            .order_by(messages.c.id.desc())
            .limit(1)
        )
        async with self._tx("latest_author") as conn:
            row = (await conn.execute(query)).one_or_none()
        return (None, None) if row is None else (row.author_id, row.author_name)

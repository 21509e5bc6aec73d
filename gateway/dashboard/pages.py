"""The dashboard's pages: read through the store, shape with `views`, render a template."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from aiohttp import web

from agent.spending.periods import SpendFor
from gateway.commands.context_breakdown import Breakdown
from gateway.commands.context_size import ContextSize
from gateway.dashboard import views
from gateway.spending.budget import Budget
from gateway.store import ChatRecord, PinRecord, SessionRecord
from gateway.store.dashboard import DashboardAudit, DashboardReads
from gateway.store.reminders import ReminderMethods

ACTIVE_WITHIN = timedelta(hours=24)
"""A chat counts as active on the overview when a message arrived within this long."""
DUE_WITHIN = timedelta(hours=24)
"""The overview lists the reminders due within this long (and any overdue)."""


@dataclass(frozen=True, slots=True)
class Page:
    """A template and what it shows; `server.Dashboard` renders it."""

    template: str
    context: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Figures:
    """What the pages measure with: the owner of the context size, the window and its thresholds."""

    context_size: Callable[[SessionRecord], ContextSize]
    breakdown: Callable[[SessionRecord, int], Awaitable[Breakdown]]
    """What fills a session's window by part (`AdminHandlers.window_breakdown`)."""
    compressor_threshold: float
    hygiene_threshold: float
    timezone: str


@dataclass
class Pages:
    reads: DashboardReads
    audit: DashboardAudit
    pins: Callable[[int], Awaitable[list[PinRecord]]]
    """`Store.pins`: a chat's pinned facts."""
    figures: Figures
    budget: Budget | None
    clock: Callable[[], datetime]
    reminders: ReminderMethods
    """The reminders ledger: what is due, a chat's pending ones and its time zone."""
    reminder_timezone: str
    """A chat's zone until `/timezone` sets one (`reminders.default_timezone`)."""
    worker: str = ""
    """This process's worker name, listed even before it has run a job or taken a lease."""

    async def overview(self, request: web.Request) -> Page:
        now = self.clock()
        day, month = views.period_starts(now, self.figures.timezone)
        overview = await self.reads.overview(
            day_start=day, month_start=month, active_since=now - ACTIVE_WITHIN
        )
        standings = await self.budget.standing(SpendFor()) if self.budget is not None else []
        return Page(
            "overview.html",
            {
                "o": overview,
                "today": views.usd(overview.spent_today_usd),
                "month": views.usd(overview.spent_month_usd),
                "caps": views.cap_lines(standings),
                "cache_share": views.cache_read_share(overview),
                "workers": [
                    (w, views.ago(w.last_job_at, now))
                    for w in views.with_worker(overview.workers, self.worker)
                ],
                "reminders_due": await self._reminders_due(now),
            },
        )

    async def chats(self, request: web.Request) -> Page:
        now = self.clock()
        day, _ = views.period_starts(now, self.figures.timezone)
        rows = await self.reads.chats(day_start=day)
        lines = [
            views.chat_line(row, self.figures.context_size(row.session) if row.session else None, now)
            for row in rows
        ]
        return Page("chats.html", {"chats": lines})

    async def chat(self, request: web.Request) -> Page:
        chat_pk = _chat_pk(request)
        row = await self.reads.chat(chat_pk)
        if row is None:
            raise web.HTTPNotFound(text="no such chat")
        now = self.clock()
        calls = await self.reads.calls(chat_pk, since=views.chart_since(now))
        events = await self.reads.compactions(chat_pk)
        size = self.figures.context_size(row.session) if row.session else None
        window = size.window if size is not None else 0
        pins = await self.pins(chat_pk)
        parts = (
            views.window_parts(await self.figures.breakdown(row.session, chat_pk), size.tokens)
            if row.session is not None and size is not None
            else []
        )
        return Page(
            "chat.html",
            {
                "chat": row.chat,
                "name": views.chat_name(row.chat, row.person),
                "size": size,
                "fill": f"{views.fill_percent(size)}%" if size is not None else "0%",
                "events": events,
                "pins": pins,
                "parts": parts,
                "days": views.by_day(calls, self.figures.timezone),
                "messages": await self.reads.recent_messages(chat_pk),
                "audit": await self.audit.for_chat(chat_pk),
                "reminders": await self._chat_reminders(row.chat, now),
                "chart": views.chart_data(
                    calls,
                    events,
                    window=window,
                    compressor_threshold=self.figures.compressor_threshold,
                    hygiene_threshold=self.figures.hygiene_threshold,
                ),
                "now": now,
            },
        )

    async def _reminders_due(self, now: datetime) -> list[views.ReminderView]:
        due = await self.reminders.upcoming_reminders(until=now + DUE_WITHIN)
        chats = await self.reads.chats_by_pk({r.chat_pk for r in due})
        return views.reminder_views(due, chats, now)

    async def _chat_reminders(self, chat: ChatRecord, now: datetime) -> list[views.ReminderView]:
        tz = await self.reminders.chat_timezone(chat.id) or self.reminder_timezone
        pending = await self.reminders.pending_reminders(chat.id)
        return views.reminder_views(pending, {chat.id: chat}, now, tz)


def _chat_pk(request: web.Request) -> int:
    raw = request.match_info.get("chat_pk", "")
    if not raw.isdigit():
        raise web.HTTPNotFound(text="no such chat")
    return int(raw)

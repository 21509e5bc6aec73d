"""Rows -> what the templates show: pure functions, no I/O (the numbers in words, the chart's data).

Everything here is data; escaping is the templates' (Jinja2 with autoescape), and the chart's data goes
into the page as JSON read by a static script, never as code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from gateway.commands.context_breakdown import Breakdown, split
from gateway.commands.context_size import ContextSize
from gateway.reply.wording import reminder_line
from gateway.spending.budget import Standing
from gateway.store.dashboard import CallPoint, ChatRow, CompactionEvent, Overview, WorkerLine
from gateway.store.records import ChatRecord
from gateway.store.reminders import ReminderRecord


def chat_name(chat: ChatRecord, person: str | None = None) -> str:
    """A group by its title exactly as the platform gave it; a private chat by the person's name, else
    its id. Shown as text (the template escapes it)."""
    if chat.title:
        return chat.title
    if person:
        return person
    return f"{chat.platform} {chat.kind} {chat.chat_id}"


def fill_percent(size: ContextSize) -> int:
    """The context's share of the planned window, in whole percent (what the chat list shows)."""
    if size.window <= 0:
        return 0
    return round(100 * size.tokens / size.window)


def period_starts(now: datetime, timezone: str) -> tuple[datetime, datetime]:
    """The start of the day and of the month that `now` falls in, in the spending caps' time zone."""
    zone = ZoneInfo(timezone)
    local = now.astimezone(zone)
    day = datetime(local.year, local.month, local.day, tzinfo=zone)
    month = datetime(local.year, local.month, 1, tzinfo=zone)
    return day, month


def usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:,.4f}"


def ago(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "never"
    seconds = max(0, int((now - at).total_seconds()))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    if seconds < 36 * 3600:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


@dataclass(frozen=True, slots=True)
class CapLine:
    label: str
    spent: str
    cap: str
    percent: int


def cap_lines(standings: Sequence[Standing]) -> list[CapLine]:
    """The bot's capped budgets with what is spent (and held by calls in flight)."""
    shown = []
    for s in standings:
        used = s.spent_usd + s.held_usd
        shown.append(
            CapLine(
                label=f"bot {'daily' if s.limit.period_kind == 'day' else 'monthly'} cap ({s.limit.period})",
                spent=usd(used),
                cap=usd(s.limit.cap_usd),
                percent=round(100 * used / s.limit.cap_usd) if s.limit.cap_usd > 0 else 0,
            )
        )
    return shown


def cache_read_share(overview: Overview) -> str:
    if overview.prompt_tokens_today == 0:
        return "no calls today"
    return f"{100 * overview.cache_read_tokens_today / overview.prompt_tokens_today:.0f}%"


@dataclass(frozen=True, slots=True)
class ChatLine:
    id: int
    name: str
    kind: str
    platform: str
    fill: str
    cost_today: str
    last_activity: str


def chat_line(row: ChatRow, size: ContextSize | None, now: datetime) -> ChatLine:
    return ChatLine(
        id=row.chat.id,
        name=chat_name(row.chat, row.person),
        kind=row.chat.kind,
        platform=row.chat.platform,
        fill=f"{fill_percent(size)}%" if size is not None else "0%",
        cost_today=usd(row.cost_today_usd),
        last_activity=ago(row.last_activity_at, now),
    )


@dataclass(frozen=True, slots=True)
class DayLine:
    day: date
    calls: int
    cost: str
    prompt_tokens: int
    cache_read: str
    web_lookups: int = 0


def by_day(calls: Sequence[CallPoint], timezone: str) -> list[DayLine]:
    """Cost and cache figures per local day, newest first."""
    zone = ZoneInfo(timezone)
    days: dict[date, list[CallPoint]] = {}
    for call in calls:
        days.setdefault(call.at.astimezone(zone).date(), []).append(call)
    lines = []
    for day in sorted(days, reverse=True):
        group = days[day]
        prompt = sum(c.prompt_tokens for c in group)
        read = sum(c.cache_read_tokens for c in group)
        lines.append(
            DayLine(
                day=day,
                calls=len(group),
                cost=usd(sum(c.cost_usd for c in group)),
                prompt_tokens=prompt,
                cache_read=f"{100 * read / prompt:.0f}%" if prompt else "-",
                web_lookups=sum(c.web_lookups for c in group),
            )
        )
    return lines


def chart_data(
    calls: Sequence[CallPoint],
    events: Sequence[CompactionEvent],
    *,
    window: int,
    compressor_threshold: float,
    hygiene_threshold: float,
) -> dict[str, object]:
    """uPlot's aligned data: x (unix seconds), the context size of each reply call, a marker at each
    compaction (its size before), and the two thresholds as flat lines."""
    points: dict[int, list[int | None]] = {}
    for call in calls:
        if call.purpose != "reply":
            continue
        points.setdefault(int(call.at.timestamp()), [None, None])[0] = call.prompt_tokens
    for event in events:
        if event.outcome == "aborted":
            continue
        x = int(event.at.timestamp())
        row = points.setdefault(x, [None, None])
        row[1] = event.tokens_before
    xs = sorted(points)
    return {
        "x": xs,
        "context": [points[x][0] for x in xs],
        "compactions": [points[x][1] for x in xs],
        "compressor": [round(window * compressor_threshold)] * len(xs),
        "hygiene": [round(window * hygiene_threshold)] * len(xs),
        "window": window,
    }


def chart_since(now: datetime) -> datetime:
    """How far back a chat's page reads its calls (the chart and the daily figures)."""
    return now - timedelta(days=14)


@dataclass(frozen=True, slots=True)
class PartLine:
    label: str
    tokens: int
    percent: int


def window_parts(b: Breakdown, context_tokens: int) -> list[PartLine]:
    """The context size split by part as `/stats detail` splits it (in proportion to local estimates)."""
    shown = split(b.parts, context_tokens)
    return [
        PartLine(p.label, p.tokens, round(100 * p.tokens / context_tokens) if context_tokens else 0)
        for p in shown
    ]


def with_worker(workers: Sequence[WorkerLine], this: str) -> list[WorkerLine]:
    """The fleet's workers, this one first (added when it has neither run a job nor taken a lease)."""
    if not this or any(w.name == this for w in workers):
        return sorted(workers, key=lambda w: w.name != this)
    return [WorkerLine(this, None, None), *workers]


@dataclass(frozen=True, slots=True)
class ReminderView:
    """A pending reminder as a page shows it: its chat (on the overview) and the `/reminders` line."""

    chat_pk: int
    chat: str
    line: str
    overdue: bool


def reminder_views(
    records: Sequence[ReminderRecord], chats: dict[int, ChatRecord], now: datetime, tz: str | None = None
) -> list[ReminderView]:
    """Each reminder in the words `/reminders` uses, its time in `tz` (a chat's zone) or else the zone
    it was set in; a due time already past is marked overdue (the ticker has not sent it yet)."""
    views = []
    for r in records:
        chat = chats.get(r.chat_pk)
        line = reminder_line(r.id, r.kind, r.text, r.next_due_at, tz or r.tz, r.rrule)
        overdue = r.next_due_at is not None and r.next_due_at < now
        views.append(ReminderView(r.chat_pk, chat_name(chat) if chat else f"chat {r.chat_pk}", line, overdue))
    return views

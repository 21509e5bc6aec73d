"""Who a model call is for, the caps that apply to it, and the day and month each cap counts in.

A cap is a USD limit on one scope (the bot, one user, one chat) over one period (a day or a month),
with the periods' boundaries in the operator's time zone. Each capped (scope, period) pair is one line
of the ledger, named by `Limit.scope` and `Limit.period`; a cap of 0 is no cap, and nothing is counted
for it (what was spent is in the usage log either way).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

PeriodKind = Literal["day", "month"]
ScopeKind = Literal["bot", "user", "chat"]


@dataclass(frozen=True, slots=True)
class SpendFor:
    """Who a call is for: the chat it serves and the user whose message it answers (None: a call for
    no chat, such as the start-up check, or a background call for no one user)."""

    chat_pk: int | None = None
    user: str | None = None
    """`platform:user_id` of the sender."""


@dataclass(frozen=True, slots=True)
class Limit:
    """One ledger line a call counts toward, with its cap (0: counted, not capped)."""

    kind: ScopeKind
    scope: str
    period_kind: PeriodKind
    period: str
    cap_usd: float
    resets_at: datetime

    @property
    def capped(self) -> bool:
        return self.cap_usd > 0

    @property
    def name(self) -> str:
        """How the budget is named to people: "this chat's daily budget"."""
        owner = {"bot": "the bot's", "user": "your", "chat": "this chat's"}[self.kind]
        return f"{owner} {'daily' if self.period_kind == 'day' else 'monthly'} budget"


@dataclass(frozen=True, slots=True)
class Caps:
    """The operator's caps in USD (0 disables each) and the zone their days and months are in."""

    bot_day: float = 0.0
    bot_month: float = 0.0
    user_day: float = 0.0
    chat_day: float = 0.0
    chat_month: float = 0.0
    timezone: str = "UTC"
    warn_share: float = 0.8

    @property
    def any(self) -> bool:
        return any(
            c > 0 for c in (self.bot_day, self.bot_month, self.user_day, self.chat_day, self.chat_month)
        )

    def limits(self, who: SpendFor, now: datetime) -> list[Limit]:
        """The capped ledger lines a call for `who` at `now` counts toward, in a fixed order (the order
        rows are locked in, so two workers never wait on each other crosswise)."""
        day, month = period_keys(now, self.timezone)
        day_end, month_end = period_ends(now, self.timezone)
        lines = [
            Limit("bot", "bot", "day", day, self.bot_day, day_end),
            Limit("bot", "bot", "month", month, self.bot_month, month_end),
        ]
        if who.chat_pk is not None:
            chat = f"chat:{who.chat_pk}"
            lines += [
                Limit("chat", chat, "day", day, self.chat_day, day_end),
                Limit("chat", chat, "month", month, self.chat_month, month_end),
            ]
        if who.user is not None:
            lines.append(Limit("user", f"user:{who.user}", "day", day, self.user_day, day_end))
        return sorted((line for line in lines if line.capped), key=lambda line: (line.scope, line.period))


def period_keys(now: datetime, timezone: str) -> tuple[str, str]:
    """The day (`2026-12-06`) and month (`2026-12`) that `now` falls in, in `timezone`."""
    local = now.astimezone(ZoneInfo(timezone))
    return local.strftime("%Y-%m-%d"), local.strftime("%Y-%m")


def period_ends(now: datetime, timezone: str) -> tuple[datetime, datetime]:
    """When the day and the month that `now` falls in end (the next local midnight, the first of the
    next month), as aware datetimes in `timezone` (daylight-saving changes included)."""
    zone = ZoneInfo(timezone)
    local = now.astimezone(zone)
    next_day = (local.replace(tzinfo=None) + timedelta(days=1)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    year, month = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    next_month = datetime(year, month, 1)
    return next_day.replace(tzinfo=zone), next_month.replace(tzinfo=zone)

"""Whether a message that asks for an answer gets one now: its sender's rate, its chat's daily budget.

A refused message is still stored; the sender is told why (the refusal returned here) and the
message costs no model call.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gateway.platforms.base import IncomingMessage
from gateway.reply.wording import RATE_LIMITED, daily_budget_spent
from gateway.store import Store


@dataclass
class RateLimiter:
    """Sliding one-minute window per (platform, user)."""

    per_minute: int
    clock: Callable[[], float] = time.monotonic
    _hits: dict[tuple[str, str], deque[float]] = field(default_factory=dict)

    def allow(self, platform: str, user_id: str) -> bool:
        now = self.clock()
        q = self._hits.setdefault((platform, user_id), deque())
        while q and now - q[0] > 60.0:
            q.popleft()
        if len(q) >= self.per_minute:
            return False
        q.append(now)
        return True


class Admission:
    """The abuse limits (`limits.user_messages_per_minute`, `limits.chat_daily_budget_usd`)."""

    def __init__(
        self,
        *,
        store: Store,
        rate_limiter: RateLimiter,
        daily_budget_usd: float,
        clock: Callable[[], datetime],
    ) -> None:
        self.store = store
        self.rate_limiter = rate_limiter
        self.daily_budget_usd = daily_budget_usd
        self.clock = clock

    def over_rate(self, msg: IncomingMessage) -> str | None:
        """Count the message against its sender's minute; the refusal when that minute is full."""
        if self.rate_limiter.allow(msg.chat.platform, msg.author.user_id):
            return None
        return RATE_LIMITED

    async def over_budget(self, chat_pk: int) -> str | None:
        """The refusal when the chat spent its budget in the last 24 hours (0 disables the budget)."""
        if self.daily_budget_usd <= 0:
            return None
        spent = await self.store.cost_since(chat_pk, self.clock() - timedelta(days=1))
        if spent < self.daily_budget_usd:
            return None
        return daily_budget_spent(self.daily_budget_usd)

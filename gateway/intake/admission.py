"""Whether a message that asks for an answer gets one now: its sender's rate, the budgets it spends from.

A refused message is still stored; the sender is told why (the refusal returned here) and the
message costs no model call.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gateway.platforms.base import IncomingMessage
from gateway.reply.wording import RATE_LIMITED, budget_spent
from gateway.spending.budget import Budget, spender


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
    """The abuse limits (`limits.user_messages_per_minute`) and the spending caps at the door."""

    def __init__(
        self,
        *,
        rate_limiter: RateLimiter,
        budget: Budget | None,
        answer_after_reset: bool,
        clock: Callable[[], datetime],
    ) -> None:
        self.rate_limiter = rate_limiter
        self.budget = budget
        self.answer_after_reset = answer_after_reset
        self.clock = clock

    def over_rate(self, msg: IncomingMessage) -> str | None:
        """Count the message against its sender's minute; the refusal when that minute is full."""
        if self.rate_limiter.allow(msg.chat.platform, msg.author.user_id):
            return None
        return RATE_LIMITED

    def over_budget(self, msg: IncomingMessage, chat_pk: int) -> str | None:
        """The refusal when a budget the message would spend from (the bot's, the sender's, the chat's)
        is spent: which one and when it resets."""
        if self.budget is None:
            return None
        spent = self.budget.known_spent(spender(msg, chat_pk))
        if spent is None:
            return None
        return budget_spent(spent, self.clock(), answer_after_reset=self.answer_after_reset)

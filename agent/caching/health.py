"""Prompt-cache health of one chat, from the usage the API reports: hit ratios and thrash detection.

A call is a *warm miss* when it resent a marked prefix long enough to be cached (at least the model's
minimum), the previous call also did and came within that call's TTL, and yet nothing was read from
cache. Three warm misses in a row mean the prefix is not stable (a timestamp in the system prompt,
changing tools, misplaced markers): the chat is *thrashing* and a warning is logged once.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from agent.usage import Usage

logger = logging.getLogger(__name__)

RECENT_CALLS: Final = 10
THRASH_STREAK: Final = 3


@dataclass(frozen=True, slots=True)
class CallSample:
    """What one call tells about the cache (JSON-serialisable)."""

    at: float
    """Seconds since the epoch (any monotonic-enough clock the caller uses consistently)."""
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cacheable_prefix_sent: bool
    ttl_seconds: float


def _ratio(read: int, total: int) -> float | None:
    return read / total if total > 0 else None


class CacheHealth:
    """Per-chat cache statistics: feed `record()` after each call; persist with `to_dict()`."""

    def __init__(self, chat_key: str) -> None:
        self.chat_key = chat_key
        self.recent: deque[CallSample] = deque(maxlen=RECENT_CALLS)
        self.calls = 0
        self.input_tokens = 0
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self.warm_miss_streak = 0
        self.thrash_events = 0
        self.last_miss_reason: str | None = None
        self._last: CallSample | None = None

    def record(
        self,
        usage: Usage,
        *,
        cacheable_prefix_sent: bool,
        at: float,
        ttl_seconds: float,
        miss_reason: str | None = None,
        missed_tokens: int = 0,
    ) -> CallSample:
        """Account for one call. `cacheable_prefix_sent`: a marked prefix >= the model minimum was sent;
        `miss_reason`: where the API's cache diagnostics say the prompt diverged from the previous one."""
        call = CallSample(
            at=at,
            input_tokens=usage.input_tokens,
            cache_read_tokens=usage.cache_read_input_tokens,
            cache_write_tokens=usage.cache_creation_input_tokens,
            cacheable_prefix_sent=cacheable_prefix_sent,
            ttl_seconds=ttl_seconds,
        )
        previous = self._last
        warm = (
            previous is not None
            and previous.cacheable_prefix_sent
            and 0 <= at - previous.at <= previous.ttl_seconds
        )
        was_thrashing = self.thrashing
        if cacheable_prefix_sent and warm and call.cache_read_tokens == 0:
            self.warm_miss_streak += 1
        else:
            self.warm_miss_streak = 0
        if miss_reason is not None:
            self.last_miss_reason = miss_reason
        if self.thrashing and not was_thrashing:
            self.thrash_events += 1
            logger.warning(
                "prompt cache thrashing in %s: %d calls in a row within the TTL read nothing from "
                "cache although a cacheable prefix was resent (%s)",
                _where(self.chat_key),
                self.warm_miss_streak,
                _explanation(miss_reason, missed_tokens),
            )
        self.calls += 1
        self.input_tokens += call.input_tokens
        self.cache_read_tokens += call.cache_read_tokens
        self.cache_write_tokens += call.cache_write_tokens
        self.recent.append(call)
        self._last = call
        return call

    @property
    def thrashing(self) -> bool:
        return self.warm_miss_streak >= THRASH_STREAK

    @property
    def lifetime_hit_ratio(self) -> float | None:
        """cache_read / (input + cache_read + cache_write) over every call; None before any prompt."""
        total = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return _ratio(self.cache_read_tokens, total)

    @property
    def recent_hit_ratio(self) -> float | None:
        """The same ratio over the last 10 calls."""
        read = sum(c.cache_read_tokens for c in self.recent)
        total = sum(c.input_tokens + c.cache_read_tokens + c.cache_write_tokens for c in self.recent)
        return _ratio(read, total)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chat_key": self.chat_key,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "warm_miss_streak": self.warm_miss_streak,
            "thrash_events": self.thrash_events,
            "last_miss_reason": self.last_miss_reason,
            "recent": [asdict(c) for c in self.recent],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CacheHealth:
        health = cls(str(data["chat_key"]))
        health.calls = int(data.get("calls", 0))
        health.input_tokens = int(data.get("input_tokens", 0))
        health.cache_read_tokens = int(data.get("cache_read_tokens", 0))
        health.cache_write_tokens = int(data.get("cache_write_tokens", 0))
        health.warm_miss_streak = int(data.get("warm_miss_streak", 0))
        health.thrash_events = int(data.get("thrash_events", 0))
        reason = data.get("last_miss_reason")
        health.last_miss_reason = str(reason) if reason is not None else None
        for raw in data.get("recent", []):
            health.recent.append(CallSample(**raw))
        health._last = health.recent[-1] if health.recent else None
        return health


_REASONS = {
    "model_changed": "the model changed",
    "system_changed": "the system prompt changed",
    "tools_changed": "the tool definitions changed",
    "messages_changed": "an earlier message changed instead of messages being appended",
    "previous_message_not_found": "the API no longer knows the previous request",
    "unavailable": "the API could not compare the requests",
}


def _explanation(reason: str | None, missed_tokens: int) -> str:
    """The API's cache diagnostics quoted when it gave a reason; otherwise the usual suspects."""
    if reason is None:
        return "no reason from the API; is the system prompt or tool list changing?"
    text = _REASONS.get(reason, reason)
    return f"the API's cache diagnostics say {reason}: {text}, about {missed_tokens:,} tokens not read"


def _where(chat_key: str) -> str:
    """The chat for a log line: keys are stored both as "chat 12" and as "12"."""
    return chat_key if chat_key.startswith("chat ") else f"chat {chat_key}"

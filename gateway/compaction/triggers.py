"""When to compact a stored session outside the agent loop (pure): before a turn, and while it is idle.

- Hygiene (the first layer): before a turn at a fixed share (default 85%) of the window, above the
  in-loop compressor's threshold: the safety net.
- Cache-aware: once a session's prompt cache has expired, its next request writes the whole prefix
  again whatever we do, so compacting first adds no cache write and makes that write (and every later
  read) smaller. A compaction while the cache is warm would throw away a prefix already paid for.
- Proactive (idle sessions only): above a share of the window whatever the cache, so the next message
  does not wait for a summary.
- After a reply (the compressor's threshold, default 50%): right after a reply was delivered, when
  the next request would reach the context engine's own threshold. The prompt cache is warm then, so a
  summary call that reuses the cached prefix is cheap, and nobody is waiting for an answer. The agent
  loop still checks the same threshold before every turn's first call (for what arrived meanwhile).

Sizes: the last API-reported prompt size plus estimates of what was stored since
(`SessionRecord.context_tokens`). When no reported size exists (a new session, or one just compacted),
the fallback is the running estimate of the whole active window: the sum of every stored row's
estimate, kept up to date on each append, instead of a rough character count over the window
re-read each turn. Each row's estimate is the cl100k count, itself the rough character count when the
tokenizer data cannot be loaded, scaled by the learned calibration when there is one.

The size comes from the session row only (`SessionRecord.context_tokens`), so deciding is O(1) in
history. Both the turn and the scheduled job ask this module; `gateway.compaction.compactor.Compactor`
does it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.caching.plan import CacheState
from gateway.store import SessionRecord

MIN_MESSAGES = 4
"""Below this many messages there is nothing worth summarising."""

HYGIENE = "hygiene"
SCHEDULED = "scheduled"
AFTER_REPLY = "after_reply"


@dataclass(frozen=True, slots=True)
class Decision:
    trigger: str | None
    """The compaction trigger to record, or None: do not compact."""
    reason: str

    @property
    def fire(self) -> bool:
        return self.trigger is not None


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    enabled: bool
    context_length: int
    hygiene_threshold: float
    cache_aware_share: float | None
    """Compact once the prompt cache expired above this share of the window (None: never)."""
    proactive_share: float
    idle: timedelta

    def before_turn(
        self,
        session: SessionRecord,
        cache: CacheState,
        *,
        now: datetime,
        calibrate: Callable[[int], int] | None = None,
    ) -> Decision:
        """Compact before this turn's first request? Hygiene above its threshold, else cache-aware."""
        tokens = session.context_tokens(calibrate)
        blocked = self._blocked(session)
        if blocked is not None:
            return blocked
        source = "reported" if session.last_prompt_tokens is not None else "estimate"
        share = tokens / self.context_length
        if share >= self.hygiene_threshold:
            threshold = int(self.context_length * self.hygiene_threshold)
            return Decision(HYGIENE, f"{tokens:,} tokens ({share:.0%} of window, {source}) >= {threshold:,}")
        return self._cache_aware(share, cache, now) or Decision(
            None, f"{tokens:,} tokens ({share:.0%} of window, {source})"
        )

    def when_idle(
        self,
        session: SessionRecord,
        cache: CacheState,
        *,
        now: datetime,
        calibrate: Callable[[int], int] | None = None,
    ) -> Decision:
        """Compact this idle session now? Proactive above its share, else cache-aware (its size counted
        as a turn counts it, with `calibrate`)."""
        blocked = self._blocked(session)
        if blocked is not None:
            return blocked
        if session.last_activity_at is not None and session.last_activity_at >= now - self.idle:
            return Decision(None, "not idle")
        share = session.context_tokens(calibrate) / self.context_length
        if share >= self.proactive_share:
            return Decision(SCHEDULED, f"idle at {share:.0%} of the window (>= {self.proactive_share:.0%})")
        return self._cache_aware(share, cache, now) or Decision(None, f"idle at {share:.0%} of the window")

    def after_reply(
        self,
        session: SessionRecord,
        *,
        compresses: Callable[[int], bool],
        next_message_tokens: int,
        calibrate: Callable[[int], int] | None = None,
    ) -> Decision:
        """Compact now, right after a delivered reply? Yes when the next request (this session's size
        plus a typical next message) would reach the engine's threshold (`compresses` is the engine's
        `should_compress`, which also honours its pause after ineffective runs)."""
        blocked = self._blocked(session)
        if blocked is not None:
            return blocked
        tokens = session.context_tokens(calibrate) + next_message_tokens
        share = tokens / self.context_length
        if compresses(tokens):
            return Decision(AFTER_REPLY, f"next request ~{tokens:,} tokens ({share:.0%} of window)")
        return Decision(None, f"next request ~{tokens:,} tokens ({share:.0%} of window)")

    def _blocked(self, session: SessionRecord) -> Decision | None:
        if not self.enabled:
            return Decision(None, "compression disabled")
        if session.active_message_count < MIN_MESSAGES:
            return Decision(None, f"only {session.active_message_count} messages (< {MIN_MESSAGES})")
        return None

    def _cache_aware(self, share: float, cache: CacheState, now: datetime) -> Decision | None:
        if self.cache_aware_share is None or share < self.cache_aware_share:
            return None
        if not cache.expired(now):
            return Decision(None, f"{share:.0%} of the window but the prompt cache is still warm")
        return Decision(
            SCHEDULED, f"cache expired at {share:.0%} of the window (>= {self.cache_aware_share:.0%})"
        )

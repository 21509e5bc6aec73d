"""The circuit breaker in front of query embeddings: one slow answer costs one query, not the next minute.

Closed: every recall query asks the endpoint (each with its own deadline). After `failures` failures in
a row it opens: queries skip the semantic side at once for `cooldown_s`. Then it half-opens: the next
query tries the endpoint (others meanwhile still skip); a success closes it, a failure opens it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class Breaker:
    def __init__(
        self, *, failures: int = 3, cooldown_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold = failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self.failures = 0
        """Failures in a row (reset by a success)."""
        self._opened_at: float | None = None
        self._trial = False
        """A half-open trial is under way."""

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._clock() - self._opened_at < self.cooldown_s:
            return BreakerState.OPEN
        return BreakerState.HALF_OPEN

    @property
    def reopens_in(self) -> float:
        """Seconds until a query may try the endpoint again (0 unless open)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self.cooldown_s - (self._clock() - self._opened_at))

    def allow(self) -> bool:
        """May this query ask the endpoint? In half-open state only one query at a time may."""
        state = self.state
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.HALF_OPEN and not self._trial:
            self._trial = True
            return True
        return False

    def succeeded(self) -> None:
        self.failures = 0
        self._opened_at = None
        self._trial = False

    def failed(self) -> bool:
        """Counts a failure; True when it opened (or re-opened) the breaker."""
        self.failures += 1
        was_trial, self._trial = self._trial, False
        if was_trial or self.failures >= self.threshold:
            self._opened_at = self._clock()
            return True
        return False

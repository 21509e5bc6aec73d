"""The query-embedding breaker: opens on failures in a row, half-opens for one trial, closes on success."""

from __future__ import annotations

from gateway.embeddings.breaker import Breaker, BreakerState


def test_opens_only_after_failures_in_a_row_then_half_opens_for_one_trial() -> None:
    now = [0.0]
    breaker = Breaker(failures=3, cooldown_s=10.0, clock=lambda: now[0])
    assert breaker.allow()
    assert not breaker.failed()
    breaker.succeeded()  # a success in between resets the count
    assert not breaker.failed()
    assert not breaker.failed()
    assert breaker.state is BreakerState.CLOSED
    assert breaker.failed()
    assert breaker.state is BreakerState.OPEN
    assert not breaker.allow()
    assert breaker.reopens_in == 10.0
    now[0] = 10.0
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allow()
    assert not breaker.allow()  # one trial at a time
    assert breaker.failed()  # the trial failed: open again for a whole cool-down
    now[0] = 15.0
    assert breaker.state is BreakerState.OPEN
    now[0] = 20.0
    assert breaker.allow()
    breaker.succeeded()
    assert breaker.state is BreakerState.CLOSED
    assert breaker.allow()
    assert breaker.reopens_in == 0.0

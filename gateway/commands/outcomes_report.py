"""The `/stats` line about what the model declined and what the API dropped (shown only when either
happened)."""

from __future__ import annotations

from gateway.store.call_outcomes import CallOutcomes


def outcomes_line(outcomes: CallOutcomes) -> str | None:
    parts: list[str] = []
    if outcomes.refusals:
        total = sum(outcomes.refusals.values())
        by = ", ".join(f"{c} {n}" for c, n in sorted(outcomes.refusals.items()))
        parts.append(f"Declined by the model: {total} ({by})")
    if outcomes.thinking_dropped:
        n = outcomes.thinking_dropped
        parts.append(f"thinking block{'s' if n != 1 else ''} dropped by the API: {n}")
    return "; ".join(parts) or None


def with_outcomes(text: str, outcomes: CallOutcomes) -> str:
    line = outcomes_line(outcomes)
    return f"{text}\n{line}" if line else text

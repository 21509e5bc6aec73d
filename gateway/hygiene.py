"""Session hygiene: the gateway's safety net before each agent turn (seed 000, layer 1).

Fires at a fixed share (default 85%) of the model's window, above the in-loop compressor's threshold,
so long gateway sessions are not compacted prematurely on every turn. The token figure comes from
the session row only (last API-reported prompt size + estimates of messages added since, else the
running estimate of the active window), so the check is O(1) in archived history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MIN_MESSAGES = 4


@dataclass(frozen=True, slots=True)
class HygieneDecision:
    fire: bool
    reason: str
    tokens: int
    source: Literal["reported", "estimate"]
    threshold_tokens: int


def decide(
    *,
    enabled: bool,
    message_count: int,
    last_prompt_tokens: int | None,
    tokens_since_call: int,
    active_tokens: int,
    context_length: int,
    threshold: float,
) -> HygieneDecision:
    """Whether hygiene must compact before the agent runs, and why (pure)."""
    threshold_tokens = int(context_length * threshold)
    if last_prompt_tokens is not None:
        tokens, source = last_prompt_tokens + tokens_since_call, "reported"
    else:
        tokens, source = active_tokens, "estimate"
    typed_source: Literal["reported", "estimate"] = "reported" if source == "reported" else "estimate"

    def result(fire: bool, reason: str) -> HygieneDecision:
        return HygieneDecision(fire, reason, tokens, typed_source, threshold_tokens)

    if not enabled:
        return result(False, "compression disabled")
    if message_count < MIN_MESSAGES:
        return result(False, f"only {message_count} messages (< {MIN_MESSAGES})")
    pct = 100.0 * tokens / context_length
    if tokens >= threshold_tokens:
        return result(True, f"{tokens:,} tokens ({pct:.0f}% of window, {source}) >= {threshold_tokens:,}")
    return result(False, f"{tokens:,} tokens ({pct:.0f}% of window, {source}) below {threshold_tokens:,}")

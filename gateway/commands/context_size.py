"""How big a chat's context is: the one number `/stats`, `/stats detail` and `/compact` show.

It is counted as the compaction thresholds count it (`SessionRecord.context_tokens` with the calibration
the thresholds apply): the size the API reported for the session's last request plus calibrated
estimates of what was stored since, or the calibrated estimate of the stored window before the first
request (and right after a compaction). Every other size a command shows is labelled by what it is for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.store import SessionRecord


@dataclass(frozen=True, slots=True)
class ContextSize:
    """The chat's context as the thresholds see it, and how that number is made up."""

    tokens: int
    window: int
    reported: int | None
    """What the API counted for the session's last request (None: no request since the last reset)."""
    since: int
    """Estimated tokens (calibrated as the thresholds calibrate them) stored since the last call."""


def context_size(session: SessionRecord, *, calibrate: Callable[[int], int], window: int) -> ContextSize:
    """The owner of "how big is this chat's context": every command that shows it asks here."""
    return ContextSize(
        tokens=session.context_tokens(calibrate),
        window=window,
        reported=session.last_prompt_tokens,
        since=calibrate(session.tokens_since_call),
    )

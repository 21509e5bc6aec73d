"""The `/stats` line about voice notes: how many were transcribed, how many failed and why."""

from __future__ import annotations

from gateway.commands.stats_report import Line
from gateway.store.messages.transcripts import TranscriptionCounts

CAUSE_WORDS = {
    "timeout": "timed out",
    "unreachable": "endpoint unreachable",
    "auth": "key refused",
    "rate_limited": "rate-limited",
    "too_long": "too long",
    "too_large": "too large",
    "rejected": "audio refused",
    "failed": "endpoint error",
    "malformed": "unreadable answer",
    "download": "not downloaded",
}


def voice_lines(counts: TranscriptionCounts) -> list[Line]:
    """One line, or none when no voice note was sent for transcription."""
    if not counts.total:
        return []
    failed = sum(counts.failed.values())
    text = f"{counts.ok:,} transcribed, {failed:,} failed"
    if failed:
        causes = ", ".join(f"{CAUSE_WORDS.get(c, c)} {n}" for c, n in sorted(counts.failed.items()))
        text += f" ({causes}); last failure: {counts.last_failure or 'no reason recorded'}"
    return [Line("Voice notes", text)]

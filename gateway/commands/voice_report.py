"""The `/stats` line about voice notes: how many were transcribed, how many failed and why."""

from __future__ import annotations

from gateway.store.transcripts import TranscriptionCounts

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


def voice_line(counts: TranscriptionCounts) -> str | None:
    """One line, or None when no voice note was sent for transcription."""
    if not counts.total:
        return None
    failed = sum(counts.failed.values())
    line = f"Voice notes: {counts.ok:,} transcribed, {failed:,} failed"
    if failed:
        causes = ", ".join(f"{CAUSE_WORDS.get(c, c)} {n}" for c, n in sorted(counts.failed.items()))
        line += f" ({causes}); last failure: {counts.last_failure or 'no reason recorded'}"
    return line

"""What the bot says besides the model's answers: why a turn could not be answered, and what a compaction
did (pure renderings; one wording each)."""

from __future__ import annotations

from agent.context_engine import Outcome
from agent.errors import LLMAuthError, LLMBadRequestError, LLMError, LLMOverloadedError, LLMRateLimitError
from gateway.compaction import CompactionReport

KEPT = "Your message is saved; send it again or just say \u201cretry\u201d and I\u2019ll pick it up."


def human_error(exc: LLMError) -> str:
    """The reply when the model could not answer (the message stays stored and pending)."""
    if isinstance(exc, LLMRateLimitError | LLMOverloadedError):
        return f"The assistant is overloaded right now. {KEPT}"
    if isinstance(exc, LLMAuthError):
        return (
            "The assistant is not available: the bot's API key was rejected. An admin needs to fix it. "
            + KEPT
        )
    if isinstance(exc, LLMBadRequestError):
        return f"The assistant could not process this conversation ({type(exc).__name__}). {KEPT}"
    return f"The assistant is unreachable at the moment. {KEPT}"


def compaction_notice(report: CompactionReport) -> str:
    """The one-line notice a reply carries when a compaction ran during its turn."""
    if report.outcome is Outcome.OK:
        return (
            f"(Context compacted: {report.messages_before}\u2192{report.messages_after} messages, "
            f"{report.tokens_before:,}\u2192{report.tokens_after:,} tokens.)"
        )
    return f"(Context compaction {report.outcome.value}: {report.reason})"


def compaction_result(report: CompactionReport) -> str:
    """The answer to `/compact`."""
    head = f"Compaction {report.outcome.value}"
    if report.outcome is not Outcome.OK:
        head += f" ({report.reason})"
    return (
        f"{head}: {report.messages_before}\u2192{report.messages_after} messages, "
        f"{report.tokens_before:,}\u2192{report.tokens_after:,} tokens in {report.duration_s:.1f} s."
    )

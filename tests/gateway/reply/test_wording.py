"""What the bot says when the model cannot answer, and after a compaction that had nothing to do."""

from __future__ import annotations

from agent.compaction.engine import Outcome
from agent.errors import LLMOverloadedError, LLMRateLimitError
from gateway.compaction.compactor import CompactionReport
from gateway.reply.wording import compaction_notice, compaction_result, human_error


def test_a_rate_limit_is_not_called_overloaded() -> None:
    limited = human_error(LLMRateLimitError("429", retry_after=3))
    assert "rate limited" in limited
    assert "overloaded" not in limited
    assert "overloaded" in human_error(LLMOverloadedError("529", status_code=529))


def _idle(messages: int) -> CompactionReport:
    return CompactionReport(
        trigger="manual",
        outcome=Outcome.ABORTED,
        reason="nothing to compact between head and tail",
        messages_before=messages,
        messages_after=messages,
        tokens_before=9_000,
        tokens_after=9_000,
        duration_s=0.0,
        changed=False,
        idle=True,
    )


def test_every_nothing_to_do_case_has_the_same_plain_words() -> None:
    short, long = compaction_result(_idle(6), 20), compaction_result(_idle(30), 20)
    assert short.startswith("Nothing to compact yet: this conversation has 6 messages (~9,000 tokens)")
    assert long.startswith("Nothing to compact yet: this conversation has 30 messages (~9,000 tokens)")
    assert short.split(")", 1)[1] == long.split(")", 1)[1]
    for text in (short, long):
        assert "head and tail" not in text
        assert "aborted" not in text
        assert "at least the last 20, more when they are short" in text
    assert compaction_notice(_idle(30)) == "(Context not compacted: nothing to shorten yet.)"

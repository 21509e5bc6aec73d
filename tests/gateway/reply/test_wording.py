"""What the bot says when the model cannot answer, and after a compaction that had nothing to do."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import agent.errors
from agent.compaction.engine import Outcome
from agent.errors import (
    BudgetExceededError,
    ContextOverflowError,
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMNotFoundError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMServerError,
    LLMStreamCutError,
    LLMUnavailableError,
    ThinkingBindingError,
)
from gateway.compaction.compactor import CompactionReport
from gateway.reply.wording import compaction_notice, compaction_result, human_error, turn_failed

EVERY_ERROR: list[LLMError] = [
    LLMError("Anthropic SDK error: APIResponseValidationError: bad"),
    LLMAuthError("401", status_code=401),
    LLMBadRequestError("400 invalid_request_error", status_code=400),
    ContextOverflowError("prompt is too long", status_code=400),
    ThinkingBindingError("bound to a different conversation", status_code=400),
    LLMNotFoundError("404 not_found_error: model: claude-sonet-4-6", status_code=404),
    LLMRateLimitError("429", retry_after=3),
    LLMOverloadedError("529", status_code=529),
    LLMServerError("500", status_code=500),
    LLMUnavailableError("unreachable"),
    LLMStreamCutError("peer closed connection"),
    BudgetExceededError(
        "the daily budget", cap_usd=5.0, used_usd=5.1, resets_at=datetime(2027, 1, 1, tzinfo=UTC)
    ),
]
RETRY_HELPS = (LLMRateLimitError, LLMOverloadedError, LLMServerError, LLMUnavailableError)
"""Failures that pass (and an unexpected one): only after these does the reply offer to send the message
again."""


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
    short = compaction_result(_idle(6), 20, context_before=9_400, context_after=9_400)
    long = compaction_result(_idle(30), 20, context_before=9_400, context_after=9_400)
    assert short.startswith("Nothing to compact yet: the context is 9,400 tokens (6 messages)")
    assert long.startswith("Nothing to compact yet: the context is 9,400 tokens (30 messages)")
    assert short.split(")", 1)[1] == long.split(")", 1)[1]
    for text in (short, long):
        assert "head and tail" not in text
        assert "aborted" not in text
        assert "at least the last 20, more when they are short" in text
    assert compaction_notice(_idle(30)) == "(Context not compacted: nothing to shorten yet.)"


def _class_names() -> set[str]:
    return {name for name, value in vars(agent.errors).items() if isinstance(value, type)}


@pytest.mark.parametrize("exc", EVERY_ERROR, ids=lambda e: type(e).__name__)
def test_every_model_failure_is_told_in_plain_words(exc: LLMError) -> None:
    text = human_error(exc)
    assert not [name for name in _class_names() if name in text], text
    assert "Error" not in text
    offers_retry = "retry" in text or "send it again" in text
    assert offers_retry == (isinstance(exc, RETRY_HELPS) or type(exc) is LLMError), text


def test_an_unknown_model_is_named_as_the_bots_setting_and_no_retry_is_offered() -> None:
    text = human_error(LLMNotFoundError("404 not_found_error: model: claude-sonet-4-6", status_code=404))
    assert "model" in text
    assert "admin" in text
    assert "answered with your next message once that is fixed" in text


def test_a_reply_cut_in_the_middle_ends_with_a_note_and_stays_answerable() -> None:
    cut = LLMStreamCutError("peer closed connection without sending complete message body")
    text = turn_failed(cut, "The first half of the answer, and then  \n")
    head, _, note = text.partition("\n\n")
    assert head == "The first half of the answer, and then"
    assert note.startswith("(Cut off:")
    assert "retry" in note
    assert turn_failed(cut, "  ") == human_error(cut)  # nothing shown yet: said as a dropped connection
    assert turn_failed(LLMOverloadedError("529"), "half") == human_error(LLMOverloadedError("529"))

"""What the bot says when the model cannot answer, and after a compaction that had nothing to do."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import agent.errors
from agent.compaction.engine import Kept, Outcome
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


def _idle(messages: int, kept: Kept | None = None) -> CompactionReport:
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
        kept=kept,
    )


def _kept(tail_messages: int, tail_tokens: int, middle: int = 0) -> Kept:
    return Kept(
        messages=2 + middle + tail_messages,
        head_messages=2,
        head_tokens=400,
        tail_messages=tail_messages,
        tail_tokens=tail_tokens,
        tail_budget=100_000,
        tail_cap=250_000,
        threshold_tokens=500_000,
        target_ratio=0.2,
        protect_last_n=20,
    )


def test_nothing_to_do_from_an_engine_that_does_not_say_what_it_keeps() -> None:
    text = compaction_result(_idle(30), 20, context_before=9_400, context_after=9_400)
    assert text.startswith("Nothing to compact yet: the context is 9,400 tokens (30 messages)")
    assert "head and tail" not in text
    assert "aborted" not in text
    assert "at least the last 20, more when they are short" in text
    assert compaction_notice(_idle(30)) == "(Context not compacted: nothing to shorten yet.)"


def test_a_tail_within_its_budget_is_explained_by_the_budget_and_its_settings() -> None:
    report = _idle(38, _kept(tail_messages=36, tail_tokens=8_600))
    text = compaction_result(report, 20, context_before=9_400, context_after=9_400)
    assert text.startswith(
        "Nothing to compact yet: the context is 9,400 tokens; the first exchange (~400 tokens) and the "
        "newest ~8,600 tokens (the last 36 messages) are kept word for word"
    ), text
    assert "budget of 100,000 tokens (20% of the 500,000-token compaction threshold" in text
    assert "compression.target_ratio" in text
    assert "compression.threshold" in text
    assert "once the messages pass about 100,400 tokens" in text
    assert "protect_last_n" not in text  # lowering it would change nothing here


def test_a_tail_held_by_protect_last_n_names_that_setting() -> None:
    report = _idle(22, _kept(tail_messages=20, tail_tokens=180_000))
    text = compaction_result(report, 20, context_before=190_000, context_after=190_000)
    assert "at least the last 20 messages (compression.protect_last_n) while they fit in 250,000" in text
    assert "lower compression.protect_last_n" in text


def test_a_middle_that_would_not_shrink_is_named_with_its_size() -> None:
    report = _idle(25, _kept(tail_messages=20, tail_tokens=8_000, middle=3))
    text = compaction_result(report, 20, context_before=9_400, context_after=9_400)
    assert "the 3 messages between them (~600 tokens)" in text, text


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

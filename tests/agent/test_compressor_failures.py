"""The compressor when summarizing fails: aborts, the two-part and newer-half retries, extractive and
previous-summary fallbacks, results that are not smaller, and the pause after ineffective compactions."""

from __future__ import annotations

from agent.compaction.engine import EngineState, Outcome
from agent.usage import Usage
from tests.agent.compressor_support import (
    ScriptedSummarizer,
    assistant,
    call,
    conversation,
    count_tokens,
    failing,
    make,
    pad,
    plain,
    results,
    tool_head,
    user,
)

# -- failures ------------------------------------------------------------------------------------------


async def test_abort_class_summarizer_error_compacts_nothing() -> None:
    summarizer = ScriptedSummarizer([failing(abort=True)])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    history = plain(9)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.ABORTED
    assert result.reason.startswith("summarizer unavailable, nothing compacted")
    assert result.messages == history
    assert engine.state.compression_count == 0
    assert engine.state.previous_summary is None
    assert len(summarizer.requests) == 1


async def test_abort_class_error_on_the_retry_also_compacts_nothing() -> None:
    summarizer = ScriptedSummarizer([failing(too_small=True), failing(abort=True)])
    result = await make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=2).compress(
        plain(11), force=True
    )
    assert result.outcome is Outcome.ABORTED
    assert len(summarizer.requests) == 2


async def test_a_middle_too_big_for_the_summarizer_is_summarized_in_two_parts() -> None:
    summarizer = ScriptedSummarizer([failing(too_small=True), "## Goal\nOLDER", "## Goal\nOLDER+NEWER"])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=2)
    result = await engine.compress(plain(11), force=True)
    assert result.outcome is Outcome.OK
    assert "in two parts" in result.reason
    whole, older, newer = summarizer.requests
    assert (older.middle_start, older.middle_end) == (whole.middle_start, newer.middle_start)
    assert newer.middle_end == whole.middle_end
    assert newer.previous_summary == "## Goal\nOLDER"  # the newer part updates the older part's summary
    assert result.summary is not None
    assert "OLDER+NEWER" in result.summary
    assert result.summary_usage is not None
    assert result.summary_usage.input_tokens == 200  # both parts are accounted


async def test_too_small_summarizer_retries_on_the_newer_half() -> None:
    summarizer = ScriptedSummarizer([failing(too_small=True), failing(too_small=True), "## Goal\nNEWER-HALF"])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=2)
    result = await engine.compress(plain(11), force=True)
    assert result.outcome is Outcome.DEGRADED
    assert "summarizer context too small" in result.reason
    first, _older_part, retry = summarizer.requests
    assert first.middle_end == retry.middle_end
    assert retry.middle_start > first.middle_start
    assert result.summary is not None
    assert result.summary.startswith("## Goal\nNEWER-HALF")
    assert "## Earlier Turns (extracted)" in result.summary
    assert "u4 xx" in result.summary.split("## Earlier Turns (extracted)")[1]  # older ask, verbatim
    assert result.summarizer_model == "scripted-summary-model"
    assert engine.state.compression_count == 1


async def test_empty_summaries_fall_back_to_an_extractive_summary() -> None:
    history = [
        user("hello"),
        assistant("hi"),
        user("Please deploy the API to /srv/app/config.yaml before Friday"),
        assistant("We decided to use PostgreSQL 16 instead of MySQL.\n" + pad("notes", 600)),
        user("ok, run the tests"),
        call(("r1", "run_tests")),
        results(("r1", "FAILED tests/test_api.py::test_create - KeyError: 'id'\n3 failed in 2.5s")),
        assistant("Three tests fail with KeyError."),
        user(pad("thanks", 400)),
        assistant(pad("anything else?", 400)),
        user("fix them"),
    ]
    summarizer = ScriptedSummarizer(["", "   "])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=3)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.DEGRADED
    assert "empty summary" in result.reason
    assert "extractive summary" in result.reason
    assert result.summarizer_model is None
    text = result.summary or ""
    assert "ok, run the tests" in text  # the latest ask of the compacted turns, verbatim
    assert "We decided to use PostgreSQL 16 instead of MySQL." in text
    assert "/srv/app/config.yaml" in text
    assert "FAILED tests/test_api.py::test_create - KeyError: 'id'" in text
    assert "run_tests(" in text
    assert "-> FAILED tests/test_api.py::test_create" in text
    assert count_tokens(user(text)) <= 500
    assert engine.state.previous_summary == text


async def test_plain_errors_twice_degrade_and_keep_the_previous_summary() -> None:
    summarizer = ScriptedSummarizer(default=failing())
    state = EngineState(previous_summary="## Goal\nOLD-FACTS-1234", compression_count=1)
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=2, state=state)
    result = await engine.compress(plain(11), force=True)
    assert result.outcome is Outcome.DEGRADED
    assert "retry on the newer" in result.reason
    assert "OLD-FACTS-1234" in (result.summary or "")
    assert len(summarizer.requests) == 2


async def test_result_not_smaller_keeps_the_original() -> None:
    summarizer = ScriptedSummarizer(["verbose " * 2_000])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=5)
    history = tool_head(6)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.ABORTED
    assert "not smaller" in result.reason
    assert result.messages == history
    assert result.tokens_after == result.tokens_before
    assert engine.state.previous_summary is None
    assert engine.state.compression_count == 0


# -- anti-thrash ---------------------------------------------------------------------------------------


async def test_two_ineffective_automatic_compactions_pause_until_the_context_grows() -> None:
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=4)
    history = plain(9)
    high = Usage(input_tokens=6_000)
    engine.update_from_usage(high)
    for round_ in (1, 2):
        assert engine.should_compress()
        result = await engine.compress(history)
        assert result.outcome is Outcome.OK
        assert engine.state.awaiting_effect
        engine.update_from_usage(high)  # the next call is still over the threshold
        assert engine.state.ineffective_auto_compactions == round_
    assert engine.state.paused_at_tokens == 6_000
    assert engine.state.pause_reason is not None
    assert "still 6000 tokens" in engine.state.pause_reason
    assert not engine.should_compress(6_200)
    paused = await engine.compress(history)
    assert paused.outcome is Outcome.ABORTED
    assert "paused" in paused.reason
    # it resumes by itself once the context has grown by a tail's budget (500 tokens here)
    assert engine.should_compress(6_000 + engine.tail_token_budget)
    resumed = await engine.compress(history + plain(4))
    assert resumed.outcome is Outcome.OK
    assert engine.state.paused_at_tokens is None


async def test_a_manual_compaction_lifts_the_pause() -> None:
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=4)
    engine.state.paused_at_tokens, engine.state.ineffective_auto_compactions = 6_000, 2
    manual = await engine.compress(plain(9), force=True)
    assert manual.outcome is Outcome.OK
    assert engine.state.paused_at_tokens is None
    assert engine.state.ineffective_auto_compactions == 0
    assert engine.should_compress(6_000)


async def test_effective_compaction_resets_the_ineffective_count() -> None:
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=4)
    engine.state.ineffective_auto_compactions = 1
    engine.update_from_usage(Usage(input_tokens=6_000))
    await engine.compress(plain(9))
    engine.update_from_usage(Usage(input_tokens=1_200))
    assert engine.state.ineffective_auto_compactions == 0
    assert engine.state.paused_at_tokens is None


async def test_repeated_automatic_runs_with_nothing_to_compact_pause() -> None:
    engine = make(context_length=10_000, protect_last_n=20)
    engine.update_from_usage(Usage(input_tokens=9_000))
    for _ in range(2):
        result = await engine.compress(conversation(2, tokens_per_message=600))
        assert result.outcome is Outcome.ABORTED
    assert engine.state.paused_at_tokens is not None

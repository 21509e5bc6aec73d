"""The compressor's defaults, boundaries, role rules, iterative updates, failure outcomes and guards."""

from __future__ import annotations

import copy
import itertools

import pytest

from agent.context_compressor import SUMMARY_PREFIX, ContextCompressor, is_summary_message
from agent.context_engine import EngineState, Outcome
from agent.messages import ORPHAN_PREFIX, PRUNED_MARKER, REMOVED_RESULT, repair_tool_pairs
from agent.summary import FRAMING, SYSTEM_NOTE
from agent.types import blocks_of, tool_result_ids
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
    results,
    summary_blocks,
    user,
)

# -- seed 000's worked numbers ------------------------------------------------------------------------


def test_200k_window_worked_numbers() -> None:
    engine = make(context_length=200_000)
    assert engine.threshold_tokens == 100_000
    assert engine.tail_token_budget == 20_000
    assert engine.max_summary_tokens == 10_000
    assert engine.summary_budget(1_000_000) == 10_000  # capped at min(200K x 0.05, 12K)
    assert engine.summary_budget(30_000) == 6_000  # content x 0.20
    assert engine.summary_budget(5_000) == 2_000  # floor


def test_large_window_summary_cap_is_12k() -> None:
    engine = make(context_length=1_000_000)
    assert engine.max_summary_tokens == 12_000
    assert engine.summary_budget(10_000_000) == 12_000


@pytest.mark.parametrize(("ratio", "tail_budget"), [(0.05, 10_000), (0.95, 80_000), (0.30, 30_000)])
def test_target_ratio_is_clamped(ratio: float, tail_budget: int) -> None:
    assert make(context_length=200_000, target_ratio=ratio).tail_token_budget == tail_budget


def test_should_compress_follows_threshold_and_reported_usage() -> None:
    engine = make(context_length=200_000)
    assert not engine.should_compress()  # nothing reported yet
    assert not engine.should_compress(99_999)
    assert engine.should_compress(100_000)
    engine.update_from_usage(Usage(input_tokens=2_000, cache_read_input_tokens=98_000))
    assert engine.should_compress()
    assert not make(enabled=False).should_compress(150_000)


# -- boundaries ----------------------------------------------------------------------------------------


async def test_protect_last_n_dominates_a_small_token_budget() -> None:
    history = conversation(12, tokens_per_message=400)  # 48 messages; the 500-token budget fits one
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=6)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.OK
    kept_tail = [o for o in result.origin if o is not None and o > 3]
    # 6 messages from the end lands on a tool-result message; its call comes along
    assert kept_tail == list(range(41, 48))
    assert result.removed_indices == tuple(range(3, 41))


async def test_token_budget_dominates_a_small_protect_last_n() -> None:
    history = conversation(30, tokens_per_message=20)  # ~24 tokens per message
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=1)  # 500-token tail budget
    result = await engine.compress(history, force=True)
    tail = [o for o in result.origin if o is not None and o >= 3]
    assert 15 <= len(tail) <= 21
    assert sum(count_tokens(history[i]) for i in tail) <= 500


async def test_tail_never_starts_with_a_tool_result_cut_off_from_its_call() -> None:
    history = [user(pad("start", 300)), assistant(pad("ok", 300))]
    for i in range(5):
        history += [call((f"c{i}", "grep")), results((f"c{i}", pad(f"out {i}", 300)))]
    history += [assistant(pad("done", 300)), user("next?")]
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=3)
    result = await engine.compress(history, force=True)
    # the last 3 messages begin with the result of c4; the tail must start at its call instead
    assert result.origin[-5:] == (None, 10, 11, 12, 13)
    assert history[10]["content"][0]["id"] == "c4"  # type: ignore[index]
    _assert_valid_pairs(result.messages)


async def test_newest_user_message_is_always_in_the_tail() -> None:
    history = [user("first"), assistant("hi"), user(pad("the real question", 2_000))]
    for i in range(6):
        history += [call((f"c{i}", "search")), results((f"c{i}", pad(f"hits {i}", 400)))]
    history.append(assistant("almost"))
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=2)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.ABORTED  # the ask right after the head pins the whole rest
    assert result.reason == "nothing to compact between head and tail"
    assert result.messages == history


async def test_nothing_to_compact_leaves_history_unchanged() -> None:
    history = conversation(3)
    result = await make(protect_last_n=20).compress(history, force=True)
    assert result.outcome is Outcome.ABORTED
    assert result.messages == history
    assert result.origin == tuple(range(len(history)))
    assert result.removed_indices == ()
    assert not result.changed


async def test_automatic_run_below_threshold_is_refused_but_forced_run_proceeds() -> None:
    history = conversation(10, tokens_per_message=100)
    engine = make(context_length=20_000, protect_last_n=4)
    auto = await engine.compress(history)
    assert auto.outcome is Outcome.ABORTED
    assert "below the 10000 threshold" in auto.reason
    forced = await engine.compress(history, force=True)
    assert forced.outcome is Outcome.OK


# -- phase 1: prune ------------------------------------------------------------------------------------


async def test_old_tool_output_over_200_chars_is_cleared_outside_the_tail() -> None:
    history = [
        user("set up the project"),
        call(("a", "read_file"), ("b", "read_file")),
        results(("a", "y" * 200), ("b", "z" * 201)),
        assistant(pad("read both", 300)),
        user(pad("more", 300)),
        assistant(pad("sure", 300)),
        user("and now?"),
        call(("c", "read_file")),
        results(("c", "w" * 5_000)),
    ]
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=3)
    result = await engine.compress(history, force=True)
    assert result.pruned_indices == (2,)
    head_results = {b["tool_use_id"]: b["content"] for b in blocks_of(result.messages[2])}
    assert head_results["a"] == "y" * 200  # exactly 200 chars stays
    assert head_results["b"] == PRUNED_MARKER
    tail_result = blocks_of(result.messages[-1])[0]
    assert tail_result["content"] == "w" * 5_000  # the protected tail is never pruned
    assert history[2]["content"][1]["content"] == "z" * 201  # type: ignore[index]


async def test_summarizer_sees_unpruned_middle_tool_output() -> None:
    fact = "DATABASE_URL=postgres://db.internal:5432/app " + "q" * 400
    history = [
        user("hi"),
        assistant("hello"),
        user(pad("check config", 200)),
        call(("k", "read_file")),
        results(("k", fact)),
        assistant(pad("found it", 200)),
        user("thanks, next"),
        assistant("ok"),
        user(pad("go", 600)),
    ]
    summarizer = ScriptedSummarizer()
    await make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=3).compress(
        history, force=True
    )
    assert fact in summarizer.requests[0].instructions


# -- phase 4: role choice and framing ----------------------------------------------------------------


def _plain(n: int) -> list:  # type: ignore[type-arg]
    out = []
    for i in range(n):
        out.append(user(pad(f"u{i}", 600)) if i % 2 == 0 else assistant(pad(f"a{i}", 600)))
    return out


async def test_summary_stands_alone_as_user_between_two_assistant_messages() -> None:
    history = _plain(9)  # u a | u a u | a u a u
    result = await make(context_length=10_000, target_ratio=0.10, protect_last_n=4).compress(
        history, force=True
    )
    assert [m["role"] for m in result.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert result.summary_role == "user"
    assert result.origin == (0, 1, None, 5, 6, 7, 8)
    text = result.messages[2]["content"]
    assert isinstance(text, str)
    assert text.startswith(FRAMING)
    assert is_summary_message(result.messages[2])


async def test_summary_merges_into_the_tails_first_user_message_after_an_assistant_head() -> None:
    history = _plain(9)
    result = await make(context_length=10_000, target_ratio=0.10, protect_last_n=3).compress(
        history, force=True
    )
    assert result.origin == (0, 1, 6, 7, 8)
    merged = blocks_of(result.messages[2])
    assert merged[0]["text"].startswith(SUMMARY_PREFIX)
    assert merged[1]["text"] == history[6]["content"]  # the user's own words follow unchanged
    assert result.summary_role == "user"
    _assert_alternating(result.messages)


def _tool_head(n_after: int) -> list:  # type: ignore[type-arg]
    out = [user(pad("u0", 600)), call(("t0", "ls")), results(("t0", "README.md main.py"))]
    for i in range(n_after):
        out.append(assistant(pad(f"a{i}", 600)) if i % 2 == 0 else user(pad(f"u{i}", 600)))
    return out


async def test_summary_is_appended_to_the_heads_tool_results_before_an_assistant_tail() -> None:
    history = _tool_head(6)  # u call res | a u | a u a u
    result = await make(context_length=10_000, target_ratio=0.10, protect_last_n=4).compress(
        history, force=True
    )
    assert result.origin == (0, 1, 2, 5, 6, 7, 8)
    head_last = blocks_of(result.messages[2])
    assert head_last[0]["type"] == "tool_result"
    assert head_last[1]["text"].startswith(SUMMARY_PREFIX)
    assert result.summary_role == "user"
    _assert_alternating(result.messages)
    _assert_valid_pairs(result.messages)


async def test_summary_stands_alone_as_assistant_between_two_user_messages() -> None:
    history = _tool_head(6)
    result = await make(context_length=20_000, target_ratio=0.10, protect_last_n=5).compress(
        history, force=True
    )
    assert result.origin == (0, 1, 2, None, 4, 5, 6, 7, 8)
    assert result.summary_role == "assistant"
    assert result.messages[3]["role"] == "assistant"
    _assert_alternating(result.messages)


async def test_first_compaction_reports_a_system_note_later_ones_do_not() -> None:
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=4)
    first = await engine.compress(_plain(9), force=True)
    assert first.system_note == SYSTEM_NOTE
    assert engine.state.compression_count == 1
    second = await engine.compress(
        [*first.messages, assistant(pad("x", 600)), user(pad("y", 600))], force=True
    )
    assert second.outcome is Outcome.OK
    assert second.system_note is None
    assert engine.state.compression_count == 2


# -- iterative update and focus ----------------------------------------------------------------------


async def test_later_compaction_updates_the_previous_summary_sent_exactly_once() -> None:
    summarizer = ScriptedSummarizer(["## Goal\nFIRST-SUMMARY-7f3", "## Goal\nSECOND-SUMMARY-9c1"])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    first = await engine.compress(_plain(9), force=True)
    assert engine.state.previous_summary == "## Goal\nFIRST-SUMMARY-7f3"
    grown = [*first.messages, assistant(pad("a9", 600)), user(pad("u10", 600))]
    assert is_summary_message(grown[2])
    second = await engine.compress(grown, force=True)
    request = summarizer.requests[1]
    assert request.previous_summary == "## Goal\nFIRST-SUMMARY-7f3"
    assert request.instructions.count("FIRST-SUMMARY-7f3") == 1
    assert "UPDATE" in request.instructions
    assert all(not is_summary_message(m) for m in request.middle)
    assert 2 in second.removed_indices  # the old summary message is archived with the middle
    assert [t for _, t in summary_blocks(second.messages)] == [FRAMING + "\n\n## Goal\nSECOND-SUMMARY-9c1"]


async def test_previous_summary_is_recovered_from_the_window_when_state_was_lost() -> None:
    summarizer = ScriptedSummarizer(["## Goal\nFIRST-SUMMARY-7f3"])
    first = await make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4).compress(
        _plain(9), force=True
    )
    fresh = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4, state=EngineState())
    await fresh.compress([*first.messages, assistant(pad("a9", 600)), user(pad("u10", 600))], force=True)
    assert summarizer.requests[1].previous_summary == "## Goal\nFIRST-SUMMARY-7f3"
    assert summarizer.requests[1].instructions.count("FIRST-SUMMARY-7f3") == 1


async def test_summary_merged_into_the_head_is_replaced_not_duplicated() -> None:
    summarizer = ScriptedSummarizer(["ONE-aa", "TWO-bb"])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    first = await engine.compress(_tool_head(6), force=True)
    grown = [*first.messages, assistant(pad("a7", 600)), user(pad("u8", 600))]
    second = await engine.compress(grown, force=True)
    assert second.outcome is Outcome.OK
    texts = [t for _, t in summary_blocks(second.messages)]
    assert len(texts) == 1
    assert texts[0].endswith("TWO-bb")
    assert summarizer.requests[1].instructions.count("ONE-aa") == 1


async def test_focus_reaches_the_summarizer() -> None:
    summarizer = ScriptedSummarizer()
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    await engine.compress(_plain(9), focus="the billing migration", force=True)
    request = summarizer.requests[0]
    assert request.focus == "the billing migration"
    assert "the billing migration" in request.instructions
    assert request.max_tokens == 500  # ceiling min(10K x 0.05, 12K) wins over the 2K floor


# -- failures ------------------------------------------------------------------------------------------


async def test_abort_class_summarizer_error_compacts_nothing() -> None:
    summarizer = ScriptedSummarizer([failing(abort=True)])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    history = _plain(9)
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
        _plain(11), force=True
    )
    assert result.outcome is Outcome.ABORTED
    assert len(summarizer.requests) == 2


async def test_a_middle_too_big_for_the_summarizer_is_summarized_in_two_parts() -> None:
    summarizer = ScriptedSummarizer([failing(too_small=True), "## Goal\nOLDER", "## Goal\nOLDER+NEWER"])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=2)
    result = await engine.compress(_plain(11), force=True)
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
    result = await engine.compress(_plain(11), force=True)
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
    result = await engine.compress(_plain(11), force=True)
    assert result.outcome is Outcome.DEGRADED
    assert "retry on the newer" in result.reason
    assert "OLD-FACTS-1234" in (result.summary or "")
    assert len(summarizer.requests) == 2


async def test_result_not_smaller_keeps_the_original() -> None:
    summarizer = ScriptedSummarizer(["verbose " * 2_000])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=5)
    history = _tool_head(6)
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
    history = _plain(9)
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
    resumed = await engine.compress(history + _plain(4))
    assert resumed.outcome is Outcome.OK
    assert engine.state.paused_at_tokens is None


async def test_a_manual_compaction_lifts_the_pause() -> None:
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=4)
    engine.state.paused_at_tokens, engine.state.ineffective_auto_compactions = 6_000, 2
    manual = await engine.compress(_plain(9), force=True)
    assert manual.outcome is Outcome.OK
    assert engine.state.paused_at_tokens is None
    assert engine.state.ineffective_auto_compactions == 0
    assert engine.should_compress(6_000)


async def test_effective_compaction_resets_the_ineffective_count() -> None:
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=4)
    engine.state.ineffective_auto_compactions = 1
    engine.update_from_usage(Usage(input_tokens=6_000))
    await engine.compress(_plain(9))
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


async def test_protect_last_n_keeps_at_most_half_the_threshold() -> None:
    # 12 messages of ~600 tokens; protect_last_n=10 would keep 6,000 tokens, over half the 5,000 threshold
    history = _plain(12)
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=10)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.OK
    kept_tail = [o for o in result.origin if o is not None and o >= 2]
    assert sum(count_tokens(history[o]) for o in kept_tail) <= engine.threshold_tokens // 2
    assert len(kept_tail) >= 1
    assert kept_tail[-1] == 11


# -- tool-pair repair, accounting, purity --------------------------------------------------------------


async def test_orphan_results_become_text_and_lost_results_are_stubbed() -> None:
    history = [
        *_plain(6),
        call(("lost", "fetch")),
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "never mind that"},
                {"type": "tool_result", "tool_use_id": "ghost", "content": "from a call that is gone"},
            ],
        },
        assistant("ok"),
        user("and?"),
        call(("pending", "fetch")),
    ]
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=5)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.OK
    assert result.stubbed_tool_ids == ("lost",)
    flat = [b for m in result.messages for b in blocks_of(m)]
    assert {"type": "tool_result", "tool_use_id": "lost", "content": REMOVED_RESULT} in flat
    assert all(b.get("tool_use_id") != "ghost" for b in flat)
    assert any(str(b.get("text", "")).startswith(ORPHAN_PREFIX) for b in flat)
    assert result.messages[-1] == history[-1]  # a call awaiting its result is not a lost one
    _assert_valid_pairs(result.messages[:-1])


async def test_removed_and_kept_partition_the_input_and_input_is_not_mutated() -> None:
    history = conversation(15, tokens_per_message=300)
    snapshot = copy.deepcopy(history)
    result = await make(context_length=20_000, protect_last_n=6).compress(history, force=True)
    kept = [o for o in result.origin if o is not None]
    assert sorted(kept + list(result.removed_indices)) == list(range(len(history)))
    assert history == snapshot
    assert result.tokens_after == sum(count_tokens(m) for m in result.messages)
    assert result.tokens_before == sum(count_tokens(m) for m in history)
    assert result.tokens_after < result.tokens_before
    assert result.summary_usage is not None


def test_repair_gives_lost_results_a_message_of_their_own_between_two_assistant_turns() -> None:
    broken = [user("go"), call(("x", "ls"), ("y", "ls")), assistant("where did the output go?"), user("?")]
    repaired, report = repair_tool_pairs(broken)
    assert report.stubbed_use_ids == ("x", "y")
    assert report.inserted_at == (2,)
    assert [m["role"] for m in repaired] == ["user", "assistant", "user", "assistant", "user"]
    assert tool_result_ids(repaired[2]) == ["x", "y"]
    assert broken[2] == assistant("where did the output go?")


def test_repair_keeps_an_orphaned_result_as_text() -> None:
    broken = [user("go"), assistant("hm"), results(("ghost", "old")), assistant("ok")]
    repaired, report = repair_tool_pairs(broken)
    assert report.orphaned_result_ids == ("ghost",)
    assert repaired[2] == {"role": "user", "content": [{"type": "text", "text": f"{ORPHAN_PREFIX} old"}]}


def test_engine_name_and_exports() -> None:
    assert ContextCompressor.name == "compressor"
    assert FRAMING.startswith(SUMMARY_PREFIX)
    assert not is_summary_message(user("hello [CONTEXT COMPACTION]"))


def _assert_alternating(messages: list) -> None:  # type: ignore[type-arg]
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles


def _assert_valid_pairs(messages: list) -> None:  # type: ignore[type-arg]
    for i, message in enumerate(messages):
        ids = tool_result_ids(message)
        if ids:
            assert i > 0
            assert messages[i - 1]["role"] == "assistant"
            used = {b["id"] for b in blocks_of(messages[i - 1]) if b.get("type") == "tool_use"}
            assert set(ids) <= used
        if message["role"] == "assistant" and i + 1 < len(messages):
            calls = {b["id"] for b in blocks_of(message) if b.get("type") == "tool_use"}
            assert calls <= set(tool_result_ids(messages[i + 1]))

"""The compressor's defaults, boundaries, pruning, role rules, iterative updates and accounting."""

from __future__ import annotations

import copy
import itertools

import pytest

from agent.compaction.compressor import SUMMARY_PREFIX, ContextCompactor, is_summary_message
from agent.compaction.engine import EngineState, Outcome
from agent.compaction.prompt import FRAMING
from agent.messages import PRUNED_MARKER
from agent.types import blocks_of
from agent.usage import Usage
from tests.agent.compressor_support import (
    ScriptedSummarizer,
    assert_valid_pairs,
    assistant,
    call,
    conversation,
    count_tokens,
    make,
    pad,
    plain,
    results,
    summary_blocks,
    tool_head,
    user,
)

# -- the budget's worked numbers ------------------------------------------------------------------------


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
    # 6 messages from the end lands on a tool-result message; its call comes along, and so does the
    # ask the call works on (the tail opens with a user message)
    assert kept_tail == list(range(40, 48))
    assert result.removed_indices == tuple(range(3, 40))


async def test_token_budget_dominates_a_small_protect_last_n() -> None:
    history = conversation(30, tokens_per_message=20)  # ~24 tokens per message
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=1)  # 500-token tail budget
    result = await engine.compress(history, force=True)
    tail = [o for o in result.origin if o is not None and o >= 3]
    assert 15 <= len(tail) <= 21
    # within the budget, but for the ask that opens it
    assert history[tail[0]]["role"] == "user"
    assert sum(count_tokens(history[i]) for i in tail[1:]) <= 500


async def test_protect_last_n_keeps_at_most_half_the_threshold() -> None:
    # 12 messages of ~600 tokens; protect_last_n=10 would keep 6,000 tokens, over half the 5,000 threshold
    history = plain(12)
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=10)
    result = await engine.compress(history, force=True)
    assert result.outcome is Outcome.OK
    kept_tail = [o for o in result.origin if o is not None and o >= 2]
    assert sum(count_tokens(history[o]) for o in kept_tail) <= engine.threshold_tokens // 2
    assert len(kept_tail) >= 1
    assert kept_tail[-1] == 11


async def test_tail_never_starts_with_a_tool_result_cut_off_from_its_call() -> None:
    history = [user(pad("start", 300)), assistant(pad("ok", 300))]
    history += [user(pad("more", 300)), assistant(pad("sure", 300)), user("grep it all")]
    for i in range(5):
        history += [call((f"c{i}", "grep")), results((f"c{i}", pad(f"out {i}", 150)))]
    history += [assistant(pad("done", 300)), user("next?")]
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=3)
    result = await engine.compress(history, force=True)
    # the last 3 messages begin with the result of c4: neither it nor its call (a reply) may open the
    # tail, which starts at the ask the calls work on (the whole tool work fits in the tail's cap)
    assert result.origin == (0, 1, *range(4, 17))
    assert result.removed_indices == (2, 3)
    assert blocks_of(result.messages[2])[-1]["text"] == "grep it all"
    assert_valid_pairs(result.messages)


async def test_a_tool_loop_too_big_for_the_tail_is_summarized_whole_up_to_the_next_ask() -> None:
    history = [user(pad("start", 300)), assistant(pad("ok", 300)), user("grep it all")]
    for i in range(5):
        history += [call((f"c{i}", "grep")), results((f"c{i}", pad(f"out {i}", 600)))]
    history += [assistant(pad("done", 300)), user("next?")]
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=3)
    result = await engine.compress(history, force=True)
    # keeping the loop's ask would add ~3,000 tokens of tool output to the tail (over the 2,500 cap):
    # the ask and its whole loop are summarized instead, and the tail opens with the next ask
    assert result.origin == (0, 1, 14)
    assert result.removed_indices == tuple(range(2, 14))
    assert_valid_pairs(result.messages)


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


async def test_a_tail_never_opens_with_the_reply_to_a_summarized_question() -> None:
    history = plain(9)  # u a | u a | u a u a u: the last 4 would open with a reply
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
    assert result.origin == (0, 1, 4, 5, 6, 7, 8)  # the question comes along with its reply
    merged = blocks_of(result.messages[2])
    assert merged[0]["text"].startswith(FRAMING)
    assert merged[1]["text"] == history[4]["content"]


async def test_summary_merges_into_the_tails_first_user_message_after_an_assistant_head() -> None:
    history = plain(9)
    result = await make(context_length=10_000, target_ratio=0.10, protect_last_n=3).compress(
        history, force=True
    )
    assert result.origin == (0, 1, 6, 7, 8)
    merged = blocks_of(result.messages[2])
    assert merged[0]["text"].startswith(SUMMARY_PREFIX)
    assert merged[1]["text"] == history[6]["content"]  # the user's own words follow unchanged
    assert result.summary_role == "user"
    _assert_alternating(result.messages)


async def test_summary_stands_alone_after_the_heads_tool_results_when_the_tail_opens_with_a_question() -> (
    None
):
    history = tool_head(6)  # u call res | a | u a u a u: the last 4 would open with a reply
    result = await make(context_length=10_000, target_ratio=0.10, protect_last_n=4).compress(
        history, force=True
    )
    assert result.origin == (0, 1, 2, None, 4, 5, 6, 7, 8)
    assert blocks_of(result.messages[2]) == blocks_of(history[2])  # the head's results, untouched
    assert is_summary_message(result.messages[3])
    assert result.summary_role == "assistant"
    _assert_alternating(result.messages)
    assert_valid_pairs(result.messages)


async def test_summary_stands_alone_as_assistant_between_two_user_messages() -> None:
    history = tool_head(6)
    result = await make(context_length=20_000, target_ratio=0.10, protect_last_n=5).compress(
        history, force=True
    )
    assert result.origin == (0, 1, 2, None, 4, 5, 6, 7, 8)
    assert result.summary_role == "assistant"
    assert result.messages[3]["role"] == "assistant"
    _assert_alternating(result.messages)


async def test_each_compaction_is_counted() -> None:
    engine = make(context_length=10_000, target_ratio=0.10, protect_last_n=4)
    first = await engine.compress(plain(9), force=True)
    assert engine.state.compression_count == 1
    second = await engine.compress(
        [*first.messages, assistant(pad("x", 600)), user(pad("y", 600))], force=True
    )
    assert second.outcome is Outcome.OK
    assert engine.state.compression_count == 2


# -- iterative update and focus ----------------------------------------------------------------------


async def test_later_compaction_updates_the_previous_summary_sent_exactly_once() -> None:
    summarizer = ScriptedSummarizer(["## Goal\nFIRST-SUMMARY-7f3", "## Goal\nSECOND-SUMMARY-9c1"])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    first = await engine.compress(plain(9), force=True)
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
        plain(9), force=True
    )
    fresh = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4, state=EngineState())
    await fresh.compress([*first.messages, assistant(pad("a9", 600)), user(pad("u10", 600))], force=True)
    assert summarizer.requests[1].previous_summary == "## Goal\nFIRST-SUMMARY-7f3"
    assert summarizer.requests[1].instructions.count("FIRST-SUMMARY-7f3") == 1


async def test_summary_merged_into_the_head_is_replaced_not_duplicated() -> None:
    summarizer = ScriptedSummarizer(["ONE-aa", "TWO-bb"])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    first = await engine.compress(tool_head(6), force=True)
    grown = [*first.messages, assistant(pad("a7", 600)), user(pad("u8", 600))]
    second = await engine.compress(grown, force=True)
    assert second.outcome is Outcome.OK
    texts = [t for _, t in summary_blocks(second.messages)]
    assert len(texts) == 1
    assert texts[0].endswith("TWO-bb")
    assert summarizer.requests[1].instructions.count("ONE-aa") == 1


@pytest.mark.parametrize(
    "echoed",
    [
        FRAMING + "\n\n## Goal\nECHO-1",
        f"{FRAMING}\n\n{FRAMING}\n\n## Goal\nECHO-1",
        "[CONTEXT COMPACTION] Summary of the earlier conversation:\n\n## Goal\nECHO-1",
        "[CONTEXT COMPACTION]\n## Goal\nECHO-1",
    ],
    ids=["framing", "framing twice", "paraphrased", "prefix only"],
)
async def test_a_framing_the_summary_model_echoes_is_not_framed_twice(echoed: str) -> None:
    engine = make(ScriptedSummarizer([echoed]), context_length=10_000, target_ratio=0.10, protect_last_n=4)
    result = await engine.compress(plain(9), force=True)
    assert result.outcome is Outcome.OK
    assert result.summary == "## Goal\nECHO-1"
    assert engine.state.previous_summary == "## Goal\nECHO-1"
    [(_, text)] = summary_blocks(result.messages)
    assert text == FRAMING + "\n\n## Goal\nECHO-1"
    assert text.count(SUMMARY_PREFIX) == 1


async def test_a_summary_stored_framed_twice_is_read_back_once() -> None:
    summarizer = ScriptedSummarizer()
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    doubled = assistant(f"{FRAMING}\n\n{FRAMING}\n\n## Goal\nOLD-2b")
    history = [*plain(2), doubled, *plain(9)[3:]]
    await engine.compress(history, force=True)
    assert summarizer.requests[0].previous_summary == "## Goal\nOLD-2b"


async def test_a_summary_that_is_only_an_echoed_framing_is_unusable() -> None:
    summarizer = ScriptedSummarizer([FRAMING, FRAMING])
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    result = await engine.compress(plain(9), force=True)
    assert result.outcome is Outcome.DEGRADED
    assert "empty summary" in result.reason


async def test_focus_reaches_the_summarizer() -> None:
    summarizer = ScriptedSummarizer()
    engine = make(summarizer, context_length=10_000, target_ratio=0.10, protect_last_n=4)
    await engine.compress(plain(9), focus="the billing migration", force=True)
    request = summarizer.requests[0]
    assert request.focus == "the billing migration"
    assert "the billing migration" in request.instructions
    assert request.max_tokens == 500  # ceiling min(10K x 0.05, 12K) wins over the 2K floor


# -- accounting, purity --------------------------------------------------------------------------------


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


def test_engine_name_and_exports() -> None:
    assert ContextCompactor.name == "compressor"
    assert FRAMING.startswith(SUMMARY_PREFIX)
    assert not is_summary_message(user("hello [CONTEXT COMPACTION]"))


def _assert_alternating(messages: list) -> None:  # type: ignore[type-arg]
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles

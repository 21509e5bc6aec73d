"""Invariants of `compress` over random valid histories with tool calls, on the ok and degraded paths."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent.compaction.compressor import ContextCompactor
from agent.compaction.engine import CompactionConfig, CompactionResult, Outcome
from agent.compaction.prompt import frame, is_summary_block
from agent.errors import SummarizerError
from agent.messages import PRUNE_MIN_CHARS, PRUNED_MARKER, tool_result_text
from agent.types import Block, Message, blocks_of, tool_result_ids, tool_use_ids
from agent.usage import Usage
from gateway.compaction.request_window import build_window
from tests.agent.compressor_support import ScriptedSummarizer, assistant, call, count_tokens, results, user

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Alternating user/assistant turns; some replies call 1-3 tools over 0-3 rounds, results of any size."""
    sizes = st.integers(min_value=0, max_value=3_000)
    out: list[Message] = []
    next_id = 0
    n_turns = draw(st.integers(min_value=1, max_value=12))
    for turn in range(n_turns):
        out.append(user(f"ask {turn} " + "u" * draw(sizes)))
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            ids = [f"t{next_id + j}" for j in range(draw(st.integers(min_value=1, max_value=3)))]
            next_id += len(ids)
            text = draw(st.one_of(st.none(), st.text(min_size=1, max_size=40)))
            out.append(call(*[(i, f"tool_{i}") for i in ids], text=text))
            out.append(results(*[(i, f"out {i} " + "r" * draw(sizes)) for i in ids]))
        if turn < n_turns - 1 or draw(st.booleans()):
            out.append(assistant(f"reply {turn} " + "a" * draw(sizes)))
    return out


def engines(summarizer: ScriptedSummarizer) -> st.SearchStrategy[ContextCompactor]:
    return st.builds(
        lambda ctx, ratio, last_n: ContextCompactor(
            context_length=ctx,
            config=CompactionConfig(target_ratio=ratio, protect_last_n=last_n),
            summarizer=summarizer,
            count_tokens=count_tokens,
        ),
        st.sampled_from([4_000, 20_000, 200_000]),
        st.floats(min_value=0.0, max_value=1.0),
        st.integers(min_value=1, max_value=10),
    )


def head_size(messages: list[Message]) -> int:
    if len(messages) == 1:
        return 1
    return 3 if tool_use_ids(messages[1]) else 2


def newest_ask(messages: list[Message]) -> int:
    return max(i for i, m in enumerate(messages) if m["role"] == "user" and not tool_result_ids(m))


def own_blocks(message: Message) -> list[Block]:
    return [b for b in blocks_of(message) if not is_summary_block(b)]


def check(before: list[Message], result: CompactionResult) -> None:
    out = result.messages
    event(f"outcome: {result.outcome.value}")
    if result.outcome is Outcome.ABORTED:
        assert out == before
        assert result.tokens_after == result.tokens_before
        return
    assert result.tokens_after < result.tokens_before
    kept = [o for o in result.origin if o is not None]
    assert sorted(kept + list(result.removed_indices)) == list(range(len(before)))
    assert len(result.origin) == len(out)
    for a, b in itertools.pairwise(out):
        assert a["role"] != b["role"]
    for i, message in enumerate(out):
        ids = tool_result_ids(message)
        if ids:
            assert out[i - 1]["role"] == "assistant"
            assert set(ids) <= set(tool_use_ids(out[i - 1]))
        if tool_use_ids(message) and i + 1 < len(out):
            assert set(tool_use_ids(message)) <= set(tool_result_ids(out[i + 1]))
    assert sum(1 for m in out for b in blocks_of(m) if is_summary_block(b)) == 1
    # the first exchange is intact (old tool output may be cleared, nothing else changes)
    head = head_size(before)
    assert result.origin[:head] == tuple(range(head))
    for original, now in zip(before[:head], out[:head], strict=True):
        assert original["role"] == now["role"]
        for was, block in zip(own_blocks(original), own_blocks(now), strict=True):
            if block != was:
                assert block == {**was, "content": PRUNED_MARKER}
                assert len(tool_result_text(was)) > PRUNE_MIN_CHARS
    # the newest user ask is kept word for word, and nothing the user said later exists
    ask = newest_ask(before)
    position = result.origin.index(ask)
    assert own_blocks(out[position]) == blocks_of(before[ask])
    assert all(o is None or o > ask for o in result.origin[position + 1 :])


def check_tail_opens_with_a_question(before: list[Message], result: CompactionResult) -> None:
    """The kept tail starts right after the summarized middle, with a user message: never with a reply
    whose question went into the summary."""
    if result.outcome is Outcome.ABORTED:
        return
    out = result.messages
    [pos] = [i for i, m in enumerate(out) if any(is_summary_block(b) for b in blocks_of(m))]
    first = pos + 1 if result.origin[pos] is None else pos
    if first == len(out):
        return
    opening = result.origin[first]
    assert opening is not None
    assert before[opening]["role"] == "user"
    assert opening - 1 in result.removed_indices  # it follows the middle, it is not the head


def check_pending_kept(before: list[Message], result: CompactionResult, keep_from: int) -> None:
    """Every message from the first one awaiting a reply on stays in the window, word for word."""
    assert not any(i >= keep_from for i in result.removed_indices)
    for i in range(keep_from, len(before)):
        position = result.origin.index(i)
        assert own_blocks(result.messages[position]) == blocks_of(before[i])


def continue_chat(messages: list[Message]) -> list[Message]:
    tail = [assistant("noted " + "n" * 400)] if messages[-1]["role"] == "user" else []
    return [*messages, *tail, user("and another thing " + "m" * 800)]


@SETTINGS
@given(data=st.data(), history=histories())
def test_compress_keeps_the_history_valid(data: st.DataObject, history: list[Message]) -> None:
    summarizer = ScriptedSummarizer(default="## Goal\nKeep going.")
    engine = data.draw(engines(summarizer))
    result = asyncio.run(engine.compress(history, force=True))
    assert result.outcome is not Outcome.DEGRADED
    check(history, result)
    check_tail_opens_with_a_question(history, result)
    if result.outcome is Outcome.OK:
        grown = continue_chat(result.messages)
        again = asyncio.run(engine.compress(grown, force=True))
        check(grown, again)
        check_tail_opens_with_a_question(grown, again)


@SETTINGS
@given(data=st.data(), history=histories())
def test_messages_awaiting_a_reply_are_never_summarized(data: st.DataObject, history: list[Message]) -> None:
    asks = [i for i, m in enumerate(history) if m["role"] == "user" and not tool_result_ids(m)]
    keep_from = data.draw(st.sampled_from(asks))
    engine = data.draw(engines(ScriptedSummarizer(default="## Goal\nKeep going.")))
    result = asyncio.run(engine.compress(history, force=True, keep_from=keep_from))
    event(f"keep_from in the head: {keep_from < head_size(history)}; outcome: {result.outcome.value}")
    check(history, result)
    check_tail_opens_with_a_question(history, result)
    check_pending_kept(history, result, keep_from)


@SETTINGS
@given(
    data=st.data(), history=histories(), failure=st.sampled_from(["empty", "error", "retry ok", "two parts"])
)
def test_degraded_compaction_keeps_the_history_valid(
    data: st.DataObject, history: list[Message], failure: str
) -> None:
    error = SummarizerError("boom", too_small=True)
    summarizer = {
        "empty": ScriptedSummarizer(default=""),
        "error": ScriptedSummarizer(default=error),
        "retry ok": ScriptedSummarizer(script=[SummarizerError("boom")], default="## Goal\nNewer half."),
        "two parts": ScriptedSummarizer(script=[error], default="## Goal\nIn two parts."),
    }[failure]
    engine = data.draw(engines(summarizer))
    result = asyncio.run(engine.compress(history, force=True))
    if failure != "two parts":
        assert result.outcome is not Outcome.OK
    check(history, result)
    check_tail_opens_with_a_question(history, result)
    if result.outcome is Outcome.DEGRADED:
        grown = continue_chat(result.messages)
        check(grown, asyncio.run(engine.compress(grown, force=True)))


# -- stored sessions as the gateway compacts them: one message per row -------------------------------


@dataclass(frozen=True)
class Row:
    id: int
    role: str
    content: Any
    pruned: bool = False


@st.composite
def stored_sessions(draw: st.DrawFn) -> list[Message]:
    """A group session as stored: runs of chatter rows (several user rows in a row), replies, tool
    rounds, and sometimes a summary left by an earlier compaction; one message per row."""
    sizes = st.integers(min_value=20, max_value=900)
    rows: list[Message] = [user("first ask " + "f" * draw(st.integers(0, 200)))]
    if draw(st.booleans()):
        rows.append(assistant("first reply"))
    next_id = 0
    for turn in range(draw(st.integers(min_value=2, max_value=10))):
        if draw(st.integers(0, 4)) == 0:
            rows.append(assistant(frame(f"## Goal\nearlier summary {turn}")))
        for n in range(draw(st.integers(min_value=1, max_value=8))):
            rows.append(user(f"[speaker {n % 3}] chatter {turn}.{n} " + "c" * draw(sizes)))
        for _ in range(draw(st.integers(min_value=0, max_value=2))):
            ids = [f"t{next_id}"]
            next_id += 1
            rows.append(call(*[(i, f"tool_{i}") for i in ids]))
            rows.append(results(*[(i, f"out {i} " + "r" * draw(sizes)) for i in ids]))
        rows.append(assistant(f"reply {turn} " + "a" * draw(sizes)))
    rows.append(user("@bot the newest question"))
    return rows


def merged(messages: list[Message]) -> list[Message]:
    """What the gateway's next request is built from the stored result: same-role neighbours merged."""
    items = build_window([Row(i, m["role"], blocks_of(m)) for i, m in enumerate(messages)])
    return [i.message for i in items]


@SETTINGS
@given(data=st.data(), session=stored_sessions())
def test_a_stored_session_above_the_threshold_always_has_a_middle(
    data: st.DataObject, session: list[Message]
) -> None:
    context = data.draw(st.sampled_from([6_000, 12_000, 20_000]))
    engine = ContextCompactor(
        context_length=context,
        config=CompactionConfig(protect_last_n=data.draw(st.integers(min_value=1, max_value=20))),
        summarizer=ScriptedSummarizer(default="## Goal\nKeep going."),
        count_tokens=count_tokens,
    )
    tokens = sum(count_tokens(m) for m in session)
    engine.update_from_usage(Usage(input_tokens=tokens))
    # the newest question always awaits a reply; sometimes the chatter right before it does too
    chatter = len(session) - 1
    while (
        chatter > 1 and session[chatter - 1]["role"] == "user" and not tool_result_ids(session[chatter - 1])
    ):
        chatter -= 1
    keep_from = data.draw(st.integers(min_value=chatter, max_value=len(session) - 1))
    result = asyncio.run(engine.compress(session, keep_from=keep_from))
    above = tokens >= engine.threshold_tokens
    event(f"above threshold: {above}; outcome: {result.outcome.value}")
    if not above:
        assert result.outcome is Outcome.ABORTED
        return
    assert result.outcome is Outcome.OK, result.reason
    assert result.tokens_after < result.tokens_before
    kept = [o for o in result.origin if o is not None]
    assert sorted(kept + list(result.removed_indices)) == list(range(len(session)))
    assert result.origin[0] == 0  # the first message is never summarized
    assert result.origin[-1] == len(session) - 1  # nor the newest ask
    check_pending_kept(session, result, keep_from)
    check_tail_opens_with_a_question(session, result)
    after = merged(result.messages)
    for a, b in itertools.pairwise(after):
        assert a["role"] != b["role"]
    for i, message in enumerate(after):
        ids = tool_result_ids(message)
        if ids:
            assert set(ids) <= set(tool_use_ids(after[i - 1]))
    assert sum(1 for m in after for b in blocks_of(m) if is_summary_block(b)) == 1

"""`context.engine: server`: the request carries the API's compaction edit, a compaction the API made is
taken into the window (everything before it archived, once), and the built-in compressor covers the rest."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.compaction.engine import CompactionConfig, Outcome, SummaryRequest, SummaryResponse
from agent.compaction.registry import resolve_engine
from agent.compaction.server import BETA, EDIT_TYPE, MIN_TRIGGER_TOKENS, ServerCompaction
from agent.llm import LLMResponse
from agent.loop import Entry, LoopConfig
from agent.messages import COMPACTION_TEXT_PREFIX, NO_SUMMARY, compaction_on_wire
from agent.models import lookup_model
from agent.tokens import Calibration, estimate_message
from agent.tools.current_time import current_time_tool
from agent.tools.registry import ToolRegistry
from agent.types import Message, text_of
from agent.usage import Usage
from tests.agent.test_loop import Hooks, ScriptedLLM, reply, turn, user

SUMMARY = "## Goal\nPlan the trip to Lisbon; code LIS-4471 agreed."


def compaction_message(text: str = "Sure, here is the plan.", summary: str | None = SUMMARY) -> Message:
    return {
        "role": "assistant",
        "content": [{"type": "compaction", "content": summary}, {"type": "text", "text": text}],
    }


async def _summarize(request: SummaryRequest) -> SummaryResponse:
    return SummaryResponse(text="## Goal\nbuilt-in summary of the middle", model="claude-haiku-4-5")


def engine(window: int = 200_000, threshold: float = 0.5) -> ServerCompaction:
    return ServerCompaction(
        context_length=window,
        config=CompactionConfig(threshold=threshold, protect_last_n=2),
        summarizer=_summarize,
        count_tokens=estimate_message,
    )


def chat(n: int, words: int = 40) -> list[Message]:
    return [
        user(f"message {i} " + "words " * words)
        if i % 2 == 0
        else {"role": "assistant", "content": f"answer {i}"}
        for i in range(n)
    ]


def test_it_is_a_builtin_engine() -> None:
    assert resolve_engine("server") is ServerCompaction


def test_requests_carry_the_compaction_edit_at_the_threshold() -> None:
    options = engine(200_000, 0.5).request_options()
    assert options == (
        {"edits": [{"type": EDIT_TYPE, "trigger": {"type": "input_tokens", "value": 100_000}}]},
        (BETA,),
    )


def test_below_the_apis_minimum_trigger_the_builtin_compressor_keeps_the_threshold() -> None:
    small = engine(60_000, 0.5)  # 30,000 < the API's 50,000 minimum
    assert small.request_options() is None
    assert small.should_compress(31_000)
    assert MIN_TRIGGER_TOKENS == 50_000
    large = engine(200_000, 0.5)
    assert not large.should_compress(150_000)  # the API compacts inside the call


async def test_a_compaction_the_api_made_is_adopted_once() -> None:
    eng = engine()
    window = [*chat(6), compaction_message()]
    result = await eng.compress(window)
    assert result.outcome is Outcome.OK
    assert result.removed_indices == tuple(range(6))
    assert result.messages == [window[6]]
    assert result.origin == (6,)
    assert result.summary is None
    assert result.summary_usage is None
    assert eng.state.previous_summary == SUMMARY
    assert eng.state.compression_count == 1
    # the next compaction over the same window (e.g. /compact) is the built-in compressor's
    later = [user("(earlier conversation continues)"), compaction_message(), *chat(12, words=6_000)]
    again = await eng.compress(later, force=True)
    assert again.summary is not None
    assert "built-in summary" in again.summary


async def test_a_failed_compaction_is_not_adopted() -> None:
    eng = engine()
    window = [*chat(6), compaction_message(summary=None)]
    result = await eng.compress(window)  # below the threshold: the built-in compressor declines
    assert result.outcome is Outcome.ABORTED
    assert not result.removed_indices
    assert eng.state.adopted_compaction is None


def test_the_newest_compaction_block_travels_verbatim_only_with_the_beta() -> None:
    older = compaction_message("old", summary="older summary")
    messages = [
        user("(earlier conversation continues)"),
        older,
        user("next"),
        compaction_message(),
        user("q"),
    ]
    wired = compaction_on_wire(messages, server_compaction=True)
    assert wired[3] == messages[3]
    assert wired[1]["content"][0] == {"type": "text", "text": f"{COMPACTION_TEXT_PREFIX}\nolder summary"}
    plain = compaction_on_wire(messages, server_compaction=False)
    assert not any(b.get("type") == "compaction" for m in plain for b in m["content"] if isinstance(b, dict))
    assert SUMMARY in text_of(plain[3])
    only_block: Message = {"role": "assistant", "content": [{"type": "compaction", "content": None}]}
    failed = compaction_on_wire([user("a"), only_block], server_compaction=False)
    assert failed[1]["content"] == [{"type": "text", "text": NO_SUMMARY}]
    unchanged = messages[:1]
    assert compaction_on_wire(unchanged, server_compaction=True) is unchanged  # nothing to rewrite


def test_the_summary_is_the_messages_text() -> None:
    assert SUMMARY in text_of(compaction_message())


async def test_the_loop_takes_the_apis_compaction_into_the_window() -> None:
    window = [Entry(m, i + 1) for i, m in enumerate(chat(5, words=1_000))]
    sent = sum(estimate_message(e.message) for e in window)
    compaction_usage = Usage(0, 300, 0, int(sent * 1.2))
    answer = reply("Here is the plan.", usage=Usage(400, 20, 0, 0))
    answer = LLMResponse(
        [{"type": "compaction", "content": SUMMARY}, *answer.content],
        "end_turn",
        answer.usage,
        answer.model,
        compaction_usage=compaction_usage,
    )
    llm, hooks, eng = ScriptedLLM(answer), Hooks(), engine()
    calibration = Calibration("claude-sonnet-4-6")
    cfg = LoopConfig(model=lookup_model("claude-sonnet-4-6"), max_tokens=1_000, calibration=calibration)
    result = await turn(llm, hooks=hooks, engine=eng, window=window, cfg=cfg)
    (request,) = llm.requests
    assert request.betas == (BETA,)
    assert request.context_management is not None
    (compacted, _, trigger) = hooks.compactions[0]
    assert trigger == "server"
    assert compacted.removed_indices == tuple(range(5))
    assert [e.message["content"][0]["type"] for e in result.window] == ["compaction"]  # type: ignore[index]
    assert result.reply_text == "Here is the plan."
    # the calibration learns from the iteration that saw the prompt as sent, not from the summary's
    assert calibration.samples == 1
    assert calibration.factor > 1.1
    assert eng.state.last_prompt_tokens == 400


@pytest.mark.parametrize("kind", ["compressor", "server"])
async def test_the_builtin_engines_send_no_edit_below_the_minimum(kind: str) -> None:
    eng: Any = resolve_engine(kind)(
        context_length=20_000,
        config=CompactionConfig(),
        summarizer=_summarize,
        count_tokens=estimate_message,
    )
    llm = ScriptedLLM(reply("hello"))
    await turn(llm, engine=eng)
    (request,) = llm.requests
    assert request.context_management is None
    assert request.betas == ()


async def test_a_compaction_in_a_tool_call_is_taken_in_once_its_results_are_stored() -> None:
    clock = current_time_tool(lambda: datetime(2026, 3, 14, 15, 9, tzinfo=UTC))
    call = reply(tools=[("t1", clock.name, {})])
    compacting = LLMResponse(
        [{"type": "compaction", "content": SUMMARY}, *call.content],
        "tool_use",
        Usage(400, 20),
        call.model,
        compaction_usage=Usage(5_000, 300),
    )
    llm, hooks, eng = ScriptedLLM(compacting, reply("It is 15:09.")), Hooks(), engine()
    window = [Entry(m, i + 1) for i, m in enumerate(chat(5))]
    result = await turn(llm, hooks=hooks, engine=eng, window=window, tools=ToolRegistry([clock]))
    (compacted, _, trigger) = hooks.compactions[0]
    assert trigger == "server"
    # the window it adopted ends with the tool's results, so the next request alternates roles
    assert compacted.messages[-1]["content"][0]["type"] == "tool_result"  # type: ignore[index]
    roles = [m["role"] for m in llm.requests[1].messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert result.reply_text == "It is 15:09."

"""The loop on the models that think adaptively: refusals, replies that run out of room while thinking,
and progress between tool calls."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agent.llm import LLMRequest, LLMResponse
from agent.loop import Conversation, Entry, LoopConfig, run_turn
from agent.models import lookup_model
from agent.tokens import Calibration
from agent.tools.current_time import current_time_tool
from agent.tools.registry import ToolRegistry
from agent.types import Block
from agent.usage import Usage
from tests.agent.test_loop import SYSTEM, Hooks, KeepTail, ScriptedLLM, user

SONNET = lookup_model("claude-sonnet-5-5")
THINK: Block = {"type": "thinking", "thinking": "", "signature": "sig"}


def response(content: list[Block], stop: str, **extra: Any) -> LLMResponse:
    return LLMResponse(content, stop, Usage(1_000, 200), SONNET.name, 0.01, "req", **extra)


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    async def text(self, delta: str) -> None:
        self.events.append(("text", delta))

    async def progress(self, delta: str) -> None:
        self.events.append(("progress", delta))

    async def working(self, tools: Sequence[str]) -> None:
        self.events.append(("working", ",".join(tools)))


class StreamingLLM(ScriptedLLM):
    """Streams each scripted response: its thinking text as progress, its text as text."""

    async def stream(self, request: LLMRequest, on_text: Any, on_progress: Any = None) -> LLMResponse:
        answer = await self.create(request)
        for block in answer.content:
            if block["type"] == "thinking" and block["thinking"] and on_progress is not None:
                await on_progress(block["thinking"])
            elif block["type"] == "text":
                await on_text(block["text"])
        return answer


async def run(
    llm: ScriptedLLM, hooks: Hooks, *, stream: Sink | None = None, tools: ToolRegistry | None = None
) -> Any:
    engine = KeepTail()
    hooks.engine = engine
    config = LoopConfig(model=SONNET, calibration=Calibration(SONNET.name), max_tokens=16_000)
    window: list[Entry[Any]] = [Entry(user("help me with this"), 1)]
    return await run_turn(
        Conversation(
            llm=llm,
            engine=engine,
            window=window,
            system=SYSTEM,
            tools=tools or ToolRegistry(),
            config=config,
            stream=stream,
        ),
        hooks=hooks,
    )


async def test_requests_to_a_thinking_model_ask_for_progress_updates_and_never_turn_thinking_off() -> None:
    llm, hooks = ScriptedLLM(response([THINK, {"type": "text", "text": "Sure."}], "end_turn")), Hooks()
    await run(llm, hooks)
    request = llm.requests[0]
    assert request.thinking == {"type": "adaptive", "display": "updates"}
    assert "thinking-display-updates-2026-08-18" in request.betas
    # what these models refuse with a 400: no forced tool choice, sampling parameters or prefill
    fields = {f.name for f in dataclasses.fields(LLMRequest)}
    assert not fields & {"tool_choice", "temperature", "top_p", "top_k"}
    assert request.messages[-1]["role"] == "user"


async def test_a_refusal_is_not_kept_as_an_answer() -> None:
    refused = response(
        [{"type": "text", "text": "I can start by"}],
        "refusal",
        stop_details={"type": "refusal", "category": "cyber", "explanation": "exploit development"},
    )
    llm, hooks = ScriptedLLM(refused), Hooks()
    result = await run(llm, hooks)
    assert result.refusal == "cyber"
    assert result.reply_text == ""
    assert hooks.persisted == []  # nothing of the declined answer is stored
    assert [u[1] for u in hooks.usages] == ["reply"]  # the call is still accounted


async def test_a_reply_that_ran_out_of_room_while_thinking_is_asked_again_with_more_room() -> None:
    llm = ScriptedLLM(
        response([THINK], "max_tokens"),
        response([THINK, {"type": "text", "text": "Here is the plan."}], "end_turn"),
    )
    hooks = Hooks()
    result = await run(llm, hooks)
    assert result.reply_text == "Here is the plan."
    first, second = llm.requests
    assert second.max_tokens == min(first.max_tokens * 4, SONNET.max_output)
    assert second.output_config == {"effort": "medium"}  # one step below the API's default, high
    assert len(hooks.usages) == 2  # both calls accounted


async def test_thinking_only_twice_ends_with_an_empty_reply_and_its_stop_reason() -> None:
    llm = ScriptedLLM(response([THINK], "max_tokens"), response([THINK], "max_tokens"))
    hooks = Hooks()
    result = await run(llm, hooks)
    assert result.reply_text == ""
    assert result.stop_reason == "max_tokens"
    assert hooks.persisted == []


async def test_progress_written_before_a_tool_call_reaches_the_stream() -> None:
    progress: Block = {"type": "thinking", "thinking": "Let me check the time first.", "signature": "s1"}
    use: Block = {"type": "tool_use", "id": "toolu_1", "name": "current_time", "input": {}}
    llm = StreamingLLM(
        response([progress, use], "tool_use"),
        response([THINK, {"type": "text", "text": "It is noon."}], "end_turn"),
    )
    sink = Sink()
    tools = ToolRegistry([current_time_tool(lambda: datetime(2026, 11, 27, 12, tzinfo=UTC))])
    result = await run(llm, Hooks(), stream=sink, tools=tools)
    assert result.reply_text == "It is noon."
    assert sink.events[:2] == [("progress", "Let me check the time first."), ("working", "current_time")]
    assert ("text", "It is noon.") in sink.events


async def test_a_blank_text_block_before_a_tool_call_is_neither_sent_back_nor_stored() -> None:
    """The API refuses a text block of whitespace only in a request, and a stored message is read back
    without one: the answer goes into the history without it, so the turn's next call sends what the
    next turn reads back (the thinking after it stays bound)."""
    use: Block = {"type": "tool_use", "id": "toolu_1", "name": "current_time", "input": {}}
    llm = ScriptedLLM(
        response([THINK, {"type": "text", "text": "\n\n"}, use], "tool_use"),
        response([THINK, {"type": "text", "text": "It is noon."}], "end_turn"),
    )
    hooks = Hooks()
    tools = ToolRegistry([current_time_tool(lambda: datetime(2026, 11, 27, 12, tzinfo=UTC))])
    result = await run(llm, hooks, tools=tools)
    assert result.reply_text == "It is noon."
    assert [b["type"] for b in hooks.persisted[0]["content"]] == ["thinking", "tool_use"]
    assert [b["type"] for b in llm.requests[1].messages[1]["content"]] == ["thinking", "tool_use"]

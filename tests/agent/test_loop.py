"""The turn loop with scripted second implementations of its seams (LLM client, engine, hooks)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.caching.markers import CachedRequest, count_breakpoints
from agent.caching.plan import TurnCachePlan
from agent.compaction.engine import (
    CompactionConfig,
    CompactionResult,
    ContextEngine,
    Outcome,
    SummaryRequest,
    SummaryResponse,
)
from agent.errors import ContextOverflowError, LLMError
from agent.llm import LLMRequest, LLMResponse
from agent.loop import Compacted, Conversation, Entry, LoopConfig, TurnResult, run_turn
from agent.models import CacheTTL, lookup_model
from agent.tokens import CalibratedCounter, Calibration, estimate_message
from agent.tools.current_time import current_time_tool
from agent.tools.registry import Tool, ToolRegistry
from agent.types import Block, Message, text_of
from agent.usage import Usage

MODEL = lookup_model("claude-sonnet-4-6", context_override=20_000)
SYSTEM = "You are a helpful assistant."
NOTE = "[Note: earlier turns were compacted.]"
BASE_USAGE = Usage(1_000, 50)


def reply(
    text: str = "",
    *,
    tools: Sequence[tuple[str, str, dict[str, Any]]] = (),
    usage: Usage = BASE_USAGE,
) -> LLMResponse:
    content: list[Block] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in tools]
    return LLMResponse(content, "tool_use" if tools else "end_turn", usage, MODEL.name, 0.01, "req_1")


class ScriptedLLM:
    """LLMClient seam: answers in order; an LLMError in the script is raised instead."""

    def __init__(self, *answers: LLMResponse | LLMError | Callable[[LLMRequest], LLMResponse]) -> None:
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []

    async def create(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, LLMError):
            raise answer
        return answer(request) if callable(answer) else answer


async def _unused_summarizer(request: SummaryRequest) -> SummaryResponse:
    raise AssertionError("this engine summarizes without a model")


class KeepTail(ContextEngine):
    """A second ContextEngine: replaces everything but the last `keep` messages with one summary."""

    name = "keep-tail"

    def __init__(
        self,
        *,
        keep: int = 2,
        note: str | None = None,
        threshold: float = 0.5,
        count_tokens: Callable[[Message], int] = estimate_message,
    ) -> None:
        super().__init__(
            context_length=MODEL.context_window,
            config=CompactionConfig(threshold=threshold),
            summarizer=_unused_summarizer,
            count_tokens=count_tokens,
        )
        self.keep = keep
        self.note = note
        self.calls: list[tuple[list[Message], bool]] = []

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        size = prompt_tokens if prompt_tokens is not None else self.state.last_prompt_tokens
        return size is not None and size >= self.threshold_tokens

    async def compress(
        self, messages: Sequence[Message], *, focus: str | None = None, force: bool = False
    ) -> CompactionResult:
        msgs = list(messages)
        self.calls.append((msgs, force))
        cut = len(msgs) - self.keep
        if cut <= 0:
            return CompactionResult(msgs, tuple(range(len(msgs))), (), (), Outcome.ABORTED, "too short", 0, 0)
        summary: Message = {"role": "user", "content": f"[summary of {cut} messages]"}
        kept = msgs[cut:]
        return CompactionResult(
            messages=[summary, *kept],
            origin=(None, *range(cut, len(msgs))),
            removed_indices=tuple(range(cut)),
            pruned_indices=(),
            outcome=Outcome.OK,
            reason="kept the tail",
            tokens_before=sum(map(estimate_message, msgs)),
            tokens_after=sum(map(estimate_message, [summary, *kept])),
            summary=f"[summary of {cut} messages]",
            summary_role="user",
        )


class Hooks:
    """TurnHooks seam: an in-memory store with integer ids; compaction runs the turn's engine."""

    def __init__(self, start_id: int = 100) -> None:
        self.next_id = start_id
        self.engine: ContextEngine | None = None
        self.stored: dict[int, Message] = {}
        self.persisted: list[Message] = []
        self.compactions: list[tuple[CompactionResult, list[object | None], str]] = []
        self.usages: list[tuple[LLMResponse, str, object | None]] = []

    async def persist(self, messages: list[Message]) -> list[object]:
        refs: list[object] = []
        for message in messages:
            self.next_id += 1
            self.stored[self.next_id] = message
            self.persisted.append(message)
            refs.append(self.next_id)
        return refs

    async def compact(
        self, window: Sequence[Entry[object]], *, force: bool, why: str, server: bool = False
    ) -> Compacted[object] | None:
        assert self.engine is not None
        refs = [e.ref for e in window]
        result = await self.engine.compress([e.message for e in window], force=force)
        self.compactions.append((result, refs, "server" if server else "agent"))
        if not result.changed:
            return None
        new: list[Entry[object]] = []
        for message, origin in zip(result.messages, result.origin, strict=True):
            if origin is None:
                self.next_id += 1
                new.append(Entry(message, self.next_id))
            else:
                new.append(Entry(message, refs[origin]))
        note = self.engine.note if isinstance(self.engine, KeepTail) else None
        return Compacted(new, system=f"{SYSTEM}\n\n{note}" if note else None)

    async def usage(
        self, response: LLMResponse, *, purpose: str, last_ref: object | None, ttl: CacheTTL | None
    ) -> None:
        self.usages.append((response, purpose, last_ref))


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def config(**changes: Any) -> LoopConfig:
    base = LoopConfig(
        model=MODEL,
        calibration=Calibration(MODEL.name),
        max_tokens=1_000,
        max_iterations=5,
        tool_output_max_chars=1_000,
    )
    return dataclasses.replace(base, **changes)


async def turn(
    llm: ScriptedLLM,
    *,
    window: list[Entry] | None = None,
    engine: ContextEngine | None = None,
    hooks: Hooks | None = None,
    tools: ToolRegistry | None = None,
    cfg: LoopConfig | None = None,
    plan: TurnCachePlan | None = None,
) -> TurnResult[object]:
    hooks = hooks or Hooks()
    engine = engine or KeepTail()
    hooks.engine = engine
    conversation = Conversation(
        llm=llm,
        engine=engine,
        window=window if window is not None else [Entry(user("hi there"), 1)],
        system=SYSTEM,
        tools=tools or ToolRegistry(),
        config=cfg or config(),
    )
    if plan is not None:
        conversation = dataclasses.replace(conversation, cache_plan=plan)
    return await run_turn(conversation, hooks=hooks)


def texts(request: LLMRequest) -> list[str]:
    return [text_of(m) for m in request.messages]


async def test_plain_reply_is_persisted_and_accounted() -> None:
    llm, hooks = ScriptedLLM(reply("Hello!", usage=Usage(900, 12, 0, 100))), Hooks()
    engine = KeepTail()
    window = [Entry(user("hi there"), 1)]
    result = await turn(llm, hooks=hooks, engine=engine, window=window)
    assert result.reply_text == "Hello!"
    assert (result.iterations, result.stop_reason) == (1, "end_turn")
    assert hooks.persisted == [{"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]}]
    assert [(purpose, last) for _, purpose, last in hooks.usages] == [("reply", 1)]
    assert engine.state.last_prompt_tokens == 1_000  # input + cache read
    assert [e.ref for e in result.window] == [1, 101]
    assert window == [Entry(user("hi there"), 1)]  # the caller's list is not modified
    (request,) = llm.requests
    assert request.model == MODEL.name
    assert request.max_tokens == 1_000


async def test_cache_markers_follow_the_policy_and_can_be_switched_off() -> None:
    window = [
        Entry(user(f"m{i}") if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}, i) for i in range(9)
    ]
    registry = ToolRegistry([current_time_tool(lambda: datetime.now(UTC))])
    cached = ScriptedLLM(reply("ok"))
    await turn(cached, window=window, tools=registry)
    (request,) = cached.requests
    marked = CachedRequest(list(request.system), list(request.messages), list(request.tools), 0)
    assert count_breakpoints(marked) == 4
    assert "cache_control" in request.system[-1]
    plain = ScriptedLLM(reply("ok"))
    await turn(plain, window=window, tools=registry, plan=TurnCachePlan())
    assert "cache_control" not in repr(plain.requests[0])


async def test_tool_round_trip() -> None:
    clock = current_time_tool(lambda: datetime(2026, 3, 14, 15, 9, tzinfo=UTC))
    llm = ScriptedLLM(reply("Let me check.", tools=[("t1", "current_time", {})]), reply("It is 15:09."))
    hooks = Hooks()
    result = await turn(llm, hooks=hooks, tools=ToolRegistry([clock]))
    assert result.reply_text == "It is 15:09."
    assert result.iterations == 2
    assert [m["role"] for m in hooks.persisted] == ["assistant", "user", "assistant"]
    tool_result = hooks.persisted[1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result["tool_use_id"] == "t1"
    assert tool_result["content"].startswith("2026-03-14T15:09:00+00:00")
    assert "is_error" not in tool_result
    second = llm.requests[1]
    assert [t["name"] for t in second.tools] == ["current_time"]
    assert "2026-03-14T15:09:00+00:00" in texts(second)[-1]
    assert [last for _, _, last in hooks.usages] == [1, 102]


async def test_tool_errors_are_shown_to_the_model_as_error_results() -> None:
    async def broken(tool_input: dict[str, Any]) -> str:
        raise OSError("permission denied: /etc/shadow")

    registry = ToolRegistry([Tool("read", "read a file", {"type": "object"}, broken)])
    llm = ScriptedLLM(
        reply(tools=[("t1", "read", {"path": "/etc/shadow"}), ("t2", "nope", {})]), reply("Sorry.")
    )
    hooks = Hooks()
    result = await turn(llm, hooks=hooks, tools=registry)
    assert result.reply_text == "Sorry."
    results = hooks.persisted[1]["content"]
    assert [r["is_error"] for r in results] == [True, True]
    assert "permission denied" in results[0]["content"]
    assert "Unknown tool 'nope'" in results[1]["content"]


async def test_the_iteration_limit_stops_a_runaway_tool_loop() -> None:
    clock = current_time_tool(lambda: datetime(2026, 3, 14, tzinfo=UTC))
    llm = ScriptedLLM(*[reply(f"step {i}", tools=[(f"t{i}", "current_time", {})]) for i in range(3)])
    hooks = Hooks()
    result = await turn(llm, hooks=hooks, tools=ToolRegistry([clock]), cfg=config(max_iterations=3))
    assert len(llm.requests) == 3
    assert result.iterations == 3
    assert result.stop_reason == "max_iterations"
    assert result.reply_text == "step 2"
    assert hooks.persisted[-1]["content"][0]["type"] == "tool_result"  # every call got its result


async def test_long_tool_output_is_stored_whole_but_shown_truncated() -> None:
    big = "".join(f"line {i:05d}\n" for i in range(500))  # 5,500 chars

    async def dump(tool_input: dict[str, Any]) -> str:
        return big

    registry = ToolRegistry([Tool("dump", "dump a log", {"type": "object"}, dump)])
    llm = ScriptedLLM(reply(tools=[("t1", "dump", {})]), reply("done"))
    hooks = Hooks()
    await turn(llm, hooks=hooks, tools=registry, cfg=config(tool_output_max_chars=1_000))
    assert hooks.stored[102]["content"][0]["content"] == big
    shown = texts(llm.requests[1])[-1]
    assert big[:1_000] in shown
    assert big[1_000:1_100] not in shown
    assert (
        f"[output truncated: {len(big)} chars total; call recall with message_id=102 and offset=1000" in shown
    )


async def test_a_message_too_big_for_the_window_is_shown_as_head_and_tail() -> None:
    pasted = "HEAD-MARK " + "log entry with details\n" * 4_000 + " TAIL-MARK"
    llm = ScriptedLLM(reply("got it"))
    window = [Entry(user(pasted), 7)]
    await turn(llm, window=window, cfg=config(oversize_fraction=0.25))
    shown = texts(llm.requests[0])[0]
    assert shown.startswith("HEAD-MARK")
    assert shown.endswith("TAIL-MARK")
    assert len(shown) < len(pasted) / 2
    assert "call recall with message_id=7" in shown
    assert estimate_message(llm.requests[0].messages[0]) <= 0.25 * MODEL.context_window
    assert window[0].message["content"] == pasted


async def test_an_oversized_message_is_cut_alike_on_every_call_while_the_calibration_learns() -> None:
    """The cut depends on the stored message alone: were it judged by the calibrated count, which learns
    from every call, the message would be cut differently on the next call of the same turn and the
    prompt would change from it on (its cache entry and every thinking block after it lost)."""
    calibration = Calibration(MODEL.name)
    pasted = "HEAD-MARK " + "log entry with details\n" * 4_000 + " TAIL-MARK"
    clock = current_time_tool(lambda: datetime(2026, 3, 14, tzinfo=UTC))
    llm = ScriptedLLM(
        reply(tools=[("t1", "current_time", {})], usage=Usage(6_000, 50)),
        reply(tools=[("t2", "current_time", {})], usage=Usage(7_500, 50)),
        reply("done", usage=Usage(8_000, 50)),
    )
    engine = KeepTail(count_tokens=CalibratedCounter(calibration))
    await turn(
        llm,
        window=[Entry(user(pasted), 7)],
        engine=engine,
        tools=ToolRegistry([clock]),
        cfg=config(oversize_fraction=0.25, calibration=calibration),
    )
    assert calibration.samples == 3
    assert engine.calls == []  # no compaction: the history is the same on every call
    shown = {texts(r)[0] for r in llm.requests}
    assert len(shown) == 1
    assert "call recall with message_id=7" in shown.pop()


async def test_in_loop_compaction_runs_on_the_reported_usage() -> None:
    clock = current_time_tool(lambda: datetime(2026, 3, 14, tzinfo=UTC))
    high = Usage(2_000, 100, 0, 9_000)  # 11,000 prompt tokens: above 50% of 20,000
    llm = ScriptedLLM(reply(tools=[("t1", "current_time", {})], usage=high), reply("done"))
    engine, hooks = KeepTail(keep=2, note=NOTE), Hooks()
    window = [
        Entry(user(f"u{i}") if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}, i) for i in range(5)
    ]
    result = await turn(llm, window=window, engine=engine, hooks=hooks, tools=ToolRegistry([clock]))
    assert len(hooks.compactions) == 1
    _, refs, trigger = hooks.compactions[0]
    assert trigger == "agent"
    assert refs == [0, 1, 2, 3, 4, 101, 102]
    assert engine.calls[0][1] is False  # automatic, not forced
    second = llm.requests[1]
    assert texts(second)[0] == "[summary of 5 messages]"
    assert len(second.messages) == 3
    assert "".join(b["text"] for b in second.system) == f"{SYSTEM}\n\n{NOTE}"
    assert [e.ref for e in result.window] == [103, 101, 102, 104]


async def test_no_compaction_below_the_threshold() -> None:
    clock = current_time_tool(lambda: datetime(2026, 3, 14, tzinfo=UTC))
    llm = ScriptedLLM(reply(tools=[("t1", "current_time", {})], usage=Usage(3_000, 100)), reply("done"))
    hooks = Hooks()
    result = await turn(llm, hooks=hooks, tools=ToolRegistry([clock]))
    assert hooks.compactions == []
    assert result.reply_text == "done"


async def test_output_budget_is_reserved_before_the_call() -> None:
    # ~12,000 estimated prompt tokens + 9,000 max_tokens > 20,000 window: compact first.
    window = [
        Entry(
            user("older question " + "word " * 3_000)
            if i % 2 == 0
            else {"role": "assistant", "content": "ok"},
            i,
        )
        for i in range(7)
    ]
    llm = ScriptedLLM(reply("fine"))
    # a threshold above the prompt: only the output budget can make this turn compact
    engine, hooks = KeepTail(keep=1, threshold=0.9), Hooks()
    await turn(llm, window=window, engine=engine, hooks=hooks, cfg=config(max_tokens=9_000))
    assert len(engine.calls) == 1
    assert engine.calls[0][1] is True
    assert [t for _, _, t in hooks.compactions] == ["agent"]
    (request,) = llm.requests
    assert len(request.messages) == 2
    small = ScriptedLLM(reply("fine"))
    quiet = KeepTail(keep=1, threshold=0.9)
    await turn(small, window=window, engine=quiet, cfg=config(max_tokens=1_000))
    assert quiet.calls == []


async def test_a_text_only_turn_compacts_at_the_threshold_before_its_first_call() -> None:
    # ~12,000 estimated prompt tokens in a 20,000 window: over the 50% compressor threshold, and the
    # request fits, so only the compressor's own threshold can make this turn compact (no tool round)
    window = [
        Entry(
            user("older question " + "word " * 3_000)
            if i % 2 == 0
            else {"role": "assistant", "content": "ok"},
            i,
        )
        for i in range(7)
    ]
    llm = ScriptedLLM(reply("fine"))
    engine, hooks = KeepTail(keep=1), Hooks()
    result = await turn(llm, window=window, engine=engine, hooks=hooks, cfg=config(max_tokens=1_000))
    assert result.reply_text == "fine"
    assert [force for _, force in engine.calls] == [False]  # automatic: the engine's pause applies
    assert [t for _, _, t in hooks.compactions] == ["agent"]
    (request,) = llm.requests
    assert len(request.messages) == 2  # the request went out compacted


async def test_below_the_threshold_the_first_call_goes_out_untouched() -> None:
    window = [Entry(user("short question " + "word " * 2_000), 0)]
    llm = ScriptedLLM(reply("fine"))
    engine = KeepTail(keep=1)
    await turn(llm, window=window, engine=engine, cfg=config(max_tokens=1_000))
    assert engine.calls == []


async def test_overflow_recovery_compacts_once_and_retries() -> None:
    window = [
        Entry(user(f"u{i}") if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}, i) for i in range(5)
    ]
    llm = ScriptedLLM(ContextOverflowError("prompt is too long", status_code=400), reply("recovered"))
    engine, hooks = KeepTail(keep=1), Hooks()
    result = await turn(llm, window=window, engine=engine, hooks=hooks)
    assert result.reply_text == "recovered"
    assert len(llm.requests) == 2
    assert len(llm.requests[1].messages) == 2
    assert [(force) for _, force in engine.calls] == [True]
    assert [t for _, _, t in hooks.compactions] == ["agent"]
    assert hooks.usages[0][2] == 4  # the retried call's newest message


async def test_a_second_overflow_propagates() -> None:
    window = [
        Entry(user(f"u{i}") if i % 2 == 0 else {"role": "assistant", "content": f"a{i}"}, i) for i in range(5)
    ]
    llm = ScriptedLLM(ContextOverflowError("too long"), ContextOverflowError("still too long"))
    engine = KeepTail(keep=1)
    with pytest.raises(ContextOverflowError, match="still too long"):
        await turn(llm, window=window, engine=engine)
    assert len(engine.calls) == 1


async def test_overflow_with_nothing_to_compact_propagates_without_a_retry() -> None:
    llm = ScriptedLLM(ContextOverflowError("too long"))
    with pytest.raises(ContextOverflowError):
        await turn(llm, engine=KeepTail(keep=5))
    assert len(llm.requests) == 1


async def test_engine_tools_are_offered_and_dispatched_to_the_engine() -> None:
    class WithTool(KeepTail):
        def tool_schemas(self) -> list[dict[str, Any]]:
            return [{"name": "ctx_grep", "description": "grep context", "input_schema": {"type": "object"}}]

        async def handle_tool(self, name: str, tool_input: dict[str, Any]) -> str:
            return f"grep hit for {tool_input['q']}"

    llm = ScriptedLLM(reply(tools=[("t1", "ctx_grep", {"q": "vault"})]), reply("found"))
    hooks = Hooks()
    await turn(llm, engine=WithTool(), hooks=hooks)
    assert [t["name"] for t in llm.requests[0].tools] == ["ctx_grep"]
    assert hooks.persisted[1]["content"][0]["content"] == "grep hit for vault"


async def test_end_to_end_with_the_sdk_the_compressor_and_the_fake_api() -> None:
    from agent.compaction.compressor import ContextCompactor
    from agent.compaction.summarizer import LLMSummarizer
    from agent.llm import AnthropicClient
    from tests.fakes.anthropic import FakeAnthropic

    window: list[Entry] = []
    for i in range(30):
        text = f"turn {i} about src/module_{i}.py " + "context words " * 150
        window.append(Entry(user(text) if i % 2 == 0 else {"role": "assistant", "content": text}, i))
    window.append(Entry(user("what did we change in module_3?"), 30))
    async with FakeAnthropic(api_key="k", context_windows={MODEL.name: MODEL.context_window}) as fake:
        client = AnthropicClient(api_key="k", base_url=fake.base_url)
        try:
            engine = ContextCompactor(
                context_length=MODEL.context_window,
                config=CompactionConfig(protect_last_n=4),
                summarizer=LLMSummarizer(client, model="claude-haiku-4-5"),
                count_tokens=estimate_message,
            )
            fake.script_reply(tool_uses=[{"id": "toolu_a", "name": "current_time", "input": {}}])
            fake.script_reply("module_3 was renamed")
            hooks = Hooks()
            hooks.engine = engine
            result = await run_turn(
                Conversation(
                    llm=client,
                    engine=engine,
                    window=window,
                    system=SYSTEM,
                    tools=ToolRegistry([current_time_tool(lambda: datetime(2026, 3, 14, tzinfo=UTC))]),
                    config=config(max_tokens=1_000),
                ),
                hooks=hooks,
            )
        finally:
            await client.close()
    assert result.reply_text == "module_3 was renamed"
    assert [t for _, _, t in hooks.compactions] == ["agent"]
    kinds = [r.kind for r in fake.requests]
    assert kinds == ["reply", "summary", "reply"]
    assert all(r.status == 200 for r in fake.requests)
    assert fake.requests[2].usage is not None
    final_prompt = sum(fake.requests[2].usage[k] for k in ("input_tokens", "cache_read_input_tokens",
                                                           "cache_creation_input_tokens"))  # fmt: skip
    first_prompt = sum(fake.requests[0].usage[k] for k in ("input_tokens", "cache_read_input_tokens",
                                                           "cache_creation_input_tokens"))  # fmt: skip
    assert final_prompt < first_prompt


async def test_reply_calls_teach_the_calibration_the_models_real_token_counts() -> None:
    calibration = Calibration(MODEL.name)
    llm = ScriptedLLM(reply("done", usage=Usage(input_tokens=1_500)))
    await turn(llm, window=[Entry(user("hello " * 600), 1)], cfg=config(calibration=calibration))
    assert calibration.samples == 1
    assert calibration.factor > 1.0  # the API counted more tokens than the local estimate
    assert calibration.apply(1_000) > 1_000

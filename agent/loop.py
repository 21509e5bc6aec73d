"""One tool-calling turn: assemble the request, call the model, run its tools, repeat.

The loop owns no storage: every message it produces goes through `TurnHooks.persist` before the next
call, and compactions through `TurnHooks.compacted`, so the caller's store always matches what the
model was shown. Compression runs inside the loop on the API's real token counts (the engine decides
when), before a call whose prompt plus output budget would not fit, and once after an overflow error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.context_engine import CompressionResult, ContextEngine
from agent.errors import ContextOverflowError
from agent.llm import LLMClient, LLMRequest, LLMResponse
from agent.models import CacheTTL, ModelInfo
from agent.oversize import render_for_model
from agent.prompt_caching import MarkerPlan, apply_cache_control, apply_marker_plan, inject_context_block
from agent.tokens import Calibration, estimate_message, estimate_system, estimate_tools
from agent.tools.registry import ToolOutcome, ToolRegistry
from agent.types import Block, Message
from agent.usage import Usage

logger = logging.getLogger(__name__)

TRIGGER = "agent"
STOP_ITERATION_LIMIT = "max_iterations"


@dataclass(frozen=True, slots=True)
class Entry:
    """One message of the active window and the caller's handle for it (opaque to the loop)."""

    message: Message
    ref: object | None


class TurnHooks(Protocol):
    """What the caller does with what the loop produces (all awaited before the loop goes on)."""

    async def persist(self, messages: list[Message]) -> list[object]:
        """Store new assistant / tool-result messages; return their refs in order."""
        ...

    async def compacted(
        self, result: CompressionResult, refs: list[object | None], trigger: str
    ) -> list[object | None]:
        """Persist a compaction at once; `refs` are the input window's, return refs for `result.messages`."""
        ...

    async def usage(self, response: LLMResponse, purpose: str, last_ref: object | None) -> None:
        """Record one model call; `last_ref` is the newest message the call's prompt included."""
        ...


@dataclass(frozen=True, slots=True)
class TurnCachePlan:
    """How one turn marks its calls: the first call reads `reads` (window indices whose prefix is cached
    and live, with their TTL) and writes `first_tail`; each later call (a tool round, sent seconds after
    the previous one) reads what the turn cached so far and writes `round_tail`."""

    reads: tuple[tuple[int, CacheTTL], ...] = ()
    first_tail: CacheTTL | None = None
    round_tail: CacheTTL | None = "5m"


@dataclass(frozen=True, slots=True)
class LoopConfig:
    model: ModelInfo
    max_tokens: int = 4096
    max_iterations: int = 8
    cache_ttl: CacheTTL | None = "5m"
    tool_output_max_chars: int = 20_000
    oversize_fraction: float = 0.25
    """A message estimated above this share of the context window is shown as head + tail."""
    calibration: Calibration | None = None
    """The model's tokenizer calibration: learns from every reply call, scales the loop's estimates."""
    cache_plan: TurnCachePlan | None = None
    """Per-call breakpoints (live reads plus a chosen tail); None: `system_and_3` at `cache_ttl`."""


@dataclass(frozen=True, slots=True)
class CachePoint:
    """A window message whose prefix has a cache entry after the turn; `touched` when this turn wrote
    or read it (its expiry restarted)."""

    ref: object | None
    ttl: CacheTTL
    touched: bool


@dataclass(slots=True)
class TurnResult:
    reply_text: str
    iterations: int
    usage_total: Usage
    """Summed over the turn's reply calls (summary calls are reported with each compaction)."""
    compactions: list[tuple[str, CompressionResult]]
    system_note: str | None
    """Set when a compaction asked for a note on the system prompt; the caller persists it."""
    stop_reason: str | None
    """The last response's stop_reason, or "max_iterations" when the limit cut the turn short."""
    window: list[Entry] = field(default_factory=list)
    """The active window after the turn (what the next turn starts from)."""
    cache_points: list[CachePoint] = field(default_factory=list)
    """With a cache plan: the newest cached message and the newest one cached for an hour."""


RefLabel = Callable[[object | None], object | None]


def _identity(ref: object | None) -> object | None:
    return ref


class _Turn:
    """The mutable state of one turn; `run_turn` is its only entry point."""

    def __init__(
        self,
        *,
        llm: LLMClient,
        engine: ContextEngine,
        window: list[Entry],
        system: str,
        tools: ToolRegistry,
        config: LoopConfig,
        dynamic_context: Mapping[str, str],
        hooks: TurnHooks,
        ref_label: RefLabel,
    ) -> None:
        self.llm = llm
        self.engine = engine
        self.window = list(window)
        self.system = system
        self.tools = tools
        self.config = config
        self.context = dict(dynamic_context)
        self.hooks = hooks
        self.ref_label = ref_label
        self.usage_total = Usage()
        self.compactions: list[tuple[str, CompressionResult]] = []
        self.system_note: str | None = None
        self.engine_tools = {str(s["name"]) for s in engine.tool_schemas()}
        self.last_raw_estimate = 0
        plan = config.cache_plan
        self.points: list[tuple[int, CacheTTL]] = list(plan.reads) if plan is not None else []
        """Window indices with a cache entry, oldest first (reset by a compaction)."""
        self.touched: set[int] = set()
        self.calls_made = 0
        self.marker_plan: MarkerPlan | None = None

    # --- what the model is shown -----------------------------------------------------------------

    def rendered(self) -> list[Message]:
        limit = int(self.config.model.context_window * self.config.oversize_fraction)
        return [
            render_for_model(
                e.message,
                ref=self.ref_label(e.ref),
                tool_output_max_chars=self.config.tool_output_max_chars,
                oversize_tokens=limit,
                count_tokens=self.engine.count_tokens,
            )
            for e in self.window
        ]

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [*self.tools.schemas(), *self.engine.tool_schemas()]

    def build(self) -> tuple[LLMRequest, int]:
        """The next request and its estimated prompt size."""
        messages = inject_context_block(self.rendered(), self.context)
        tools = self.tool_schemas()
        if self.config.cache_plan is not None:
            self.marker_plan = self.plan_markers(len(messages))
            cached = apply_marker_plan(self.system, messages, plan=self.marker_plan, tools=tools)
            system, messages, tools = cached.system_blocks, cached.messages, cached.tools or []
        elif self.config.cache_ttl is not None:
            cached = apply_cache_control(self.system, messages, ttl=self.config.cache_ttl, tools=tools)
            system, messages, tools = cached.system_blocks, cached.messages, cached.tools or []
        else:
            system = [{"type": "text", "text": self.system}]
        raw = (
            estimate_system(self.system) + estimate_tools(tools) + sum(estimate_message(m) for m in messages)
        )
        self.last_raw_estimate = raw
        calibration = self.config.calibration
        estimate = calibration.apply(raw) if calibration is not None else raw
        request = LLMRequest(
            model=self.config.model.name,
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=self.config.max_tokens,
        )
        return request, estimate

    def readers(self) -> tuple[tuple[int, CacheTTL], ...]:
        """The newest cached point, and the newest one-hour point when older (the fallback read)."""
        if not self.points:
            return ()
        newest = self.points[-1]
        hour = next((p for p in reversed(self.points[:-1]) if p[1] == "1h"), None)
        return (newest,) if hour is None or newest[1] == "1h" else (hour, newest)

    def plan_markers(self, count: int) -> MarkerPlan:
        plan = self.config.cache_plan
        assert plan is not None
        tail = plan.first_tail if self.calls_made == 0 else plan.round_tail
        reads = tuple(r for r in self.readers() if r[0] < count)
        return MarkerPlan(reads=reads, tail=tail if count > 0 else None)

    def note_cached(self, count: int) -> None:
        """After a call: the newest read point was hit (refreshed) and the tail, if marked, written."""
        self.calls_made += 1
        plan = self.marker_plan
        if plan is None:
            return
        if plan.reads:
            self.touched.add(max(i for i, _ in plan.reads))
        if plan.tail is not None and count > 0:
            self.points = [p for p in self.points if p[0] != count - 1] + [(count - 1, plan.tail)]
            self.touched.add(count - 1)

    def cache_points(self) -> list[CachePoint]:
        return [
            CachePoint(self.window[i].ref, ttl, i in self.touched)
            for i, ttl in self.readers()
            if i < len(self.window)
        ]

    # --- compaction --------------------------------------------------------------------------------

    async def compact(self, *, force: bool, why: str) -> bool:
        """Compress the window; True when it changed."""
        logger.info("in-loop compaction (%s, force=%s) over %d messages", why, force, len(self.window))
        result = await self.engine.compress(self.rendered(), force=force)
        self.compactions.append((TRIGGER, result))
        if not result.changed:
            logger.info("compaction left the window unchanged: %s %s", result.outcome, result.reason)
            return False
        new_refs = await self.hooks.compacted(result, [e.ref for e in self.window], TRIGGER)
        if len(new_refs) != len(result.messages):
            raise RuntimeError(
                f"compacted hook returned {len(new_refs)} refs for {len(result.messages)} messages"
            )
        self.window = [Entry(m, r) for m, r in zip(result.messages, new_refs, strict=True)]
        self.points = []  # the prompt changed: no cached prefix matches it any more
        self.touched = set()
        if result.system_note and self.system_note is None:
            self.system_note = result.system_note
            self.system = f"{self.system}\n\n{result.system_note}"
        return True

    # --- one call ------------------------------------------------------------------------------------

    async def call(self) -> LLMResponse:
        """One model call with the output budget reserved and one overflow recovery."""
        request, estimate = self.build()
        window_size = self.config.model.context_window
        if estimate + request.max_tokens > window_size and await self.compact(
            force=True, why=f"prompt ~{estimate} + max_tokens {request.max_tokens} > window {window_size}"
        ):
            request, estimate = self.build()
        last_ref = self.window[-1].ref if self.window else None
        try:
            response = await self.llm.create(request)
        except ContextOverflowError as exc:
            logger.warning("context overflow reported by the API (estimate was %d): %s", estimate, exc)
            if not await self.compact(force=True, why="API context overflow"):
                raise
            request, _ = self.build()
            last_ref = self.window[-1].ref if self.window else None
            response = await self.llm.create(request)
        self.note_cached(len(request.messages))
        if self.config.calibration is not None:
            self.config.calibration.observe(estimated=self.last_raw_estimate, reported=response.usage)
        self.engine.update_from_usage(response.usage)
        self.usage_total = self.usage_total + response.usage
        await self.hooks.usage(response, "reply", last_ref)
        return response

    async def run_tools(self, uses: Sequence[Block]) -> Message:
        results: list[Block] = []
        for use in uses:
            name = str(use.get("name", ""))
            raw_input = use.get("input")
            tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
            outcome = await self.run_tool(name, tool_input)
            block: Block = {"type": "tool_result", "tool_use_id": use["id"], "content": outcome.content}
            if outcome.is_error:
                block["is_error"] = True
            results.append(block)
        return {"role": "user", "content": results}

    async def run_tool(self, name: str, tool_input: dict[str, Any]) -> ToolOutcome:
        if name in self.engine_tools and name not in self.tools:
            try:
                return ToolOutcome(await self.engine.handle_tool(name, tool_input))
            except Exception as exc:
                logger.exception("engine tool %s raised", name)
                return ToolOutcome(f"Tool {name} failed: {type(exc).__name__}: {exc}", is_error=True)
        return await self.tools.run(name, tool_input)

    async def append(self, message: Message) -> None:
        (ref,) = await self.hooks.persist([message])
        self.window.append(Entry(message, ref))


async def run_turn(
    *,
    llm: LLMClient,
    engine: ContextEngine,
    window: list[Entry],
    system: str,
    tools: ToolRegistry,
    config: LoopConfig,
    dynamic_context: Mapping[str, str],
    hooks: TurnHooks,
    ref_label: RefLabel = _identity,
) -> TurnResult:
    """Run one turn over `window` (which must end with the user's new message; it is not modified).

    `ref_label` turns a ref into the message id the model may pass to `recall` in truncation markers.
    Raises `agent.errors.LLMError` subclasses when the model cannot be reached or rejects the request.
    """
    turn = _Turn(
        llm=llm,
        engine=engine,
        window=window,
        system=system,
        tools=tools,
        config=config,
        dynamic_context=dynamic_context,
        hooks=hooks,
        ref_label=ref_label,
    )
    response: LLMResponse | None = None
    stop_reason: str | None = None
    iterations = 0
    while iterations < config.max_iterations:
        iterations += 1
        response = await turn.call()
        stop_reason = response.stop_reason
        if not response.content:
            logger.warning("model returned no content (stop_reason=%s)", stop_reason)
            break
        await turn.append(response.as_message())
        uses = response.tool_uses
        if stop_reason != "tool_use" or not uses:
            break
        results = await turn.run_tools(uses)
        await turn.append(results)
        if iterations >= config.max_iterations:
            logger.warning("turn stopped at the iteration limit (%d)", config.max_iterations)
            stop_reason = STOP_ITERATION_LIMIT
            break
        grown = (
            response.usage.prompt_tokens
            + response.usage.output_tokens
            + engine.count_tokens(turn.rendered()[-1])
        )
        if engine.should_compress(grown):
            await turn.compact(force=False, why=f"prompt ~{grown} tokens reached the threshold")
    return TurnResult(
        reply_text=response.text if response is not None else "",
        iterations=iterations,
        usage_total=turn.usage_total,
        compactions=turn.compactions,
        system_note=turn.system_note,
        stop_reason=stop_reason,
        window=turn.window,
        cache_points=turn.cache_points() if config.cache_plan is not None else [],
    )

"""One tool-calling turn: assemble the request, call the model, run its tools, repeat.

The loop owns no storage: every message it produces goes through `TurnHooks.persist` before the next
call, and compaction is the caller's (`TurnHooks.compact`, which compacts the stored session and hands
back the new window), so the caller's store always matches what the model was shown. The loop decides
when: before the turn's first call and after each tool round once the engine's threshold is reached,
before any call whose prompt plus output budget would not fit the window, and once after an overflow
error. Each call's cache markers
and TTL come from the turn's `CacheCursor`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from agent.caching.markers import cache_marker
from agent.caching.plan import CacheCursor, CachePoint, TurnCachePlan
from agent.citations import reply_text, with_sources
from agent.compaction.engine import ContextEngine
from agent.errors import BudgetExceededError, ContextOverflowError
from agent.llm import LLMClient, LLMRequest, LLMResponse, ask
from agent.messages import has_compaction
from agent.models import CacheTTL, ModelInfo
from agent.oversize import Cuts
from agent.server_tools import ServerTools
from agent.streaming import StreamSink
from agent.thinking import EFFORTS, Effort, thinking_only, thinking_options, without_thinking
from agent.tokens import Calibration, estimate_message, estimate_system, estimate_tools
from agent.tools.registry import ToolOutcome, ToolRegistry
from agent.types import Block, Message

logger = logging.getLogger(__name__)

STOP_ITERATION_LIMIT = "max_iterations"
MAX_PAUSES = 5
"""Continuations of a turn the API paused in a long run of its own tools (`stop_reason: "pause_turn"`)
before the turn ends with what it has."""
STOP_BUDGET = "budget"
"""A spending cap refused the turn's next call: the turn ends with what it has."""
MIN_OUTPUT_TOKENS = 1_024
"""The least output budget a call keeps when `max_tokens` is lowered so the request fits the window."""
FIT_MARGIN = 0.05
"""Share added to the prompt estimate when checking that prompt + max_tokens fits the window: the
calibrated estimate trails the API's count by up to about 3% while the calibration is still learning."""

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Entry(Generic[R]):
    """One message of the active window and the caller's handle for it (opaque to the loop)."""

    message: Message
    ref: R | None


@dataclass(frozen=True, slots=True)
class Compacted(Generic[R]):
    """What a compaction hands back: the new window, and the system prompt if it changed."""

    window: list[Entry[R]]
    system: str | None = None


class TurnHooks(Protocol[R]):
    """What the caller does with what the loop produces (all awaited before the loop goes on)."""

    async def persist(self, messages: list[Message]) -> list[R]:
        """Store new assistant / tool-result messages; return their refs in order."""
        ...

    async def compact(
        self, window: Sequence[Entry[R]], *, force: bool, why: str, server: bool = False
    ) -> Compacted[R] | None:
        """Compact the session whose window this is, now; None when nothing changed. `server`: the API
        compacted the conversation in the last call, and the engine takes that into the window."""
        ...

    async def usage(
        self, response: LLMResponse, *, purpose: str, last_ref: R | None, ttl: CacheTTL | None
    ) -> None:
        """Record one model call: the newest message its prompt included and the TTL of its markers."""
        ...


@dataclass(frozen=True, slots=True)
class LoopConfig:
    """The loop's settings, the same for every turn (what one turn brings is in its `Conversation`)."""

    model: ModelInfo
    calibration: Calibration
    """The model's tokenizer calibration: learns from every reply call, scales the loop's estimates."""
    max_tokens: int = 4096
    max_iterations: int = 8
    tool_output_max_chars: int = 20_000
    oversize_fraction: float = 0.25
    """A message estimated above this share of the context window is shown as head + tail."""
    effort: Effort | None = None
    """`output_config.effort` on the models that take it (None: the API's default)."""
    server_tools: ServerTools = field(default_factory=ServerTools)
    """The API's own tools offered in every reply request (web search, web fetch)."""

    @property
    def cuts(self) -> Cuts:
        """What the model is shown of a stored message, and what that costs (`agent.oversize`)."""
        return Cuts(self.tool_output_max_chars, int(self.model.context_window * self.oversize_fraction))

    def render(self, message: Message, ref: object | None) -> Message:
        """A stored message as the model sees it (long tool output cut, oversized messages shortened)."""
        return self.cuts.shown(message, ref=ref)


@dataclass(slots=True)
class TurnResult(Generic[R]):
    reply_text: str
    iterations: int
    stop_reason: str | None
    """The last response's stop_reason, or "max_iterations" when the limit cut the turn short."""
    refusal: str | None = None
    """The category of a refusal (the model declined; nothing of its answer was kept)."""
    budget: BudgetExceededError | None = None
    """The spending cap that refused the turn's next call (`stop_reason` is `STOP_BUDGET`)."""
    window: list[Entry[R]] = field(default_factory=list)
    """The active window after the turn (what the next turn starts from)."""
    cache_points: list[CachePoint[R]] = field(default_factory=list)
    """The prefixes cached at the end of the turn (the newest, and the newest one-hour one)."""


RefLabel = Callable[[Any], object | None]


def more_room(request: LLMRequest, model: ModelInfo, *, room: int) -> LLMRequest:
    """The request again after a reply ran out of room while thinking: four times the output budget
    (within the model's limit and the `room` the prompt leaves in the window) and one step less effort
    (from the API's default, high, when unset)."""
    effort = (request.output_config or {}).get("effort", "high")
    lower = EFFORTS[max(EFFORTS.index(effort) - 1, 0)] if effort in EFFORTS else "medium"
    config = (
        {**(request.output_config or {}), "effort": lower}
        if model.preserved_thinking
        else request.output_config
    )
    budget = max(request.max_tokens, min(request.max_tokens * 4, model.max_output, room))
    return dataclasses.replace(request, max_tokens=budget, output_config=config)


def _with_margin(estimate: int) -> int:
    return estimate + int(estimate * FIT_MARGIN)


def _identity(ref: object | None) -> object | None:
    return ref


@dataclass(frozen=True, slots=True)
class Conversation(Generic[R]):
    """What every request of a turn (or a cache refresh) is built from: the one definition of the
    loop's shared arguments, the settings (`config`) and what this one turn brings (its window, cache
    plan, stream)."""

    llm: LLMClient
    engine: ContextEngine
    window: list[Entry[R]]
    """Ends with the user's new message for a turn (not modified), where the cached prefix ends for a
    refresh."""
    system: str
    tools: ToolRegistry
    config: LoopConfig
    ref_label: RefLabel = _identity
    """Turns a ref into the message id the model may pass to `recall` in truncation markers."""
    cache_plan: TurnCachePlan = field(default_factory=lambda: TurnCachePlan(rolling="5m"))
    """How this turn (or refresh) marks its calls for the prompt cache."""
    stream: StreamSink | None = None
    """Where the reply's text goes while it is written (None: nothing is shown before the end)."""
    compacted_before: bool = False
    """The turn's session was compacted right before it (hygiene, cache-aware): one compaction per turn,
    so the threshold is not checked again before the first call (the fit check still is)."""


class _Turn(Generic[R]):
    """The mutable state of one turn; `run_turn` is its only entry point."""

    def __init__(self, conversation: Conversation[R], hooks: TurnHooks[R]) -> None:
        self.llm = conversation.llm
        self.engine = engine = conversation.engine
        self.window = list(conversation.window)
        self.system = conversation.system
        self.tools = conversation.tools
        self.config = conversation.config
        self.hooks = hooks
        self.ref_label = conversation.ref_label
        self.stream = conversation.stream
        self.compacted_before = conversation.compacted_before
        self.plan = plan = conversation.cache_plan
        self.engine_tools = {str(s["name"]) for s in engine.tool_schemas()}
        self.last_raw_estimate = 0
        self.calls = 0
        self.cursor = CacheCursor(plan)
        self.previous_message_id = plan.previous_message_id
        """The last response's id, for the API's cache diagnostics."""

    # --- what the model is shown -----------------------------------------------------------------

    def rendered(self) -> list[Message]:
        return [self.config.render(e.message, self.ref_label(e.ref)) for e in self.window]

    def build(self) -> tuple[LLMRequest, int, CacheTTL | None]:
        """The next request, its estimated prompt size and the TTL of its markers."""
        server = self.config.server_tools
        tools = [*self.tools.schemas(), *self.engine.tool_schemas(), *server.definitions(self.config.model)]
        cached, ttl = self.cursor.place(self.system, self.rendered(), tools)
        raw = (
            estimate_system(self.system)
            + estimate_tools(cached.tools)
            + sum(estimate_message(m) for m in cached.messages)
        )
        self.last_raw_estimate = raw
        estimate = self.config.calibration.apply(raw)
        managed = self.engine.request_options()
        options = thinking_options(self.config.model, self.config.effort)
        request = LLMRequest(
            model=self.config.model.name,
            system=cached.system_blocks,
            messages=cached.messages,
            tools=cached.tools or [],
            max_tokens=self.output_budget(estimate),
            automatic_cache=None if cached.automatic is None else cache_marker(cached.automatic),
            diagnose=self.plan.diagnose,
            previous_message_id=self.previous_message_id,
            context_management=managed[0] if managed is not None else None,
            betas=(
                *(managed[1] if managed is not None else ()),
                *options.betas,
                *server.betas(self.config.model),
            ),
            thinking=options.thinking,
            output_config=options.output_config,
            prompt_estimate=raw,
        )
        return request, estimate, ttl

    def output_budget(self, estimate: int) -> int:
        """`max_tokens`, lowered (not below MIN_OUTPUT_TOKENS) when the prompt leaves less room."""
        room = self.config.model.context_window - _with_margin(estimate)
        return max(min(self.config.max_tokens, MIN_OUTPUT_TOKENS), min(self.config.max_tokens, room))

    def fits(self, estimate: int) -> bool:
        return _with_margin(estimate) + self.config.max_tokens <= self.config.model.context_window

    # --- compaction --------------------------------------------------------------------------------

    async def compact(self, *, force: bool, why: str, size: int | None = None, server: bool = False) -> bool:
        """Ask the caller to compact the session; True when the window changed. `size` is the prompt
        size that reached the engine's threshold (what an automatic run is judged on)."""
        if size is not None:
            self.engine.expect_prompt(size)
        logger.info("in-loop compaction (%s, force=%s) over %d messages", why, force, len(self.window))
        done = await self.hooks.compact(self.window, force=force, why=why, server=server)
        if done is None:
            return False
        self.window = list(done.window)
        self.cursor.reset()
        if done.system is not None:
            self.system = done.system
        return True

    async def adopt_server_compaction(self) -> None:
        await self.compact(force=True, why="the API compacted the conversation in the last call", server=True)

    # --- one call ------------------------------------------------------------------------------------

    async def call(self) -> LLMResponse:
        """One model call that fits the window (compacting first if needed), with one overflow recovery.

        The turn's first call is also held to the compressor's threshold (the normal context
        management at 50%): a chat without tool calls would otherwise only ever meet hygiene at 85%.
        """
        request, estimate, ttl = self.build()
        # the caller's measure (the last reported size plus what was stored since, `expect_prompt`)
        # or this request's calibrated estimate, whichever is larger
        size = max(estimate, self.engine.state.last_prompt_tokens or 0)
        if self.calls == 0 and not self.compacted_before and self.engine.should_compress(size):
            why = f"prompt ~{size} tokens reached the compressor threshold before the first call"
            if await self.compact(force=False, why=why, size=size):
                request, estimate, ttl = self.build()
        if not self.fits(estimate):
            window_size = self.config.model.context_window
            why = f"prompt ~{estimate} + max_tokens {self.config.max_tokens} > window {window_size}"
            if await self.compact(force=True, why=why):
                request, estimate, ttl = self.build()
            if request.max_tokens < self.config.max_tokens:
                logger.warning(
                    "prompt ~%d tokens leaves %d for the reply (max_tokens %d lowered to %d)",
                    estimate,
                    window_size - estimate,
                    self.config.max_tokens,
                    request.max_tokens,
                )
        last_ref = self.window[-1].ref if self.window else None
        stream = self.stream
        on_text = stream.text if stream is not None else None
        on_progress = stream.progress if stream is not None else None
        try:
            response = await ask(self.llm, request, on_text, on_progress)
        except ContextOverflowError as exc:
            logger.warning("context overflow reported by the API (estimate was %d): %s", estimate, exc)
            if not await self.compact(force=True, why="API context overflow"):
                raise
            request, _, ttl = self.build()
            last_ref = self.window[-1].ref if self.window else None
            response = await ask(self.llm, request, on_text, on_progress)
        if response.stop_reason == "max_tokens" and thinking_only(response.content):
            await self.account(request, response, last_ref, ttl)
            room = self.config.model.context_window - _with_margin(estimate)
            request = more_room(request, self.config.model, room=room)
            logger.warning(
                "the reply ran out of room while thinking; asking again with max_tokens %d and effort %s",
                request.max_tokens,
                (request.output_config or {}).get("effort", "default"),
            )
            response = await ask(self.llm, request, on_text, on_progress)
        await self.account(request, response, last_ref, ttl)
        return response

    async def account(
        self, request: LLMRequest, response: LLMResponse, last_ref: R | None, ttl: CacheTTL | None
    ) -> None:
        """What one call used: the cache cursor, the calibration, the engine's view, the hooks."""
        usage = response.usage
        touched = usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        self.cursor.called(len(request.messages), cached=touched > 0)
        self.previous_message_id = response.message_id or self.previous_message_id
        self.calls += 1
        # a server-side compaction's own iteration saw the prompt as sent; the reply's saw the summary
        reported = response.compaction_usage or response.usage
        self.config.calibration.observe(estimated=self.last_raw_estimate, reported=reported)
        self.engine.update_from_usage(response.usage)
        await self.hooks.usage(response, purpose="reply", last_ref=last_ref, ttl=ttl)

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

    def grown_tokens(self, response: LLMResponse) -> int:
        """The next prompt's size: the last one reported, the reply and the newest message."""
        newest = self.rendered()[-1]
        return response.usage.prompt_tokens + response.usage.output_tokens + self.engine.count_tokens(newest)


async def run_turn(conversation: Conversation[R], *, hooks: TurnHooks[R]) -> TurnResult[R]:
    """Run one turn over the conversation's window (which must end with the user's new message).

    Raises `agent.errors.LLMError` subclasses when the model cannot be reached or rejects the request.
    """
    turn = _Turn(conversation, hooks)
    engine, config = conversation.engine, conversation.config
    response: LLMResponse | None = None
    stop_reason: str | None = None
    iterations = 0
    pauses = 0
    answered: list[Block] = []
    """The blocks of the newest answer: its responses since the last round of our own tools (a paused
    turn's responses and its continuation make one answer)."""
    after_tools = False
    while iterations < config.max_iterations:
        iterations += 1
        try:
            response = await turn.call()
        except BudgetExceededError as exc:
            # Not sent: what the turn did so far (tool results, stored) stands, and the caller says why.
            logger.warning("turn stopped before call %d: %s", iterations, exc)
            return TurnResult(
                reply_text=_answer_text(answered) if answered else "",
                iterations=iterations - 1,
                stop_reason=STOP_BUDGET,
                budget=exc,
                window=turn.window,
                cache_points=turn.cursor.cache_points([e.ref for e in turn.window]),
            )
        stop_reason = response.stop_reason
        if stop_reason == "refusal":
            # declined: nothing of it is kept (partial text, thinking); the caller says so
            logger.warning("the model declined the request (category %s)", response.refusal_category)
            return TurnResult(
                reply_text="",
                iterations=iterations,
                stop_reason=stop_reason,
                refusal=response.refusal_category,
                window=turn.window,
                cache_points=turn.cursor.cache_points([e.ref for e in turn.window]),
            )
        if not without_thinking(response.content):
            logger.warning("model returned no content besides thinking (stop_reason=%s)", stop_reason)
            break
        await turn.append(response.as_message())
        answered = [*([] if after_tools else answered), *response.content]
        after_tools = False
        if stop_reason == "pause_turn" and pauses < MAX_PAUSES:
            # the API paused a long run of its own tools: send the conversation again, this answer
            # included, and it goes on where it stopped (a separate count from our tool rounds)
            pauses += 1
            iterations -= 1
            logger.info("the API paused the turn (%d); continuing", pauses)
            continue
        # the API compacted the conversation in this call: take it into the window once the turn's
        # messages are whole again (a tool call's results are stored first)
        compacted_by_api = has_compaction(response.as_message())
        uses = response.tool_uses
        if stop_reason != "tool_use" or not uses:
            if compacted_by_api:
                await turn.adopt_server_compaction()
            break
        if conversation.stream is not None:
            await conversation.stream.working([str(u.get("name", "")) for u in uses])
        after_tools = True
        await turn.append(await turn.run_tools(uses))
        if compacted_by_api:
            await turn.adopt_server_compaction()
        if iterations >= config.max_iterations:
            logger.warning("turn stopped at the iteration limit (%d)", config.max_iterations)
            stop_reason = STOP_ITERATION_LIMIT
            break
        grown = turn.grown_tokens(response)
        if engine.should_compress(grown):
            await turn.compact(force=False, why=f"prompt ~{grown} tokens reached the threshold", size=grown)
    return TurnResult(
        reply_text=_answer_text(answered) if answered else (response.text if response is not None else ""),
        iterations=iterations,
        stop_reason=stop_reason,
        window=turn.window,
        cache_points=turn.cursor.cache_points([e.ref for e in turn.window]),
    )


def _answer_text(content: Sequence[Block]) -> str:
    """The answer's text as written (a cited answer's blocks joined back), with its sources."""
    return with_sources(reply_text(content), content)


class _NoHooks:
    """The hooks of a request that stores nothing and never compacts (a cache refresh)."""

    async def persist(self, messages: list[Message]) -> list[Any]:
        raise RuntimeError("a cache refresh stores nothing")

    async def compact(
        self, window: Sequence[Entry[Any]], *, force: bool, why: str, server: bool = False
    ) -> Compacted[Any] | None:
        raise RuntimeError("a cache refresh never compacts")

    async def usage(
        self, response: LLMResponse, *, purpose: str, last_ref: Any, ttl: CacheTTL | None
    ) -> None:
        raise RuntimeError("a cache refresh is accounted by its caller")


async def refresh_cache(conversation: Conversation[R]) -> LLMResponse:
    """Resend `window` exactly as a turn's call shows it, with `max_tokens: 0`: the API reads the cached
    prefix that the conversation's `cache_plan` marks (its life restarts) and generates nothing. The
    window must end where that prefix ends. The engine's context management goes with it as with the
    turn's calls: a server-side compaction block is sent as the API wrote it only in such a request
    (elsewhere as text, a prompt the cache has not seen). It cannot compact here: the prefix is part of
    a request that did not reach the trigger (a call that was compacted leaves no cache entry of its
    prompt behind)."""
    turn = _Turn(conversation, _NoHooks())
    request, _, _ = turn.build()
    return await conversation.llm.create(dataclasses.replace(request, max_tokens=0))

"""One chat's turns: under the per-chat lock, hygiene, the agent loop, persistence, the reply.

A turn answers every stored message of the chat that still needs a reply, so messages that arrive
while a turn runs are answered together in the next one, in order, never interleaved. Everything the
agent produces is stored before the reply is sent.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from agent.cache_health import CacheHealth
from agent.context_engine import CompressionResult, ContextEngine, Outcome
from agent.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMOverloadedError,
    LLMRateLimitError,
)
from agent.llm import LLMClient, LLMRequest, LLMResponse
from agent.loop import Entry, LoopConfig, TurnCachePlan, TurnResult, run_turn
from agent.models import CacheTTL, ModelInfo, cost_usd
from agent.tools.registry import ToolRegistry
from agent.types import Message, text_of
from gateway.cache_policy import (
    CachedPrefix,
    CacheMode,
    cache_expired,
    decide_compaction,
    plan_turn,
    ttl_for_turn,
)
from gateway.compaction import CompactionReport, compact_session, persist_result
from gateway.hygiene import decide
from gateway.metrics import Metrics
from gateway.platforms.base import ChatRef, OutgoingMessage
from gateway.store.hotpath import TurnSnapshot
from gateway.store.jobs import CacheState
from gateway.store.lock import ChatLocks
from gateway.store.records import HygieneInputs, SessionRecord
from gateway.store.repository import CallRecord, NewMessage, Store, StoredMessage
from gateway.window import build_window

logger = logging.getLogger(__name__)

Ref = tuple[int, ...] | None
SendFn = Callable[[OutgoingMessage], Awaitable[None]]


class EngineFactory(Protocol):
    """Builds a session's engine from its stored state; `session` lets it price summary calls."""

    def __call__(
        self, state: dict[str, Any] | None, *, session: SessionRecord | None = None
    ) -> ContextEngine: ...


ToolsFactory = Callable[[int], ToolRegistry]
"""chat_pk -> the tools for that chat (recall is bound to one chat)."""


@dataclass(frozen=True, slots=True)
class TurnSettings:
    model: ModelInfo
    system_prompt: str
    loop: LoopConfig
    compression_enabled: bool
    hygiene_threshold: float
    notify_compaction: bool
    cache_ttl: CacheTTL | None
    cache_mode: CacheMode | None = None
    """prompt_caching.cache_ttl when caching is on ("auto" picks per chat); None keeps `cache_ttl` fixed."""
    cache_aware_share: float | None = None
    """Compact before a request whose prompt cache expired when above this share (None: off)."""


SYSTEM_NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a summary to save context space.]"
)


def system_prompt_for(base: str, compaction_count: int) -> str:
    """Byte-stable between compactions: the note appears once the session has been compacted."""
    return f"{base}\n\n{SYSTEM_NOTE}" if compaction_count > 0 else base


def human_error(exc: LLMError) -> str:
    kept = "Your message is saved; send it again or just say \u201cretry\u201d and I\u2019ll pick it up."
    if isinstance(exc, LLMRateLimitError | LLMOverloadedError):
        return f"The assistant is overloaded right now. {kept}"
    if isinstance(exc, LLMAuthError):
        return (
            "The assistant is not available: the bot's API key was rejected. An admin needs to fix it. "
            + kept
        )
    if isinstance(exc, LLMBadRequestError):
        return f"The assistant could not process this conversation ({type(exc).__name__}). {kept}"
    return f"The assistant is unreachable at the moment. {kept}"


def notice_for(report: CompactionReport) -> str:
    if report.outcome is Outcome.OK:
        return (
            f"(Context compacted: {report.messages_before}\u2192{report.messages_after} messages, "
            f"{report.tokens_before:,}\u2192{report.tokens_after:,} tokens.)"
        )
    return f"(Context compaction {report.outcome.value}: {report.reason})"


class _Hooks:
    """The agent loop's persistence hooks for one turn."""

    def __init__(
        self,
        runner: TurnRunner,
        *,
        chat_pk: int,
        session_pk: int,
        engine: ContextEngine,
        after_id: int | None,
    ) -> None:
        self.runner = runner
        self.after_id = after_id
        """The turn's messages are stored right after this one, before anything that arrived meanwhile."""
        self.chat_pk = chat_pk
        self.session_pk = session_pk
        self.engine = engine
        self.reports: list[CompactionReport] = []
        self.ttl: CacheTTL | None = runner.settings.cache_ttl
        """The cache TTL this turn's requests use (recorded with each call)."""
        self.plan: TurnCachePlan | None = None
        """With `auto`: the turn's per-call markers; each call then records its longest marker TTL."""
        self.calls = 0
        self.last_id: int | None = None
        """The newest message the turn's last reply call included."""

    def call_ttl(self) -> CacheTTL | None:
        """The longest TTL among the markers of the reply call about to be recorded (plan only)."""
        plan = self.plan
        if plan is None:
            return self.ttl
        ttls = [t for _, t in plan.reads]
        tail = plan.first_tail if self.calls == 0 else plan.round_tail
        ttls += [tail] if tail is not None else []
        if self.calls > 0 and plan.first_tail is not None:
            ttls.append(plan.first_tail)
        return "1h" if "1h" in ttls else "5m" if ttls else None

    async def persist(self, messages: list[Message]) -> list[object]:
        stored = await self.runner.store.append_messages(
            self.session_pk,
            [
                NewMessage(
                    role=m["role"],
                    content=m["content"],
                    text=text_of(m),
                    author_id="assistant" if m["role"] == "assistant" else "tool",
                    author_name="assistant" if m["role"] == "assistant" else "tool",
                    platform_message_id=None,
                    token_estimate=self.engine.count_tokens(m),
                    needs_reply=False,
                    created_at=datetime.now(UTC),
                )
                for m in messages
            ],
            after_id=self.after_id,
        )
        if stored:
            self.after_id = stored[-1].message.id
        return [(s.message.id,) for s in stored]

    async def compacted(
        self, result: CompressionResult, refs: list[object | None], trigger: str
    ) -> list[object | None]:
        typed: list[Ref] = [r if isinstance(r, tuple) else None for r in refs]
        new_refs = await persist_result(
            self.runner.store,
            session_pk=self.session_pk,
            result=result,
            refs=typed,
            trigger=trigger,
            duration_s=0.0,
            engine=self.engine,
        )
        kept = [typed[o] for o in result.origin if o is not None]
        if self.runner.metrics is not None:
            self.runner.metrics.observe_compaction(trigger, result.outcome.value)
        self.reports.append(
            CompactionReport(
                trigger=trigger,
                outcome=result.outcome,
                reason=result.reason,
                messages_before=sum(len(r) for r in typed if r),
                messages_after=sum(len(r) for r in kept if r) + (1 if result.summary else 0),
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                duration_s=0.0,
                changed=result.changed,
            )
        )
        return list(new_refs)

    async def usage(self, response: LLMResponse, purpose: str, last_ref: object | None) -> None:
        last_id = max(last_ref) if isinstance(last_ref, tuple) and last_ref else None
        model = self.runner.settings.model
        opens_turn = self.calls == 0
        if purpose == "reply":
            self.ttl = self.call_ttl()
            self.calls += 1
            self.last_id = last_id
        if self.runner.metrics is not None:
            self.runner.metrics.observe_usage(response.usage, purpose=purpose)
        if purpose == "reply":
            self.runner.cache_health_of(self.chat_pk).record(
                response.usage,
                cacheable_prefix_sent=self.ttl is not None
                and response.usage.prompt_tokens >= model.min_cacheable_tokens,
                at=self.runner.clock().timestamp(),
                ttl_seconds=3600.0 if self.ttl == "1h" else 300.0,
            )
        await self.runner.store.record_call(
            self.session_pk,
            self.chat_pk,
            CallRecord(
                model=response.model or model.name,
                purpose="summary" if purpose == "summary" else "reply",
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                cache_creation_tokens=response.usage.cache_creation_input_tokens,
                cache_read_tokens=response.usage.cache_read_input_tokens,
                latency_ms=int(response.latency_s * 1000),
                cost_usd=cost_usd(model, response.usage, ttl=self.ttl or "5m"),
                cache_ttl=self.ttl,
                opens_turn=opens_turn,
            ),
            last_message_id=last_id,
            engine_state=self.engine.state.to_json(),
        )


def _ref_label(ref: object) -> object:
    """The stored message id the model may pass to `recall` (the newest row of a merged message)."""
    return max(ref) if isinstance(ref, tuple) and ref else ref


class TurnRunner:
    def __init__(
        self,
        *,
        store: Store,
        locks: ChatLocks,
        llm: LLMClient,
        settings: TurnSettings,
        make_engine: EngineFactory,
        make_tools: ToolsFactory,
        send: SendFn,
        typing: Callable[[ChatRef], AbstractAsyncContextManager[None]] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.locks = locks
        self.llm = llm
        self.settings = settings
        self.make_engine = make_engine
        self.make_tools = make_tools
        self.send = send
        self.typing = typing or (lambda _chat: contextlib.nullcontext())
        self.clock = clock
        self.metrics = metrics
        self._cache_health: dict[int, CacheHealth] = {}
        self._cached: dict[int, tuple[int | None, list[CachedPrefix]]] = {}
        """session -> (the last reply call's newest message id, prefixes cached as of that call)."""

    def cache_health_of(self, chat_pk: int) -> CacheHealth:
        """Per-chat cache health in this process (hit ratios, thrash warnings in the log)."""
        health = self._cache_health.get(chat_pk)
        if health is None:
            if len(self._cache_health) >= 10_000:  # bound memory: forget the oldest chats
                self._cache_health.pop(next(iter(self._cache_health)))
            health = self._cache_health[chat_pk] = CacheHealth(f"chat {chat_pk}")
        return health

    async def answer_pending(self, chat: ChatRef, chat_pk: int) -> int:
        """Answer everything pending in the chat; returns the number of turns run."""
        turns = 0
        async with self.locks.hold(chat_pk):
            while True:
                snapshot = await self.store.turn_snapshot(chat_pk)
                pending = [r for r in snapshot.rows if r.needs_reply and not r.replied]
                if not pending:
                    return turns
                started = time.perf_counter()
                await self._turn(chat, chat_pk, snapshot, pending)
                if self.metrics is not None:
                    self.metrics.observe_turn(time.perf_counter() - started)
                turns += 1

    async def _turn(
        self,
        chat: ChatRef,
        chat_pk: int,
        snapshot: TurnSnapshot,
        pending: Sequence[StoredMessage],
    ) -> None:
        session = snapshot.session
        rows: Sequence[StoredMessage] = snapshot.rows
        session_pk = session.id
        engine = self.make_engine(session.engine_state, session=session)
        notices: list[str] = []
        reply_to = pending[-1].platform_message_id
        try:
            rows, report = await self._cache_aware(session_pk, engine, rows, snapshot.cache)
            if report is None or not report.changed:
                # A cache-aware attempt that changed nothing must not stand in for the safety net.
                rows, hygiene = await self._hygiene(session_pk, engine, rows, snapshot.hygiene)
                report = hygiene or report
            if report is not None and report.changed:
                # The compaction moved the counters, the cache state and the compaction count.
                snapshot = await self.store.turn_snapshot(chat_pk)
            if report is not None and self.settings.notify_compaction:
                notices.append(notice_for(report))
            items = build_window(rows)
            window = [Entry(message=i.message, ref=i.ids) for i in items]
            hooks = _Hooks(
                self,
                chat_pk=chat_pk,
                session_pk=session_pk,
                engine=engine,
                after_id=rows[-1].id if rows else None,
            )
            hooks.plan = self._plan_for(snapshot, rows, window)
            hooks.ttl = (
                self._ttl_for(snapshot.cache, new_tokens=snapshot.session.tokens_since_call)
                if hooks.plan is None
                else hooks.plan.first_tail
            )
            system = system_prompt_for(self.settings.system_prompt, snapshot.session.compaction_count)
            started = time.perf_counter()
            async with self.typing(chat):
                result: TurnResult = await run_turn(
                    llm=self._timed_llm(chat),
                    engine=engine,
                    window=window,
                    system=system,
                    tools=self.make_tools(chat_pk),
                    config=replace(self.settings.loop, cache_ttl=hooks.ttl, cache_plan=hooks.plan),
                    dynamic_context={},  # stored with each addressed message, so the prefix stays cached
                    hooks=hooks,
                    ref_label=_ref_label,
                )
            logger.info(
                "turn chat=%s:%s iterations=%d in %.2fs",
                chat.platform,
                chat.chat_id,
                result.iterations,
                time.perf_counter() - started,
            )
            self._remember_cached(session_pk, hooks, result)
            if self.settings.notify_compaction:
                notices.extend(notice_for(r) for r in hooks.reports)
            text = result.reply_text.strip() or "(no reply)"
        except LLMError as exc:
            logger.warning(
                "LLM call failed for chat %s:%s: %s (%s)",
                chat.platform,
                chat.chat_id,
                type(exc).__name__,
                exc,
            )
            text = human_error(exc)
        await self.store.mark_replied([r.id for r in pending])
        body = "\n\n".join([*notices, text]) if notices else text
        await self.send(OutgoingMessage(chat=chat, text=body, reply_to_message_id=reply_to))

    def _calibrated(self, estimate: int) -> int:
        calibration = self.settings.loop.calibration
        return calibration.apply(estimate) if calibration is not None else estimate

    async def _hygiene(
        self,
        session_pk: int,
        engine: ContextEngine,
        rows: Sequence[StoredMessage],
        inputs: HygieneInputs,
    ) -> tuple[Sequence[StoredMessage], CompactionReport | None]:
        decision = decide(
            enabled=self.settings.compression_enabled,
            message_count=inputs.message_count,
            last_prompt_tokens=inputs.last_prompt_tokens,
            tokens_since_call=self._calibrated(inputs.tokens_since_call),
            active_tokens=self._calibrated(inputs.active_tokens),
            context_length=self.settings.model.context_window,
            threshold=self.settings.hygiene_threshold,
        )
        if not decision.fire:
            logger.debug("no hygiene for session %s: %s", session_pk, decision.reason)
            return rows, None
        logger.info("hygiene for session %s: %s", session_pk, decision.reason)
        return await self._compact_before_turn(session_pk, engine, rows, trigger="hygiene")

    async def _compact_before_turn(
        self, session_pk: int, engine: ContextEngine, rows: Sequence[StoredMessage], *, trigger: str
    ) -> tuple[Sequence[StoredMessage], CompactionReport]:
        """Compact the stored window (one message per row, so group chatter can be compacted too)."""
        items = build_window(rows, merge=False)
        report, _ = await compact_session(
            self.store,
            engine,
            session_pk=session_pk,
            messages=[i.message for i in items],
            refs=[i.ids for i in items],
            trigger=trigger,
            force=True,
        )
        if self.metrics is not None:
            self.metrics.observe_compaction(report.trigger, report.outcome.value)
        if report.changed:
            rows = await self.store.load_window(session_pk)
        return rows, report

    async def _cache_aware(
        self, session_pk: int, engine: ContextEngine, rows: Sequence[StoredMessage], state: CacheState
    ) -> tuple[Sequence[StoredMessage], CompactionReport | None]:
        """Compact first when this request will rewrite the whole prompt cache anyway (it expired)."""
        share = self.settings.cache_aware_share
        if share is None or not self.settings.compression_enabled:
            return rows, None
        decision = decide_compaction(
            enabled=True,
            message_count=state.message_count,
            context_tokens=state.context_tokens,
            context_length=self.settings.model.context_window,
            last_call_at=state.last_call_at,
            last_ttl=state.last_ttl,
            now=self.clock(),
            cache_aware_share=share,
        )
        if not decision.fire:
            return rows, None
        logger.info("cache-aware compaction for session %s: %s", session_pk, decision.reason)
        return await self._compact_before_turn(session_pk, engine, rows, trigger="scheduled")

    def _plan_for(
        self, snapshot: TurnSnapshot, rows: Sequence[StoredMessage], window: Sequence[Entry]
    ) -> TurnCachePlan | None:
        """With `auto`: the turn's marker plan from the cached prefixes this process remembers for the
        session (else the previous call's end, if its entry is live) and the chat's gaps."""
        if self.settings.cache_mode != "auto":
            return None
        state = snapshot.cache
        remembered = self._cached.get(state.session_pk)
        if remembered is not None and remembered[0] == snapshot.session.last_call_message_id:
            prefixes = remembered[1]
        elif (
            state.last_call_at is not None
            and state.last_ttl in ("5m", "1h")
            and (snapshot.session.last_call_message_id is not None)
        ):
            ttl: CacheTTL = "1h" if state.last_ttl == "1h" else "5m"
            prefixes = [CachedPrefix(snapshot.session.last_call_message_id, ttl, state.last_call_at)]
        else:
            prefixes = []
        position = {r.id: i for i, r in enumerate(rows)}

        def tokens_after(message_id: int) -> int:
            start = position.get(message_id, -1) + 1
            return self._calibrated(sum(r.token_estimate for r in rows[start:]))

        return plan_turn(
            state.cache_gaps,
            prefixes=prefixes,
            window_ids=[e.ref if isinstance(e.ref, tuple) else () for e in window],
            tokens_after=tokens_after,
            prompt_tokens=state.context_tokens,
            model=self.settings.model,
            now=self.clock(),
            last_call_at=state.last_call_at,
        )

    def _remember_cached(self, session_pk: int, hooks: _Hooks, result: TurnResult) -> None:
        """Keep the turn's cached prefixes (by stored message id) for the session's next turn."""
        if hooks.plan is None:
            return
        before = {p.message_id: p for p in self._cached.get(session_pk, (None, []))[1]}
        now = self.clock()
        prefixes: list[CachedPrefix] = []
        for point in result.cache_points:
            if not isinstance(point.ref, tuple) or not point.ref:
                continue
            message_id = max(point.ref)
            old = before.get(message_id)
            if point.touched or old is not None:
                at = now if point.touched or old is None else old.at
                prefixes.append(CachedPrefix(message_id, point.ttl, at))
        self._cached[session_pk] = (hooks.last_id, prefixes)

    def _ttl_for(self, state: CacheState, *, new_tokens: int) -> CacheTTL | None:
        """This turn's cache TTL: the fixed setting, or (auto) the cheapest for the chat's request gaps
        given the time since its last call and whether that call's cache entry is still live."""
        mode = self.settings.cache_mode
        if mode is None or mode != "auto":
            return self.settings.cache_ttl
        now = self.clock()
        elapsed = None if state.last_call_at is None else (now - state.last_call_at).total_seconds()
        return ttl_for_turn(
            mode,
            state.cache_gaps,
            prefix_tokens=state.context_tokens,
            model=self.settings.model,
            elapsed=elapsed,
            live_prefix=not cache_expired(state.last_call_at, state.last_ttl, now),
            new_tokens=new_tokens,
        )

    def _timed_llm(self, chat: ChatRef) -> LLMClient:
        if self.metrics is None:
            return self.llm
        return _FirstRequestTimer(self.llm, self.metrics, (chat.platform, chat.chat_id, chat.thread_id))


class _FirstRequestTimer:
    """Observes the gateway overhead (update arrival -> LLM request) at a turn's first request."""

    def __init__(self, llm: LLMClient, metrics: Metrics, key: tuple[str, str, str | None]) -> None:
        self._llm = llm
        self._metrics = metrics
        self._key: tuple[str, str, str | None] | None = key

    async def create(self, request: LLMRequest) -> LLMResponse:
        if self._key is not None:
            self._metrics.observe_overhead(self._key)
            self._key = None
        return await self._llm.create(request)

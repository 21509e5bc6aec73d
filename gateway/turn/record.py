"""What one turn writes: the agent loop's hooks (persist, compact, usage) over one `Turn` and the
session's cache state at the end, built with explicit dependencies (store, compactor, metrics, clock).

A turn's messages are stored right after the newest message it answers, before anything that arrived
meanwhile; a compaction in the loop goes through the one `Compactor` over those stored rows and hands
the loop the window rebuilt from them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from agent.caching.forecast import TurnStart
from agent.caching.health import CacheHealth
from agent.caching.plan import CacheState, advance
from agent.caching.waste import CacheCall, between
from agent.llm import LLMResponse
from agent.loop import Compacted, Entry, TurnResult
from agent.models import TTL_SECONDS, CacheTTL, ModelInfo, cost_usd
from agent.tokens import Calibration
from agent.types import Message, text_of
from gateway.compaction.compactor import CompactionReport, Compactor
from gateway.compaction.request_window import rows_through
from gateway.metrics import Metrics
from gateway.store import CallRecord, NewMessage, Store
from gateway.store.records import stored_role
from gateway.turn.kit import SessionKit
from gateway.turn.turn import Ref, Turn, newest_id, window_entries

logger = logging.getLogger(__name__)

IN_LOOP = "agent"
SERVER = "server"
"""A server-side compaction the API made in a reply call, taken into the stored window."""


class TurnRecorder:
    """`agent.loop.TurnHooks` for one turn of one session. The kit stores what the model wrote with
    its estimates and gives the system prompt after a compaction; the model prices the calls."""

    def __init__(
        self,
        turn: Turn,
        *,
        store: Store,
        compactor: Compactor,
        metrics: Metrics | None,
        clock: Callable[[], datetime],
        kit: SessionKit,
        model: ModelInfo,
        calibration: Calibration,
    ) -> None:
        self.store = store
        self.compactor = compactor
        self.metrics = metrics
        self.clock = clock
        self.turn = turn
        self.session = turn.session
        self.engine = turn.engine
        self.kit = kit
        self.model = model
        self.calibration = calibration
        self.health: CacheHealth = turn.cache.health_for(f"chat {turn.chat_pk}")
        self.after_id = turn.after_id
        """The newest message of the turn so far: its new messages are stored right after it."""
        self.reports: list[CompactionReport] = []
        self.last_message_id: str | None = None
        """The turn's last response id (the session's cache diagnostics compare the next request with it)."""
        self._last_call: CacheCall | None = _last_call(self.health, model.name)

    async def persist(self, messages: list[Message]) -> list[Ref]:
        stored = await self.store.append_messages(
            self.session.id,
            [
                NewMessage(
                    role=stored_role(m["role"]),
                    content=m["content"],
                    text=text_of(m),
                    author_id="assistant" if m["role"] == "assistant" else "tool",
                    author_name="assistant" if m["role"] == "assistant" else "tool",
                    token_estimate=self.kit.stored_tokens(m),
                    created_at=self.clock(),
                )
                for m in messages
            ],
            after_id=self.after_id,
        )
        if stored:
            self.after_id = stored[-1].message.id
        return [(s.message.id,) for s in stored]

    async def compact(
        self, window: Sequence[Entry[Ref]], *, force: bool, why: str, server: bool = False
    ) -> Compacted[Ref] | None:
        if not server and not self.engine.config.enabled:
            # compression.enabled: false turns off every automatic compaction, the loop's fit and
            # overflow ones too: a prompt that does not fit reaches the user as an overflow error
            logger.info("in-loop compaction skipped (%s): compression is disabled", why)
            return None
        trigger = SERVER if server else IN_LOOP
        report = await self.compactor.compact(
            self.session, self.engine, trigger=trigger, force=force, through_id=self.after_id
        )
        self.reports.append(report)
        if not report.changed:
            logger.info("in-loop compaction changed nothing (%s): %s", why, report.reason)
            return None
        rows = rows_through(await self.store.load_window(self.session.id), self.after_id)
        window = window_entries(rows, system_notes=self.model.mid_conversation_system)
        return Compacted(window, system=self.kit.system(compacted=True, pins=self.turn.pins))

    async def usage(
        self, response: LLMResponse, *, purpose: str, last_ref: Ref | None, ttl: CacheTTL | None
    ) -> None:
        usage = response.usage
        call = CacheCall(
            at=self.clock().timestamp(),
            model=response.model or self.model.name,
            input_tokens=usage.input_tokens,
            cache_read_tokens=usage.cache_read_input_tokens,
            cache_write_tokens=usage.cache_creation_input_tokens,
            ttl=ttl,
        )
        if self.metrics is not None:
            self.metrics.observe_usage(usage, purpose=purpose)
            self.metrics.observe_call_outcome(
                response.refusal_category,
                left_out=response.thinking_left_out,
                dropped_by_api=response.thinking_dropped_by_api,
            )
            if self._last_call is not None:
                self.metrics.observe_cache_waste(between(self._last_call, call, now=call.at))
        self._last_call = call
        await self._record_server_compaction(response, ttl)
        self.health.record(
            # a server-side compaction's own iteration is the one that read the prefix as sent
            response.compaction_usage or usage,
            cacheable_prefix_sent=ttl is not None and usage.prompt_tokens >= self.model.min_cacheable_tokens,
            at=self.clock().timestamp(),
            ttl_seconds=TTL_SECONDS[ttl or "5m"],
            miss_reason=response.cache_miss_reason,
            missed_tokens=response.cache_missed_tokens,
        )
        self.last_message_id = response.message_id or self.last_message_id
        await self.store.record_call(
            self.session.id,
            self.session.chat_pk,
            CallRecord.of(
                response.model or self.model.name,
                "reply",
                usage,
                latency_ms=int(response.latency_s * 1000),
                cost_usd=cost_usd(self.model, usage, ttl=ttl or "5m"),
                cache_ttl=ttl,
                refusal=response.refusal_category,
                thinking_dropped=response.thinking_dropped_by_api,
            ),
            last_message_id=newest_id(last_ref),
            engine_state=self.engine.state.to_json(),
        )

    async def _record_server_compaction(self, response: LLMResponse, ttl: CacheTTL | None) -> None:
        """The API's compaction iteration is billed apart from the reply's: it is a summary call."""
        spent = response.compaction_usage
        if spent is None:
            return
        if self.metrics is not None:
            self.metrics.observe_usage(spent, purpose="summary")
        await self.store.record_call(
            self.session.id,
            self.session.chat_pk,
            CallRecord.of(
                response.model or self.model.name,
                "summary",
                spent,
                cost_usd=cost_usd(self.model, spent, ttl=ttl or "5m"),
                cache_ttl=ttl,
            ),
        )

    def cache_after(self, result: TurnResult[Ref] | None) -> CacheState:
        """The session's cache state after the turn (its prefixes unchanged when the turn failed)."""
        if result is None:
            points = [(p.message_id, p.ttl, False) for p in self.turn.cache.prefixes]
        else:
            points = [
                (message_id, p.ttl, p.touched)
                for p in result.cache_points
                if (message_id := newest_id(p.ref)) is not None
            ]
        return advance(
            self.turn.cache,
            points,
            now=self.clock(),
            health=self.health,
            calibration=self.calibration,
            turn=self._turn(result),
            last_message_id=self.last_message_id,
        )

    def _turn(self, result: TurnResult[Ref] | None) -> TurnStart | None:
        """This turn's start for the forecast's history, with the calls it made when it ended."""
        turn = self.turn.plan.turn
        if turn is None or result is None:
            return turn
        return dataclasses.replace(turn, calls=max(result.iterations, 1))


def _last_call(health: CacheHealth, model: str) -> CacheCall | None:
    """The session's previous call as its cache health remembers it (for the waste it left)."""
    if not health.recent:
        return None
    last = health.recent[-1]
    return CacheCall(
        at=last.at,
        model=model,
        input_tokens=last.input_tokens,
        cache_read_tokens=last.cache_read_tokens,
        cache_write_tokens=last.cache_write_tokens,
        ttl="1h" if last.ttl_seconds >= 3600 else "5m" if last.cacheable_prefix_sent else None,
    )

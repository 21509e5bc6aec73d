"""Keeping chats' prompt caches warm between their requests (`prompt_caching.keep_alive`): the job body.

Every `SCAN_EVERY`, the sessions whose cache entry is about to expire are looked at (the store keeps
when each is due: `gateway.store.cache.looks`, so the scan reads only those), and
`agent.caching.keepalive.plan_refresh` decides from the chat's own forecast whether a refresh pays.
Where it does, the chat's lock is taken (a turn running in the chat, here or in another worker, goes
first, and the decision is made again on what it left), and the prompt up to that entry is resent with
`max_tokens: 0` (`agent.loop.refresh_cache`): the API reads the entry, which lives for its TTL again, and
generates nothing. The call is accounted like every other (`llm_calls.purpose = 'keepalive'`, in
`/stats` and the metrics) and recorded in the chat's cache health; the entry's new life is saved in the
session's cache state. A refresh that read nothing (the prompt no longer matched) is logged, counted,
and that entry is not refreshed again. A session that what arrived since its reply (a group's chatter)
put at a compaction threshold is not refreshed: its next turn compacts before sending that prompt again
(`TurnRunner.compacts_first`). The refresh is built by the session kit, as a turn's request is, over
one engine built for the session row it read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.caching.keepalive import Refresh, next_look, plan_refresh
from agent.caching.plan import CacheState, TurnCachePlan
from agent.compaction.engine import ContextEngine
from agent.errors import LLMError
from agent.llm import LLMClient
from agent.loop import refresh_cache
from agent.models import TTL_SECONDS, ModelInfo, cost_usd
from agent.spending.periods import SpendFor
from agent.tokens import Calibration
from agent.usage import Usage
from gateway.media.presence import MediaPresence
from gateway.metrics import Metrics
from gateway.platforms.base import ChatKind
from gateway.spending.budget import Budget, spending_for
from gateway.store import CallRecord, ChatLocks, SessionRecord, Store, TurnSnapshot
from gateway.turn.kit import SessionKit
from gateway.turn.turn import newest_id, tokens_after_in, window_entries

logger = logging.getLogger(__name__)

SCAN_EVERY = timedelta(seconds=60)
"""How often the job looks (an entry is considered in the last `LEAD` seconds of its life)."""
BATCH = 500
"""Sessions looked at per run at most, the longest due first (the rest are due at the next run)."""


@dataclass(frozen=True, slots=True)
class Refreshed:
    """One refresh sent: the session, the prefix size it was for, what the API read, what it cost."""

    session_id: int
    tokens: int
    read_tokens: int
    cost_usd: float


CompactsFirst = Callable[[SessionRecord, ContextEngine, CacheState, datetime], bool]
"""Whether the session's next turn compacts before its first request (`TurnRunner.compacts_first`)."""


class CacheKeeper:
    """Sends the refreshes that pay; `run` is the job body. The kit builds a refresh as it builds a
    turn's request; the model prices it and the calibration sizes the prefixes, as a turn's do."""

    def __init__(
        self,
        *,
        store: Store,
        locks: ChatLocks,
        llm: LLMClient,
        kit: SessionKit,
        model: ModelInfo,
        calibration: Calibration,
        compacts_first: CompactsFirst,
        presence: MediaPresence,
        metrics: Metrics | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.store = store
        self.budget = budget
        self.presence = presence
        """Which chats have media: learned here from the stored window as a turn learns it, so a worker
        that has not served the chat since it started offers the same tools (part of the cached prefix)."""
        self.locks = locks
        self.llm = llm
        self.kit = kit
        self.model = model
        self.calibration = calibration
        self.compacts_first = compacts_first
        self.metrics = metrics

    async def run(self, now: datetime, *, batch: int = BATCH) -> list[Refreshed]:
        """Refresh every session's cache entry that is about to expire and worth keeping."""
        done: list[Refreshed] = []
        for session, kind in await self.store.cache_looks_due(now, limit=batch):
            if session.chat_pk in self.locks.held_keys():
                continue  # a turn is running: it reads (and refreshes) the cache itself, and saves it
            if await self._spent(session.id, session.chat_pk):
                continue
            async with self.locks.hold(session.chat_pk):
                with spending_for(SpendFor(session.chat_pk)):
                    refreshed = await self._refresh(session.chat_pk, kind, now)
            if refreshed is not None:
                done.append(refreshed)
        if done:
            logger.info("cache keep-alive: %d refresh(es) sent", len(done))
        return done

    async def _spent(self, session_pk: int, chat_pk: int) -> bool:
        """A chat whose budget (or the bot's) is spent keeps no cache warm: its entry is let go."""
        if self.budget is None:
            return False
        spent = await self.budget.spent(SpendFor(chat_pk))
        if spent is None:
            return False
        logger.info("session %s: no keep-alive refresh: %s", session_pk, spent)
        await self.store.set_cache_look(session_pk, None)
        return True

    async def _refresh(self, chat_pk: int, kind: str, now: datetime) -> Refreshed | None:
        snapshot = await self.store.turn_snapshot(chat_pk)
        session = snapshot.session
        state = CacheState.from_json(session.cache_state)
        engine = self.kit.engine(session, snapshot.pins)
        decision = self._decide(snapshot, engine, state, kind, now)
        if decision is not None and decision.due:
            sent = await self._send(snapshot, engine, state, decision, now)
            if sent is not None:
                return sent  # the refreshed state is saved with its next look
        elif decision is not None:
            logger.debug("session %s: cache entry let go (refresh value %.0f)", session.id, decision.value)
            judged = state.judged(decision.prefix, now, odds=decision.odds)
            if judged is not state:  # its outcome calibrates the chat's next decisions
                await self.store.save_cache_state(session.id, judged.to_json())
                return None
        look = next_look(state, now)  # the same while a window is open; then the next one's, or none
        if look != session.cache_look_at:
            await self.store.set_cache_look(session.id, look)
        return None

    def _decide(
        self, snapshot: TurnSnapshot, engine: ContextEngine, state: CacheState, kind: str, now: datetime
    ) -> Refresh | None:
        session = snapshot.session
        if session.last_prompt_tokens is None:
            return None  # compacted since the last reply call: the prompt changed under its cache entries
        tokens_after = tokens_after_in(snapshot.rows, self.calibration)
        prompt = session.context_tokens(self.calibration.apply)
        if self.compacts_first(session, engine, state, now):
            # what arrived since the reply (a group's chatter) put the session at a compaction threshold:
            # the next turn compacts before its first call, so no request reads this prompt again; let it
            # expire (the idle job may then compact it without a cache to lose)
            logger.debug("session %s: at a compaction threshold, its cache entry is let go", session.id)
            return None
        return plan_refresh(
            state,
            now=now,
            prefix_tokens=lambda message_id: max(prompt - tokens_after(message_id), 0),
            kind="private" if kind == ChatKind.PRIVATE else "group",
            min_cacheable=self.model.min_cacheable_tokens,
            prices=self.model.cache,
        )

    async def _send(
        self,
        snapshot: TurnSnapshot,
        engine: ContextEngine,
        state: CacheState,
        decision: Refresh,
        now: datetime,
    ) -> Refreshed | None:
        session = snapshot.session
        window = window_entries(snapshot.rows, system_notes=self.model.mid_conversation_system)
        ends = [i for i, e in enumerate(window) if newest_id(e.ref) == decision.prefix.message_id]
        if not ends:
            logger.warning(
                "session %s: cached message %s is not in the window", session.id, decision.prefix.message_id
            )
            return None
        end = ends[0]
        self.presence.note_window(session.chat_pk, (r.content for r in snapshot.rows))
        plan = TurnCachePlan(reads=((end, decision.prefix.ttl),))
        conversation = self.kit.conversation(
            snapshot,
            window[: end + 1],
            llm=self.llm,
            engine=engine,
            plan=plan,
            stream=None,
            ref_label=newest_id,
        )
        try:
            response = await refresh_cache(conversation)
        except LLMError as exc:
            # the entry simply expires: the next turn writes it again, as it would have without us
            logger.warning(
                "cache keep-alive of session %s failed: %s (%s)", session.id, type(exc).__name__, exc
            )
            if self.metrics is not None:
                self.metrics.observe_keepalive("error")
            return None
        return await self._record(session, state, decision, response.usage, now, response.model)

    async def _record(
        self,
        session: SessionRecord,
        state: CacheState,
        decision: Refresh,
        usage: Usage,
        now: datetime,
        model: str | None,
    ) -> Refreshed:
        model_info = self.model
        ttl = decision.prefix.ttl
        read = usage.cache_read_input_tokens > 0
        health = state.health_for(str(session.chat_pk))
        health.record(usage, cacheable_prefix_sent=True, at=now.timestamp(), ttl_seconds=TTL_SECONDS[ttl])
        cost = cost_usd(model_info, usage, ttl=ttl)
        await self.store.record_refresh(
            session.id,
            session.chat_pk,
            CallRecord.of(model or model_info.name, "keepalive", usage, cost_usd=cost, cache_ttl=ttl),
            state.refreshed(
                decision.prefix.message_id, now, read=read, odds=decision.odds, health=health
            ).to_json(),
        )
        if self.metrics is not None:
            self.metrics.observe_usage(usage, purpose="keepalive")
            self.metrics.observe_keepalive("read" if read else "missed")
        if not read:
            logger.warning(
                "cache keep-alive of session %s read nothing (%d tokens written instead): the prompt no "
                "longer matches its cached prefix; that entry is not refreshed again",
                session.id,
                usage.cache_creation_input_tokens,
            )
        return Refreshed(session.id, decision.tokens, usage.cache_read_input_tokens, cost)

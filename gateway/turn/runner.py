"""One chat's turns, top to bottom: lock, snapshot, compaction decision, cache plan, agent loop, persist,
reply.

A turn answers every stored message of the chat that still needs a reply, so messages that arrive
while a turn runs are answered together in the next one, in order, never interleaved. The reply may be
shown while it is written (`gateway.reply.live_reply`), but everything the agent produces is stored before the
reply is recorded for delivery, in the transaction that marks the messages answered (`gateway.reply.outbox`
sends it, after a restart too); the session's cache state is saved with them, so the next turn (in this
process or another worker) plans from the same facts.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from agent.caching.plan import CacheMode, CacheState, TurnCachePlan, adopt_calibration, plan_turn
from agent.compaction.engine import ContextEngine
from agent.errors import BudgetExceededError, LLMError
from agent.llm import LLMClient
from agent.loop import Entry, TurnResult, run_turn
from agent.models import ModelInfo
from agent.pins import pins_note
from agent.spending.periods import SpendFor
from agent.tokens import Calibration
from agent.types import Block
from gateway.compaction.compactor import CompactionReport, Compactor
from gateway.compaction.triggers import CompactionPolicy
from gateway.errors import SendError
from gateway.media.aging import MediaAging
from gateway.metrics import Metrics, TimedLLM
from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.reply.live_reply import LiveReply
from gateway.reply.outbox import Outbox
from gateway.reply.wording import (
    budget_cut_turn,
    budget_spent,
    compaction_notice,
    empty_reply,
    refused,
    turn_failed,
)
from gateway.spending.budget import Budget, spending_for
from gateway.store import ChatLocks, NewMessage, PromptPins, SessionRecord, Store, StoredMessage, TurnSnapshot
from gateway.store.records import PIN_NOTICE_AUTHOR
from gateway.turn.kit import SessionKit
from gateway.turn.record import TurnRecorder
from gateway.turn.turn import Ref, Turn, newest_id, tokens_after_in, window_entries

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TurnSettings:
    model: ModelInfo
    policy: CompactionPolicy
    notify_compaction: bool
    cache_mode: CacheMode | None
    """prompt_caching.cache_ttl when caching is on ("auto" plans per chat and call); None: no caching."""
    answer_after_reset: bool = False
    """A chat whose budget is spent keeps its pending messages for after the reset (no turn runs)."""


class TurnRunner:
    def __init__(
        self,
        *,
        store: Store,
        locks: ChatLocks,
        llm: LLMClient,
        settings: TurnSettings,
        kit: SessionKit,
        calibration: Calibration,
        compactor: Compactor,
        outbox: Outbox,
        platforms: Platforms,
        clock: Callable[[], datetime],
        metrics: Metrics | None = None,
        media_aging: MediaAging | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.store = store
        self.budget = budget
        self.media_aging = media_aging
        self.locks = locks
        self.llm = llm
        self.settings = settings
        self.kit = kit
        self.calibration = calibration
        """The model's tokenizer calibration: the thresholds and the cache plan count with it."""
        self.compactor = compactor
        self.outbox = outbox
        self.platforms = platforms
        self.clock = clock
        self.metrics = metrics

    async def answer_pending(self, chat: ChatRef, chat_pk: int) -> int:
        """Answer everything pending in the chat; returns the number of turns run."""
        turns = 0
        arrived: int | None = None
        async with self.locks.hold(chat_pk):
            while True:
                snapshot = await self.store.turn_snapshot(chat_pk)
                pending = [r for r in snapshot.rows if r.needs_reply and not r.replied]
                if not pending:
                    if arrived is not None and await self._compact_after_reply(snapshot, arrived):
                        arrived = None
                        continue  # what arrived during the compaction is answered now
                    return turns
                sender = pending[-1].author_id
                who = SpendFor(chat_pk, user=f"{chat.platform}:{sender}" if sender else None)
                if await self._held_for_reset(who):
                    return turns
                started = time.perf_counter()
                with spending_for(who):
                    compacted = await self._turn(chat, snapshot, pending)
                # one compaction per turn at most: a turn that compacted leaves the next to its own check
                arrived = None if compacted else snapshot.session.tokens_since_call
                if self.metrics is not None:
                    self.metrics.observe_turn(time.perf_counter() - started)
                turns += 1

    async def _held_for_reset(self, who: SpendFor) -> bool:
        """With `limits.answer_after_reset`, a spent budget leaves the pending messages for after its
        reset (their senders were told when they arrived); the reset job starts the turn then."""
        if self.budget is None or not self.settings.answer_after_reset:
            return False
        spent = await self.budget.spent(who)
        if spent is None:
            return False
        logger.info("chat %s: %s; its messages wait for the reset", who.chat_pk, spent)
        return True

    async def _turn(self, chat: ChatRef, snapshot: TurnSnapshot, pending: Sequence[StoredMessage]) -> bool:
        """Answer `pending`; True when the turn compacted the session (before or during the loop)."""
        turn = await self._prepare(chat, snapshot, pending)
        recorder = TurnRecorder(
            turn,
            store=self.store,
            compactor=self.compactor,
            metrics=self.metrics,
            clock=self.clock,
            kit=self.kit,
            model=self.settings.model,
            calibration=self.calibration,
        )
        result: TurnResult[Ref] | None = None
        live = self.outbox.live(chat, reply_to=turn.reply_to)
        try:
            result = await self._run_agent(turn, recorder, live)
            text = reply_text(result, self.clock())
        except LLMError as exc:
            logger.warning(
                "LLM call failed for chat %s:%s: %s (%s)",
                chat.platform,
                chat.chat_id,
                type(exc).__name__,
                exc,
            )
            text = turn_failed(exc, live.written if live is not None else "")
        finally:
            if live is not None:
                await live.close()
        held = self._held(result)
        if held is not None:
            await self._tell_held(turn, held)
        else:
            await self._deliver(turn, recorder, result, text, live)
        return turn.compacted_before or any(r.changed for r in recorder.reports)

    def _held(self, result: TurnResult[Ref] | None) -> BudgetExceededError | None:
        """The spending cap that refused the turn's first call, when its messages wait for the reset."""
        if result is None or result.iterations > 0 or not self.settings.answer_after_reset:
            return None
        return result.budget

    async def _tell_held(self, turn: Turn, exceeded: BudgetExceededError) -> None:
        """Say that the messages wait for the budget's reset; they stay unanswered until then."""
        text = budget_spent(exceeded, self.clock(), answer_after_reset=True)
        try:
            await self.platforms.send(
                OutgoingMessage(chat=turn.chat, text=text, reply_to_message_id=turn.reply_to)
            )
        except SendError as exc:
            logger.error(
                "budget notice to %s:%s not delivered: %s", turn.chat.platform, turn.chat.chat_id, exc
            )

    async def _prepare(self, chat: ChatRef, snapshot: TurnSnapshot, pending: Sequence[StoredMessage]) -> Turn:
        """The turn, once its session is settled: compacted first where it must be, a pin change told.
        The engine is built again only when that moved the stored session row."""
        engine = self.kit.engine(snapshot.session, snapshot.pins)
        cache = CacheState.from_json(snapshot.session.cache_state)
        adopt_calibration(self.calibration, cache)
        report = await self._compact_before(snapshot.session, engine, cache)
        settled = await self._settle(snapshot, compacted=report is not None and report.changed)
        if settled is not snapshot:  # the session row moved: the engine reads it again
            engine = self.kit.engine(settled.session, settled.pins)
        rows = settled.rows
        if self.media_aging is not None:  # old images stop travelling when it pays (agent.media_aging)
            rows = await self.media_aging.apply(settled.session, rows, cache_cold=cache.expired(self.clock()))
        window = tuple(window_entries(rows, system_notes=self.settings.model.mid_conversation_system))
        return Turn(
            chat=chat,
            snapshot=settled,
            pending=tuple(pending),
            engine=engine,
            cache=cache,
            window=window,
            plan=self._plan(chat, settled, cache, window),
            compaction=report,
        )

    async def _settle(self, snapshot: TurnSnapshot, *, compacted: bool) -> TurnSnapshot:
        """The snapshot the turn runs on: read again after a compaction before it (the counters, the
        window and the compaction count moved), with a pin change told."""
        if compacted:
            snapshot = await self.store.turn_snapshot(snapshot.session.chat_pk)
        return await self._tell_pins(snapshot)

    async def _deliver(
        self,
        turn: Turn,
        recorder: TurnRecorder,
        result: TurnResult[Ref] | None,
        text: str,
        live: LiveReply | None,
    ) -> None:
        """Record the reply with the answered messages and the session's cache state, then send it."""
        notices = [compaction_notice(turn.compaction)] if turn.compaction is not None else []
        notices.extend(compaction_notice(r) for r in recorder.reports if r.changed)
        body = "\n\n".join([*notices, text]) if self.settings.notify_compaction and notices else text
        last = result.window[-1] if result is not None and result.window else None
        reply_pk = newest_id(last.ref) if last is not None and last.message["role"] == "assistant" else None
        reply = self.outbox.reply(
            turn.chat, turn.chat_pk, body, message_pk=reply_pk, reply_to=turn.reply_to, live=live
        )
        parts = await self.store.finish_turn(
            turn.session.id, [r.id for r in turn.pending], recorder.cache_after(result).to_json(), reply=reply
        )
        await self.outbox.deliver(turn.chat, parts, live)

    async def _tell_pins(self, snapshot: TurnSnapshot) -> TurnSnapshot:
        """Where the model takes mid-conversation system messages, a pin change is told in a note after
        the newest message instead of rewriting the system prompt (which would void the cached prefix
        and every thinking block): the prompt keeps the pins it had when its prefix was last rewritten."""
        if not self.settings.model.mid_conversation_system:
            return snapshot
        session, pins = snapshot.session, tuple(snapshot.pins)
        told = session.prompt_pins
        if told is None:  # a new prefix (a new session, or compacted): the prompt carries today's pins
            await self.store.freeze_prompt_pins(session.id, pins)
            return dataclasses.replace(
                snapshot, session=dataclasses.replace(session, prompt_pins=PromptPins(pins, pins))
            )
        if told.told == pins:
            return snapshot
        text = pins_note(pins)
        content: list[Block] = [{"type": "text", "text": text}]
        note = NewMessage(
            role="user",
            content=content,
            text=text,
            token_estimate=self.kit.stored_tokens({"role": "system", "content": content}),
            author_id=PIN_NOTICE_AUTHOR,
            author_name="pins",
            created_at=self.clock(),
        )
        after = snapshot.rows[-1].id if snapshot.rows else None
        await self.store.tell_pins(session.id, note, after_id=after, pins=PromptPins(told.system, pins))
        logger.info("session %s: the pin change is told in a note (%d pins)", session.id, len(pins))
        return await self.store.turn_snapshot(session.chat_pk)

    def compacts_first(
        self, session: SessionRecord, engine: ContextEngine, cache: CacheState, now: datetime
    ) -> bool:
        """Whether a turn starting at `now` would compact the session before its first request (hygiene
        or a cache-aware compaction before the turn, or the context engine's threshold in the loop), so
        that request would not send the prompt the session's cache entries hold. `engine` is the
        session's, built from this session row."""
        scale = self.calibration.apply
        if self.settings.policy.before_turn(session, cache, now=now, calibrate=scale).fire:
            return True
        return engine.should_compress(session.context_tokens(scale))

    async def _compact_before(
        self, session: SessionRecord, engine: ContextEngine, cache: CacheState
    ) -> CompactionReport | None:
        """Hygiene or cache-aware compaction of the stored session before the turn's first request."""
        decision = self.settings.policy.before_turn(
            session, cache, now=self.clock(), calibrate=self.calibration.apply
        )
        if decision.trigger is None:
            logger.debug("no compaction before the turn of session %s: %s", session.id, decision.reason)
            return None
        logger.info(
            "%s compaction of session %s before the turn: %s", decision.trigger, session.id, decision.reason
        )
        return await self.compactor.compact(session, engine, trigger=decision.trigger)

    async def _compact_after_reply(self, snapshot: TurnSnapshot, arrived: int) -> bool:
        """Compact right after the replies were delivered when the next request would reach the
        engine's threshold: the cache is warm (a prefix summary call is cheap) and nobody waits. What
        arrived before this turn stands for what the next one will add. True when it compacted."""
        session = snapshot.session
        engine = self.kit.engine(session, snapshot.pins)  # the turn moved the session row: built anew
        scale = self.calibration.apply
        next_tokens = scale(arrived)
        decision = self.settings.policy.after_reply(
            session, compresses=engine.should_compress, next_message_tokens=next_tokens, calibrate=scale
        )
        if decision.trigger is None:
            logger.debug("no compaction after the reply in session %s: %s", session.id, decision.reason)
            return False
        logger.info("compaction of session %s after the reply: %s", session.id, decision.reason)
        engine.expect_prompt(session.context_tokens(scale) + next_tokens)
        with spending_for(SpendFor(session.chat_pk)):  # the chat's, not the last sender's
            report = await self.compactor.compact(session, engine, trigger=decision.trigger, force=False)
        return report.changed

    async def _run_agent(self, turn: Turn, recorder: TurnRecorder, live: LiveReply | None) -> TurnResult[Ref]:
        # the size the compressor judges the first call on: last reported prompt + what came since
        turn.engine.expect_prompt(turn.session.context_tokens(self.calibration.apply))
        conversation = self.kit.conversation(
            turn.snapshot,
            turn.window,
            llm=TimedLLM.for_chat(self.llm, self.metrics, turn.chat),
            engine=turn.engine,
            plan=turn.plan,
            stream=live,
            ref_label=newest_id,
            compacted_before=turn.compacted_before,
        )
        started = time.perf_counter()
        async with self.platforms.typing(turn.chat):
            result = await run_turn(conversation, hooks=recorder)
        logger.info(
            "turn chat=%s:%s iterations=%d in %.2fs",
            turn.chat.platform,
            turn.chat.chat_id,
            result.iterations,
            time.perf_counter() - started,
        )
        return result

    def _plan(
        self, chat: ChatRef, snapshot: TurnSnapshot, cache: CacheState, window: Sequence[Entry[Ref]]
    ) -> TurnCachePlan:
        """The turn's cache plan from the session's stored cache state and its window."""
        session, rows = snapshot.session, snapshot.rows
        since = session.last_call_message_id
        return plan_turn(
            self.settings.cache_mode,
            cache,
            window_ids=[newest_id(e.ref) for e in window],
            tokens_after=tokens_after_in(rows, self.calibration),
            prompt_tokens=session.context_tokens(),
            now=self.clock(),
            last_call_at=session.last_call_at,
            chatter=sum(1 for r in rows if since is None or r.id > since),
            kind="private" if chat.kind == ChatKind.PRIVATE else "group",
            prices=self.settings.model.cache,
        )


def reply_text(result: TurnResult[Ref], now: datetime) -> str:
    """The reply a turn delivers: the model's text, or a clear word on why there is none; a turn a
    spending cap stopped says so after what it wrote."""
    if result.refusal is not None:
        return refused(result.refusal)
    text = result.reply_text.strip()
    if result.budget is not None:
        if not text:
            return budget_spent(result.budget, now, answer_after_reset=False)
        return f"{text}\n\n{budget_cut_turn(result.budget, now)}"
    return text or empty_reply(result.stop_reason)

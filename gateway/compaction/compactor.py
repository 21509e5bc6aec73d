"""Compacting a stored session, one owner for every trigger: before a turn (hygiene, cache-aware), in the
agent loop, `/compact` and the scheduled jobs each call `Compactor.compact` with their trigger.

It builds the window the one right way (from stored rows, one message per row, so group chatter can be
cut at message boundaries; rendered as the model sees it), runs the engine, persists the outcome in one
store transaction (removed messages are archived, never deleted; a changed-nothing attempt is recorded
too), accounts the summary call, records metrics and logs. Nothing is silently lost: `/stats` shows
every compaction and why it did or did not change anything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agent.compaction.engine import CompactionResult, ContextEngine, Kept, Outcome
from agent.compaction.prompt import frame, is_summary_message
from agent.loop import LoopConfig
from agent.models import cost_usd, lookup_model
from agent.types import Message, text_of
from gateway.compaction.request_window import build_window, rows_through
from gateway.metrics import Metrics
from gateway.store import CallRecord, CompactionApply, NewSummary, SessionRecord, Store, StoredMessage
from gateway.store.records import stored_role

logger = logging.getLogger(__name__)

Ref = tuple[int, ...]


class EngineFactory(Protocol):
    """Builds a session's context engine from its stored state (the session prices summary calls; the
    chat's pins are in the system prompt a prefix summary reuses, and the summarizer is told of them)."""

    def __call__(self, session: SessionRecord, pins: Sequence[str] = ()) -> ContextEngine: ...


@dataclass(frozen=True, slots=True)
class CompactionReport:
    trigger: str
    outcome: Outcome
    reason: str
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    duration_s: float
    changed: bool
    idle: bool = False
    """There was nothing to do (see `CompactionResult.idle`)."""
    kept: Kept | None = None
    """What the engine kept word for word and what sized it (see `CompactionResult.kept`)."""


MANUAL = "manual"
"""The trigger of an admin's `/compact`."""


class Compactor:
    """Runs a context engine over a stored session and persists what it did."""

    def __init__(self, *, store: Store, loop: LoopConfig, metrics: Metrics | None = None) -> None:
        self.store = store
        self.loop = loop
        """What the model sees of a stored message (the same cuts as the agent loop's requests)."""
        self.metrics = metrics

    async def compact(
        self,
        session: SessionRecord,
        engine: ContextEngine,
        *,
        trigger: str,
        force: bool = True,
        focus: str | None = None,
        through_id: int | None = None,
    ) -> CompactionReport:
        """Compact the session's window (up to message `through_id`, if given: later rows belong to a
        turn still to come and are left alone). `force` skips the engine's threshold and pause."""
        rows = rows_through(await self.store.load_window(session.id), through_id)
        messages, refs = self.window(rows)
        started = time.perf_counter()
        pending = _first_pending(rows, refs)
        result = await engine.compress(messages, focus=focus, force=force, keep_from=pending)
        duration = time.perf_counter() - started
        await self._persist(session, result, refs, trigger=trigger, duration_s=duration, engine=engine)
        report = _report(result, refs, trigger=trigger, duration_s=duration)
        if self.metrics is not None:
            idle = result.idle and trigger == MANUAL
            self.metrics.observe_compaction(trigger, "nothing" if idle else result.outcome.value)
        log = logger.warning if result.outcome is not Outcome.OK else logger.info
        log(
            "compaction session=%s trigger=%s outcome=%s tokens %d->%d messages %d->%d in %.2fs: %s",
            session.id,
            trigger,
            result.outcome.value,
            report.tokens_before,
            report.tokens_after,
            report.messages_before,
            report.messages_after,
            duration,
            result.reason,
        )
        return report

    def window(self, rows: Sequence[StoredMessage]) -> tuple[list[Message], list[Ref]]:
        """The compressor's input: one message per stored row, as the model sees it, with its row ids."""
        items = build_window(rows, merge=False)
        messages = [self.loop.render(i.message, max(i.ids) if i.ids else None) for i in items]
        return messages, [i.ids for i in items]

    async def _persist(
        self,
        session: SessionRecord,
        result: CompactionResult,
        refs: Sequence[Ref],
        *,
        trigger: str,
        duration_s: float,
        engine: ContextEngine,
    ) -> None:
        await self._record_summary_call(session, result)
        messages_before = sum(len(r) for r in refs)
        if result.idle and trigger == MANUAL:
            return  # an admin's /compact that found nothing to do is answered, not counted as a failure
        if not result.changed:
            await self.store.record_compaction_attempt(
                session.id,
                trigger=trigger,
                outcome=result.outcome.value,
                reason=result.reason,
                tokens_before=result.tokens_before,
                messages_before=messages_before,
                duration_ms=int(duration_s * 1000),
                engine_state=engine.state.to_json(),
            )
            return
        summary, before_id = _summary_row(result, refs, self.loop.cuts.tokens)
        await self.store.apply_compaction(
            session.id,
            CompactionApply(
                trigger=trigger,
                outcome=result.outcome.value,
                reason=result.reason,
                removed_ids=_flatten(refs, result.removed_indices),
                pruned_ids=_flatten(refs, result.pruned_indices),
                summary=summary,
                insert_summary_before_id=before_id,
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                messages_before=messages_before,
                messages_after=_messages_after(result, refs),
                summarizer_model=result.summarizer_model,
                duration_ms=int(duration_s * 1000),
                error=None if result.outcome is Outcome.OK else result.reason,
                engine_state=engine.state.to_json(),
                rolling_summary=result.summary,
            ),
        )

    async def _record_summary_call(self, session: SessionRecord, result: CompactionResult) -> None:
        """The summary call costs money whatever the outcome: it is accounted like every other call."""
        usage = result.summary_usage
        if usage is None or not (usage.prompt_tokens or usage.output_tokens):
            return
        model = result.summarizer_model or "unknown"
        if self.metrics is not None:
            self.metrics.observe_usage(usage, purpose="summary")
        await self.store.record_call(
            session.id,
            session.chat_pk,
            CallRecord.of(model, "summary", usage, cost_usd=cost_usd(lookup_model(model), usage)),
        )


def _flatten(refs: Sequence[Ref], indices: Sequence[int]) -> list[int]:
    return [message_id for i in indices for message_id in refs[i]]


def _messages_after(result: CompactionResult, refs: Sequence[Ref]) -> int:
    kept = sum(len(refs[o]) for o in result.origin if o is not None)
    return kept + (1 if result.summary else 0)


def _report(
    result: CompactionResult, refs: Sequence[Ref], *, trigger: str, duration_s: float
) -> CompactionReport:
    changed = result.changed
    return CompactionReport(
        trigger=trigger,
        outcome=result.outcome,
        reason=result.reason,
        messages_before=sum(len(r) for r in refs),
        messages_after=_messages_after(result, refs) if changed else sum(len(r) for r in refs),
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        duration_s=duration_s,
        changed=changed,
        idle=result.idle,
        kept=result.kept,
    )


def _first_pending(rows: Sequence[StoredMessage], refs: Sequence[Ref]) -> int | None:
    """The window position of the first message still awaiting a reply (the turn will answer it): it
    and everything after it stay in the window, so nothing is summarized before it is answered."""
    pending = {r.id for r in rows if r.needs_reply and not r.replied}
    return next((i for i, ids in enumerate(refs) if pending.intersection(ids)), None)


def _summary_row(
    result: CompactionResult, refs: Sequence[Ref], count: Callable[[Message], int]
) -> tuple[NewSummary | None, int | None]:
    """The summary's own row and the stored message it goes before (the first kept tail message).

    A summary the engine placed as a message of its own is stored as it is; one it merged into a
    neighbour for this request is stored as its own row, framed, which the window builder merges the
    same way on the next load (so every later request sees it framed, and the next compaction finds it).
    """
    for pos, origin in enumerate(result.origin):
        message = result.messages[pos]
        if origin is None and is_summary_message(message):
            following = [refs[o] for o in result.origin[pos + 1 :] if o is not None and refs[o]]
            row = NewSummary(
                stored_role(message["role"]), message["content"], text_of(message), count(message)
            )
            return row, min(following[0]) if following else None
    if result.summary is None or result.summary_role is None:
        return None, None
    framed: Message = {
        "role": result.summary_role,
        "content": [{"type": "text", "text": frame(result.summary)}],
    }
    last_removed = max(result.removed_indices, default=-1)
    tail = [refs[o] for o in result.origin if o is not None and o > last_removed and refs[o]]
    row = NewSummary(stored_role(framed["role"]), framed["content"], text_of(framed), count(framed))
    return row, min(tail[0]) if tail else None

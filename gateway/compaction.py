"""Run the context engine on a session and persist what it did, in one store transaction.

Used by every trigger: hygiene (before a turn), the agent loop (in-loop), `/compact` (manual) and the
scheduler. Removed messages are archived, never deleted; aborted attempts are recorded too, so
`/stats` shows every compaction and why it did or did not change anything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from agent.context_engine import CompressionResult, ContextEngine, Outcome
from agent.models import cost_usd, lookup_model
from agent.types import Message, text_of
from gateway.store.repository import CallRecord, CompactionApply, NewSummary, Store

logger = logging.getLogger(__name__)


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


async def _record_summary_call(store: Store, session_pk: int, result: CompressionResult) -> None:
    """The summary call costs money whatever the outcome: it is accounted like every other call."""
    usage = result.summary_usage
    if usage is None or not (usage.prompt_tokens or usage.output_tokens):
        return
    model = result.summarizer_model or "unknown"
    session = await store.get_session(session_pk)
    await store.record_call(
        session_pk,
        session.chat_pk,
        CallRecord(
            model=model,
            purpose="summary",
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_tokens=usage.cache_creation_input_tokens,
            cache_read_tokens=usage.cache_read_input_tokens,
            cost_usd=cost_usd(lookup_model(model), usage),
        ),
    )


def _flatten(refs: Sequence[tuple[int, ...] | None], indices: Sequence[int]) -> list[int]:
    out: list[int] = []
    for i in indices:
        ref = refs[i]
        if ref:
            out.extend(ref)
    return out


def _summary_message(result: CompressionResult) -> tuple[int, Message] | None:
    for pos, origin in enumerate(result.origin):
        if origin is None:
            return pos, result.messages[pos]
    return None


async def persist_result(
    store: Store,
    *,
    session_pk: int,
    result: CompressionResult,
    refs: Sequence[tuple[int, ...] | None],
    trigger: str,
    duration_s: float,
    engine: ContextEngine,
) -> list[tuple[int, ...] | None]:
    """Persist `result` (archive, prune, summary row, counters) and return refs for `result.messages`."""
    messages_before = sum(len(r) for r in refs if r)
    await _record_summary_call(store, session_pk, result)
    if not result.changed:
        await store.record_compaction_attempt(
            session_pk,
            trigger=trigger,
            outcome=result.outcome.value,
            reason=result.reason,
            tokens_before=result.tokens_before,
            messages_before=messages_before,
            duration_ms=int(duration_s * 1000),
            engine_state=engine.state.to_json(),
        )
        return list(refs)

    removed = _flatten(refs, result.removed_indices)
    pruned = _flatten(refs, result.pruned_indices)
    summary: NewSummary | None = None
    placed = _summary_message(result)
    before_id: int | None = None
    if placed is not None:
        pos, msg = placed
        summary = NewSummary(
            role=msg["role"],
            content=msg["content"],
            text=text_of(msg),
            token_estimate=engine.count_tokens(msg),
        )
        before_id = _first_id_after(result, refs, pos)
    elif result.summary is not None and result.summary_role is not None:
        # The summary was merged into a neighbour for this request; store it as its own row, which the
        # window builder merges the same way on the next load.
        text = result.summary
        msg_obj: Message = {"role": result.summary_role, "content": [{"type": "text", "text": text}]}
        summary = NewSummary(
            role=result.summary_role,
            content=msg_obj["content"],
            text=text,
            token_estimate=engine.count_tokens(msg_obj),
        )
        before_id = _first_tail_id(result, refs)
    kept_ids = sum(len(refs[o] or ()) for o in result.origin if o is not None)
    record = await store.apply_compaction(
        session_pk,
        CompactionApply(
            trigger=trigger,
            outcome=result.outcome.value,
            reason=result.reason,
            removed_ids=removed,
            pruned_ids=pruned,
            summary=summary,
            insert_summary_before_id=before_id,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            messages_before=messages_before,
            messages_after=kept_ids + (1 if summary is not None else 0),
            summarizer_model=result.summarizer_model,
            duration_ms=int(duration_s * 1000),
            error=None if result.outcome is Outcome.OK else result.reason,
            engine_state=engine.state.to_json(),
            rolling_summary=result.summary,
        ),
    )
    new_refs: list[tuple[int, ...] | None] = []
    for origin in result.origin:
        if origin is None:
            new_refs.append((record.summary_message_id,) if record.summary_message_id else None)
        else:
            new_refs.append(refs[origin])
    return new_refs


def _first_id_after(
    result: CompressionResult, refs: Sequence[tuple[int, ...] | None], pos: int
) -> int | None:
    for origin in result.origin[pos + 1 :]:
        if origin is not None and refs[origin]:
            ref = refs[origin]
            assert ref is not None
            return min(ref)
    return None


def _first_tail_id(result: CompressionResult, refs: Sequence[tuple[int, ...] | None]) -> int | None:
    removed = set(result.removed_indices)
    last_removed = max(removed) if removed else -1
    for origin in result.origin:
        if origin is not None and origin > last_removed and refs[origin]:
            ref = refs[origin]
            assert ref is not None
            return min(ref)
    return None


async def compact_session(
    store: Store,
    engine: ContextEngine,
    *,
    session_pk: int,
    messages: Sequence[Message],
    refs: Sequence[tuple[int, ...] | None],
    trigger: str,
    focus: str | None = None,
    force: bool = False,
) -> tuple[CompactionReport, CompressionResult]:
    """Compress `messages` with `engine` and persist the outcome; returns a report for users and logs."""
    started = time.perf_counter()
    result = await engine.compress(messages, focus=focus, force=force)
    duration = time.perf_counter() - started
    await persist_result(
        store,
        session_pk=session_pk,
        result=result,
        refs=refs,
        trigger=trigger,
        duration_s=duration,
        engine=engine,
    )
    kept = [refs[o] for o in result.origin if o is not None]
    report = CompactionReport(
        trigger=trigger,
        outcome=result.outcome,
        reason=result.reason,
        messages_before=sum(len(r) for r in refs if r),
        messages_after=sum(len(r) for r in kept if r) + (1 if result.summary else 0),
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        duration_s=duration,
        changed=result.changed,
    )
    log = logger.warning if result.outcome is not Outcome.OK else logger.info
    log(
        "compaction session=%s trigger=%s outcome=%s tokens %d->%d messages %d->%d in %.2fs: %s",
        session_pk,
        trigger,
        result.outcome.value,
        report.tokens_before,
        report.tokens_after,
        report.messages_before,
        report.messages_after,
        duration,
        result.reason,
    )
    return report, result

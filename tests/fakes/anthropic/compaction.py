"""Server-side compaction in the fake Anthropic API (beta ``compact-2026-01-12``, edit ``compact_20260112``).

A request turns it on with ``context_management: {"edits": [{"type": "compact_20260112", ...}]}``. When the
effective prompt exceeds the edit's trigger (default 150,000 input tokens, at least 50,000), one call runs
two iterations:

- compaction: the model summarizes the effective request as sent (priced by the prefix cache as usual);
- message: unless ``pause_after_compaction``, the model answers from the compacted context, i.e. system +
  tools + one assistant message holding just the compaction block.

A later request sends the block back first in an assistant message. The API drops every message block
before the last compaction block and ignores a compaction block whose content is null (a failed
compaction): ``effective_body``. The response and usage shapes are in ``wire``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.fakes.anthropic.replies import summary_reply
from tests.fakes.anthropic.tokens import ModelSpec, output_tokens
from tests.fakes.anthropic.validation import InvalidRequest

if TYPE_CHECKING:
    from tests.fakes.anthropic.cache import CacheUsage

BETA = "compact-2026-01-12"
EDIT_TYPE = "compact_20260112"
DEFAULT_TRIGGER = 150_000
MIN_TRIGGER = 50_000
OTHER_EDIT_TYPES = ("clear_tool_uses_20250919", "clear_thinking_20251015")
"""Edits the real API has (beta context-management-2025-06-27) that this fake does not implement."""
_EDIT_KEYS = frozenset({"type", "trigger", "instructions", "pause_after_compaction"})

Summarizer = Callable[[Mapping[str, Any]], str]
"""Writes the summary of an effective request; its edit's ``instructions`` are in
``compaction_instructions(body)``."""
Charge = Callable[[Mapping[str, Any]], "CacheUsage"]
"""Prices one request against the prefix cache (the server binds the namespace and the clock)."""


@dataclass(frozen=True, slots=True)
class CompactEdit:
    """A validated ``compact_20260112`` edit."""

    trigger: int = DEFAULT_TRIGGER
    instructions: str | None = None
    pause_after_compaction: bool = False


@dataclass(frozen=True, slots=True)
class CompactionRun:
    """The compaction iteration: its summary and cost, and the request the model then continues from
    (None when the call pauses after compaction)."""

    summary: str
    usage: CacheUsage
    output_tokens: int
    continuation: dict[str, Any] | None

    @property
    def block(self) -> dict[str, Any]:
        return compaction_block(self.summary)


def beta_flags(header_values: Iterable[str]) -> frozenset[str]:
    """The betas named by ``anthropic-beta`` headers (each a comma-separated list)."""
    return frozenset(flag.strip() for value in header_values for flag in value.split(",") if flag.strip())


def compaction_edit(
    body: Mapping[str, Any], betas: Collection[str], spec: ModelSpec, *, min_trigger: int = MIN_TRIGGER
) -> CompactEdit | None:
    """The request's compaction edit (None when it asks for none), or ``InvalidRequest`` as the API refuses:
    a compaction edit or block without the beta, a model without compaction, a malformed edit, an edit
    type this fake does not implement. ``min_trigger`` is the API's floor; benchmarks that compare the
    engines on small windows lower it (and say so)."""
    if BETA not in betas and _has_compaction_blocks(body):
        raise InvalidRequest(f"messages: compaction blocks require the `anthropic-beta: {BETA}` header")
    config = body.get("context_management")
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise InvalidRequest("context_management: Input should be a valid dictionary")
    extra = sorted(set(config) - {"edits"})
    if extra:
        raise InvalidRequest(f"context_management.{extra[0]}: Extra inputs are not permitted")
    edits = config.get("edits") or []
    if not isinstance(edits, list):
        raise InvalidRequest("context_management.edits: Input should be a valid list")
    found: CompactEdit | None = None
    for i, edit in enumerate(edits):
        where = f"context_management.edits.{i}"
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if kind in OTHER_EDIT_TYPES:
            raise InvalidRequest(f"{where}: {kind} edits are not implemented by this fake (only {EDIT_TYPE})")
        if not isinstance(edit, Mapping) or kind != EDIT_TYPE:
            expected = ", ".join(f"'{t}'" for t in (*OTHER_EDIT_TYPES, EDIT_TYPE))
            raise InvalidRequest(
                f"{where}: Input tag {kind!r} found using 'type' does not match any of the expected tags: "
                f"{expected}"
            )
        if found is not None:
            raise InvalidRequest(f"{where}: at most one {EDIT_TYPE} edit may be given")
        if BETA not in betas:
            raise InvalidRequest(
                f"{where}: the {EDIT_TYPE} edit requires the `anthropic-beta: {BETA}` header"
            )
        if not spec.compaction:
            raise InvalidRequest(f"{where}: compaction is not supported for model '{spec.id}'")
        found = _parse_edit(edit, where, min_trigger)
    return found


def _parse_edit(edit: Mapping[str, Any], where: str, min_trigger: int) -> CompactEdit:
    extra = sorted(set(edit) - _EDIT_KEYS)
    if extra:
        raise InvalidRequest(f"{where}.{extra[0]}: Extra inputs are not permitted")
    trigger = edit.get("trigger")
    value: Any = DEFAULT_TRIGGER
    if trigger is not None:
        if not isinstance(trigger, Mapping) or trigger.get("type") != "input_tokens":
            raise InvalidRequest(f"{where}.trigger.type: Input should be 'input_tokens'")
        extra = sorted(set(trigger) - {"type", "value"})
        if extra:
            raise InvalidRequest(f"{where}.trigger.{extra[0]}: Extra inputs are not permitted")
        value = trigger.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidRequest(f"{where}.trigger.value: Input should be a valid integer")
        if value < min_trigger:
            raise InvalidRequest(
                f"{where}.trigger.value: Input should be greater than or equal to {min_trigger}"
            )
    instructions = edit.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise InvalidRequest(f"{where}.instructions: Input should be a valid string")
    pause = edit.get("pause_after_compaction", False)
    if not isinstance(pause, bool):
        raise InvalidRequest(f"{where}.pause_after_compaction: Input should be a valid boolean")
    return CompactEdit(value, instructions, pause)


def compaction_instructions(body: Mapping[str, Any]) -> str | None:
    """The ``instructions`` of the request's compaction edit, for a summarizer that honours them."""
    config = body.get("context_management")
    edits = config.get("edits") if isinstance(config, Mapping) else None
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, Mapping) and edit.get("type") == EDIT_TYPE:
            instructions = edit.get("instructions")
            return instructions if isinstance(instructions, str) else None
    return None


def _is_compaction(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "compaction"


def _has_compaction_blocks(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages")
    return isinstance(messages, list) and any(
        _is_compaction(block)
        for message in messages
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def effective_body(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The request the model sees: compaction blocks with null content left out (no-ops) and every message
    block before the last compaction block dropped. ``body`` itself when it carries no compaction block."""
    if not _has_compaction_blocks(body):
        return body
    kept: list[Mapping[str, Any]] = []
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            kept.append(message)
            continue
        blocks = [b for b in content if not (_is_compaction(b) and b.get("content") is None)]
        last = max((j for j, block in enumerate(blocks) if _is_compaction(block)), default=None)
        if last is not None:
            kept.clear()
            blocks = blocks[last:]
        if blocks:
            kept.append(message if len(blocks) == len(content) else {**message, "content": blocks})
    return {**body, "messages": kept}


def compaction_block(summary: str) -> dict[str, Any]:
    return {"type": "compaction", "content": summary}


def continuation_body(effective: Mapping[str, Any], summary: str) -> dict[str, Any]:
    """What the message iteration samples from: the request with its messages replaced by one assistant
    message holding just the compaction block (system, tools and cache markers unchanged)."""
    return {**effective, "messages": [{"role": "assistant", "content": [compaction_block(summary)]}]}


def run_compaction(
    effective: Mapping[str, Any],
    edit: CompactEdit,
    *,
    charge: Charge,
    summarizer: Summarizer | None,
    summary_tokens: int,
) -> CompactionRun:
    """The compaction iteration over the effective request: charge it as sent, then write the summary
    (``summarizer``, else the default structured summary within ``summary_tokens``)."""
    usage = charge(effective)
    if summarizer is not None:
        summary = summarizer(effective)
    else:
        summary = summary_reply(effective, max_tokens=summary_tokens)
    tokens = output_tokens([{"type": "text", "text": summary}])
    continuation = None if edit.pause_after_compaction else continuation_body(effective, summary)
    return CompactionRun(summary, usage, tokens, continuation)

"""Anthropic prompt-cache breakpoints: `system_and_3` (fixed TTL) and `read_and_tail` (a per-call plan).

The API allows at most 4 `cache_control` breakpoints per request, counted over tools, system and
messages. We mark the system prompt's last block and the last three non-system messages (a rolling
window, so each new turn reads the previous turn's prefix from cache). Markers the caller put on tool
definitions are kept and counted; the oldest message breakpoints give way first. Every function here
is pure: inputs are copied, never changed, and applying the policy twice equals applying it once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from agent.models import CacheTTL
from agent.types import Block, Message

logger = logging.getLogger(__name__)

MAX_BREAKPOINTS: Final = 4
MESSAGE_BREAKPOINTS: Final = 3
CACHE_KEY: Final = "cache_control"
_UNMARKABLE_BLOCKS: Final = frozenset({"thinking", "redacted_thinking"})
"""Thinking blocks cannot carry cache_control; the marker goes on the last block that can."""


@dataclass(frozen=True, slots=True)
class CachedRequest:
    """The request parts ready to send: system as blocks, messages and tools, all fresh copies."""

    system_blocks: list[Block]
    messages: list[Message]
    tools: list[dict[str, Any]] | None
    breakpoints: int
    """How many cache_control markers the request carries in total (tools included), at most 4."""
    automatic: CacheTTL | None = None
    """A top-level `cache_control` with this TTL: the API marks the last cacheable block itself."""


def cache_marker(ttl: CacheTTL) -> dict[str, str]:
    """`{"type": "ephemeral"}` for the default 5-minute TTL, with `"ttl": "1h"` for the hour."""
    if ttl == "1h":
        return {"type": "ephemeral", "ttl": "1h"}
    if ttl == "5m":
        return {"type": "ephemeral"}
    raise ValueError(f"cache TTL must be '5m' or '1h', got {ttl!r}")


_CONTAINERS: Final = frozenset({dict, list})

# --- copying --------------------------------------------------------------------------------------


def _copy(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts and lists are new; strings and numbers are immutable).

    Leaves are tested inline rather than by a recursive call: this keeps a 2,000-message copy cheap.
    """
    if type(value) is dict:
        return {k: _copy(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) if type(v) in _CONTAINERS else v for v in value]
    return value


def _unmark_block(block: dict[str, Any]) -> None:
    block.pop(CACHE_KEY, None)
    if block.get("type") == "tool_result":
        inner = block.get("content")
        if isinstance(inner, list):
            for nested in inner:
                if isinstance(nested, dict):
                    nested.pop(CACHE_KEY, None)


def _copy_message_unmarked(message: Message) -> Message:
    copied = cast(dict[str, Any], _copy(message))
    copied.pop(CACHE_KEY, None)
    content = copied.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                _unmark_block(block)
    return cast(Message, copied)


def _system_blocks_unmarked(system: str | Sequence[Block] | None) -> list[Block]:
    if system is None or system == "":
        return []
    if isinstance(system, str):
        return [{"type": "text", "text": system}]
    blocks = [cast(Block, _copy(b)) for b in system]
    for block in blocks:
        _unmark_block(block)
    return blocks


def _copy_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    return [cast(dict[str, Any], _copy(dict(t))) for t in tools]


# --- placement ------------------------------------------------------------------------------------


def _markable(block: Block) -> bool:
    if block.get("type") in _UNMARKABLE_BLOCKS:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _mark_blocks(blocks: list[Block], marker: dict[str, str]) -> bool:
    """Put the marker on the last block that can carry one; False when none can."""
    for block in reversed(blocks):
        if _markable(block):
            block[CACHE_KEY] = dict(marker)
            return True
    return False


def _mark_message(message: Message, marker: dict[str, str], *, native_anthropic: bool) -> bool:
    """Place a marker by content type (seed table): string -> one marked text block, list -> last block,
    empty -> on the message. Returns whether a marker was placed."""
    raw = cast(dict[str, Any], message)
    if raw.get("role") == "tool":
        # OpenAI-shaped tool messages only take a message-level marker on the native Anthropic path.
        if native_anthropic:
            raw[CACHE_KEY] = dict(marker)
            return True
        return False
    content = raw.get("content")
    if isinstance(content, str) and content:
        raw["content"] = [{"type": "text", "text": content, CACHE_KEY: dict(marker)}]
        return True
    if isinstance(content, list) and content and _mark_blocks(content, marker):
        return True
    raw[CACHE_KEY] = dict(marker)
    return True


def _tool_marker_indices(tools: list[dict[str, Any]]) -> list[int]:
    return [i for i, t in enumerate(tools) if CACHE_KEY in t]


def apply_cache_control(
    system: str | Sequence[Block] | None,
    messages: Sequence[Message],
    *,
    ttl: CacheTTL,
    tools: Sequence[Mapping[str, Any]] | None = None,
    native_anthropic: bool = True,
) -> CachedRequest:
    """Copy the request and place the `system_and_3` breakpoints with one TTL throughout.

    Markers already on the system prompt or messages are removed first (idempotent). Markers on tools
    are the caller's: they are kept, rewritten to the same TTL (the API rejects a 1h marker after a 5m
    one), and counted, so system + messages get `4 - k` breakpoints with the oldest messages dropped first.
    """
    marker = cache_marker(ttl)
    tool_copies = _copy_tools(tools)
    tool_marks = 0
    if tool_copies is not None:
        indices = _tool_marker_indices(tool_copies)
        if len(indices) > MAX_BREAKPOINTS:
            logger.warning(
                "tools carry %d cache breakpoints, the API allows %d; keeping the last %d",
                len(indices),
                MAX_BREAKPOINTS,
                MAX_BREAKPOINTS,
            )
            for i in indices[: len(indices) - MAX_BREAKPOINTS]:
                del tool_copies[i][CACHE_KEY]
            indices = indices[-MAX_BREAKPOINTS:]
        for i in indices:
            tool_copies[i][CACHE_KEY] = dict(marker)
        tool_marks = len(indices)

    budget = MAX_BREAKPOINTS - tool_marks
    system_blocks = _system_blocks_unmarked(system)
    copied = [_copy_message_unmarked(m) for m in messages]

    placed = tool_marks
    if budget > 0 and _mark_blocks(system_blocks, marker):
        budget -= 1
        placed += 1

    window = min(MESSAGE_BREAKPOINTS, budget)
    if window > 0:
        candidates = [m for m in copied if cast(dict[str, Any], m).get("role") != "system"]
        for message in candidates[-window:]:
            if _mark_message(message, marker, native_anthropic=native_anthropic):
                placed += 1
    return CachedRequest(system_blocks=system_blocks, messages=copied, tools=tool_copies, breakpoints=placed)


@dataclass(frozen=True, slots=True)
class MarkerPlan:
    """Where one request's breakpoints go (the `read_and_tail` placement).

    `reads` are message indices whose prefix a live cache entry holds, with that entry's TTL: a marker
    there reads it whatever the 20-block lookback. `tail` is the TTL written on the newest message, or
    None to leave the tokens since the newest read unmarked (billed 1x instead of a write never read).
    """

    reads: tuple[tuple[int, CacheTTL], ...] = ()
    tail: CacheTTL | None = None


def _ordered_ttls(ttls: Sequence[CacheTTL]) -> list[CacheTTL]:
    """The API rejects a 1h marker after a 5m one: any marker before a 1h marker becomes 1h (a marker
    on a prefix that is already cached reads it, so this changes no write)."""
    result = list(ttls)
    later_hour = False
    for i in range(len(result) - 1, -1, -1):
        later_hour = later_hour or result[i] == "1h"
        result[i] = "1h" if later_hour else result[i]
    return result


def apply_marker_plan(
    system: str | Sequence[Block] | None,
    messages: Sequence[Message],
    *,
    plan: MarkerPlan,
    tools: Sequence[Mapping[str, Any]] | None = None,
    native_anthropic: bool = True,
) -> CachedRequest:
    """Copy the request and place the plan's breakpoints: the tail (if any) first, then the newest
    reads, then the system prompt (only when something is written), within 4 minus the tools' markers.

    Markers already on the system prompt or messages are removed first; markers on tools are kept,
    counted and rewritten to the TTL of the first message marker. Inputs are never changed.
    """
    copied = [_copy_message_unmarked(m) for m in messages]
    system_blocks = _system_blocks_unmarked(system)
    tool_copies = _copy_tools(tools)
    tool_indices = _tool_marker_indices(tool_copies) if tool_copies is not None else []
    budget = MAX_BREAKPOINTS - min(len(tool_indices), MAX_BREAKPOINTS)
    last = len(copied) - 1
    chosen: dict[int, CacheTTL] = {}
    if plan.tail is not None and last >= 0 and budget > 0:
        chosen[last] = plan.tail
    for index, ttl in sorted(plan.reads, key=lambda r: r[0], reverse=True):
        if len(chosen) >= budget:
            break
        if 0 <= index <= last and index not in chosen:
            chosen[index] = ttl
    positions = sorted(chosen)
    ttls = [chosen[i] for i in positions]
    with_system = plan.tail is not None and len(chosen) < budget and bool(system_blocks)
    ordered = _ordered_ttls(([ttls[0]] if with_system and ttls else []) + ttls)
    placed = 0
    if tool_copies is not None and ordered:
        for i in tool_indices[-MAX_BREAKPOINTS:]:
            tool_copies[i][CACHE_KEY] = cache_marker(ordered[0])
        for i in tool_indices[:-MAX_BREAKPOINTS]:
            del tool_copies[i][CACHE_KEY]
    if tool_copies is not None:
        placed += len(_tool_marker_indices(tool_copies))
    if with_system and ordered:
        placed += _mark_blocks(system_blocks, cache_marker(ordered.pop(0)))
    for index, ttl in zip(positions, ordered, strict=True):
        placed += _mark_message(copied[index], cache_marker(ttl), native_anthropic=native_anthropic)
    return CachedRequest(system_blocks=system_blocks, messages=copied, tools=tool_copies, breakpoints=placed)


def strip_cache_control(
    system: str | Sequence[Block] | None,
    messages: Sequence[Message],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> CachedRequest:
    """Copies without any cache marker (tools included): for standalone requests such as summaries."""
    tool_copies = _copy_tools(tools)
    if tool_copies is not None:
        for tool in tool_copies:
            tool.pop(CACHE_KEY, None)
    return CachedRequest(
        system_blocks=_system_blocks_unmarked(system),
        messages=[_copy_message_unmarked(m) for m in messages],
        tools=tool_copies,
        breakpoints=0,
    )


def count_breakpoints(request: CachedRequest) -> int:
    """Markers actually present in a request (tools, system blocks, messages and their blocks)."""
    total = sum(1 for t in request.tools or () if CACHE_KEY in t)
    total += sum(1 for b in request.system_blocks if CACHE_KEY in b)
    for message in request.messages:
        raw = cast(dict[str, Any], message)
        total += CACHE_KEY in raw
        content = raw.get("content")
        if isinstance(content, list):
            for block in content:
                total += CACHE_KEY in block
                inner = block.get("content") if block.get("type") == "tool_result" else None
                if isinstance(inner, list):
                    total += sum(1 for nested in inner if isinstance(nested, dict) and CACHE_KEY in nested)
    return total

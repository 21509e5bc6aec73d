"""Turn stored rows into the agent's window: API-valid messages, each carrying the ids it came from (pure).

Consecutive rows with the same role are merged into one message (group chatter between two bot
replies becomes one user turn). Tool pairs broken by a crash are repaired for the request only:
a tool_use without a result gets a stub result, a result without its call becomes plain text.
The stored rows are never changed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.types import Block, Message, Role

INTERRUPTED_RESULT = "[tool call interrupted before it returned a result]"
CONVERSATION_START = "(earlier conversation continues)"


class RowLike(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> Any: ...
    @property
    def pruned(self) -> bool: ...


PRUNED_MARKER = "[Old tool output cleared to save context space]"


@dataclass(frozen=True, slots=True)
class WindowItem:
    message: Message
    ids: tuple[int, ...]


def _blocks(row: RowLike) -> list[Block]:
    content = row.content
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    if row.pruned:
        blocks = [_prune(b) for b in blocks]
    return [b for b in blocks if not (b.get("type") == "text" and not str(b.get("text", "")).strip())]


def _prune(block: Block) -> Block:
    if block.get("type") == "tool_result":
        return {**block, "content": PRUNED_MARKER}
    return block


def build_window(rows: Sequence[RowLike], *, merge: bool = True) -> list[WindowItem]:
    """The rows as agent messages. `merge=False` keeps one message per row (same-role neighbours
    included) for the compressor, so group chatter between two bot replies can still be compacted."""
    merged: list[tuple[Role, list[Block], list[int]]] = []
    for row in rows:
        role: Role = "assistant" if row.role == "assistant" else "user"
        blocks = _blocks(row)
        if not blocks:
            continue
        if merge and merged and merged[-1][0] == role:
            prev_blocks = merged[-1][1]
            if role == "user":
                # tool_result blocks must lead a user message
                results = [b for b in prev_blocks + blocks if b.get("type") == "tool_result"]
                others = [b for b in prev_blocks + blocks if b.get("type") != "tool_result"]
                merged[-1] = (role, results + others, [*merged[-1][2], row.id])
            else:
                merged[-1] = (role, prev_blocks + blocks, [*merged[-1][2], row.id])
        else:
            merged.append((role, blocks, [row.id]))
    _repair_tool_pairs(merged)
    if merged and merged[0][0] == "assistant":
        merged.insert(0, ("user", [{"type": "text", "text": CONVERSATION_START}], []))
    return [WindowItem(message={"role": r, "content": b}, ids=tuple(i)) for r, b, i in merged]


def _repair_tool_pairs(merged: list[tuple[Role, list[Block], list[int]]]) -> None:
    i = 0
    while i < len(merged):
        role, blocks, ids = merged[i]
        if role == "assistant":
            wanted = [str(b["id"]) for b in blocks if b.get("type") == "tool_use"]
            if wanted:
                nxt = merged[i + 1] if i + 1 < len(merged) else None
                have = (
                    {str(b.get("tool_use_id")) for b in nxt[1] if b.get("type") == "tool_result"}
                    if nxt and nxt[0] == "user"
                    else set()
                )
                stubs: list[Block] = [
                    {"type": "tool_result", "tool_use_id": t, "content": INTERRUPTED_RESULT, "is_error": True}
                    for t in wanted
                    if t not in have
                ]
                if stubs:
                    if nxt is not None and nxt[0] == "user":
                        merged[i + 1] = ("user", stubs + nxt[1], nxt[2])
                    else:
                        merged.insert(i + 1, ("user", stubs, []))
        else:
            prev_calls: set[str] = set()
            if i > 0 and merged[i - 1][0] == "assistant":
                prev_calls = {str(b["id"]) for b in merged[i - 1][1] if b.get("type") == "tool_use"}
            fixed: list[Block] = []
            for b in blocks:
                if b.get("type") == "tool_result" and str(b.get("tool_use_id")) not in prev_calls:
                    fixed.append({"type": "text", "text": f"[orphaned tool output] {_result_text(b)}"[:2000]})
                else:
                    fixed.append(b)
            merged[i] = (role, fixed, ids)
        i += 1


def _result_text(block: Block) -> str:
    inner = block.get("content", "")
    if isinstance(inner, str):
        return inner
    return " ".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))

"""Turn stored rows into the agent's window: API-valid messages, each carrying the ids it came from (pure).

One builder serves every path. Requests merge consecutive rows with the same role into one message
(group chatter between two bot replies becomes one user turn); compaction works on one message per
row (`merge=False`), so chatter can be cut at message boundaries and a session above its threshold
always has a middle to compact. Tool pairs broken by a crash are repaired for the request only, with
the shared rule in `agent.messages`. The stored rows are never changed here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agent.media import demoted_note, is_media_ref
from agent.messages import INTERRUPTED_RESULT, PRUNED_MARKER, StoredRow, is_blank_text, repair_tool_pairs
from agent.server_blocks import aged_note, is_server_block, without_server_blocks
from agent.types import Block, Message, Role

CONVERSATION_START = "(earlier conversation continues)"


@dataclass(frozen=True, slots=True)
class WindowItem:
    message: Message
    ids: tuple[int, ...]


def _blocks(row: StoredRow) -> list[Block]:
    content = row.content
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    if row.pruned:
        blocks = [_prune(b) for b in blocks]
        if any(is_server_block(b) for b in blocks):  # aged web lookups: left out whole, their calls too
            note: Block = {"type": "text", "text": aged_note(blocks)}
            blocks = [*without_server_blocks({"role": "assistant", "content": blocks})["content"], note]
    return [b for b in blocks if not is_blank_text(b)]


def _prune(block: Block) -> Block:
    if block.get("type") == "tool_result":
        return {**block, "content": PRUNED_MARKER}
    if is_media_ref(block):  # demoted media (agent.media_aging): named, no longer attached
        return {"type": "text", "text": demoted_note(block)}
    return block


RowT = TypeVar("RowT", bound=StoredRow)


def rows_through(rows: Sequence[RowT], last_id: int | None) -> Sequence[RowT]:
    """The window rows up to and including `last_id` (rows stored after it belong to a later turn)."""
    if last_id is None:
        return rows
    for i, row in enumerate(rows):
        if row.id == last_id:
            return rows[: i + 1]
    return rows


def build_window(
    rows: Sequence[RowT], *, merge: bool = True, as_system: Callable[[RowT], bool] | None = None
) -> list[WindowItem]:
    """The rows as agent messages, merged for a request or one per row (`merge=False`) for compaction.

    `as_system` picks the gateway's notes to the model that go as mid-conversation system messages (on
    models that take them; elsewhere they are user text like any other): each stays its own message,
    right after the user turn it was stored behind, never merged.
    """
    merged: list[tuple[Role, list[Block], list[int]]] = []
    for row in rows:
        role: Role = "assistant" if row.role == "assistant" else "user"
        if as_system is not None and as_system(row):
            role = "system"
        blocks = _blocks(row)
        if not blocks:
            continue
        if merge and merged and merged[-1][0] == role and role != "system":
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
    messages: list[Message] = [{"role": r, "content": b} for r, b, _ in merged]
    ids: list[tuple[int, ...]] = [tuple(i) for _, _, i in merged]
    repaired, report = repair_tool_pairs(
        messages, stub_text=INTERRUPTED_RESULT, stub_is_error=True, pending_last=False
    )
    for position in report.inserted_at:
        ids.insert(position, ())
    if repaired and repaired[0]["role"] == "assistant":
        repaired.insert(0, {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]})
        ids.insert(0, ())
    return [WindowItem(message=m, ids=i) for m, i in zip(repaired, ids, strict=True)]

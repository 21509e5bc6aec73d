"""Message-shape rules shared by the compressor and the gateway's window (pure, one implementation each).

- `tool_result_text`: the readable text of a tool_result block;
- `prune_tool_results`: long old tool output replaced by the cleared marker;
- `repair_tool_pairs`: every tool_result follows its tool_use in the message right before it. A result
  whose call is gone becomes plain text (its content is kept, clipped); a call whose result is gone gets
  a stub result. The API's own tool calls (`server_tool_use` and its result) are kept whole or dropped
  whole (`agent.server_blocks`). Inputs are never changed; messages are copied only when changed.
- `compaction_on_wire`: a server-side compaction block travels as the API expects it only in a request
  that enables server-side compaction (the newest one); anywhere else its summary is sent as text;
- `is_blank_text`: a text block of whitespace only is never sent (the API refuses it), neither from a
  stored row nor from an answer going back into the history, so both read the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agent.server_blocks import repair_server_pairs
from agent.types import Block, Message, blocks_of, tool_result_ids, tool_use_ids

PRUNED_MARKER = "[Old tool output cleared to save context space]"
PRUNE_MIN_CHARS = 200
"""Tool results longer than this (in characters of text) are cleared when outside the protected tail."""
REMOVED_RESULT = "[result removed by context compaction]"
"""Stub for a call whose result a compaction removed."""
INTERRUPTED_RESULT = "[tool call interrupted before it returned a result]"
"""Stub for a call whose result was never stored (the process stopped mid-tool)."""
ORPHAN_PREFIX = "[orphaned tool output]"
ORPHAN_CLIP = 2_000


class StoredRow(Protocol):
    """What the message-shape rules read of a stored message (the gateway's rows satisfy it)."""

    @property
    def id(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> Any: ...
    @property
    def pruned(self) -> bool: ...


def is_blank_text(block: Block) -> bool:
    """A text block with nothing but whitespace (the API refuses one in a request)."""
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def tool_result_text(block: Block) -> str:
    """The text of a tool_result block (text parts of a list; images are not text)."""
    inner = block.get("content", "")
    if isinstance(inner, str):
        return inner
    if isinstance(inner, list):
        return "\n".join(str(b.get("text", "")) for b in inner if b.get("type") == "text")
    return ""


def prune_tool_results(message: Message) -> Message | None:
    """A copy with long tool_result contents replaced by the cleared marker, or None when nothing changed."""
    content = message["content"]
    if isinstance(content, str):
        return None
    changed = False
    new_blocks: list[Block] = []
    for block in content:
        if block.get("type") == "tool_result" and len(tool_result_text(block)) > PRUNE_MIN_CHARS:
            block = {**block, "content": PRUNED_MARKER}
            changed = True
        new_blocks.append(block)
    if not changed:
        return None
    return {"role": message["role"], "content": new_blocks}


@dataclass(frozen=True, slots=True)
class RepairReport:
    orphaned_result_ids: tuple[str, ...]
    """Results whose call was gone: turned into plain text."""
    stubbed_use_ids: tuple[str, ...]
    inserted_at: tuple[int, ...]
    """Positions (in the returned list) of user messages created to carry stub results."""


def _stub(tool_id: str, text: str, is_error: bool) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
    if is_error:
        block["is_error"] = True
    return block


def _orphan_text(block: Block) -> Block:
    return {"type": "text", "text": f"{ORPHAN_PREFIX} {tool_result_text(block)}"[:ORPHAN_CLIP]}


def repair_tool_pairs(
    messages: list[Message],
    *,
    stub_text: str = REMOVED_RESULT,
    stub_is_error: bool = False,
    pending_last: bool = True,
) -> tuple[list[Message], RepairReport]:
    """Make every tool_result follow its tool_use in the immediately preceding assistant message.

    Results whose call is gone become text; calls whose result is gone get a stub result (placed after
    the next user message's own results, or in a message of its own when an assistant turn follows).
    With `pending_last`, calls in the final message are pending, not lost, and are left alone.
    Server tool blocks that lost their partner are dropped whole first (`repair_server_pairs`).
    """
    messages, _ = repair_server_pairs(messages, pending_last=pending_last)
    out: list[Message] = []
    orphaned: list[str] = []
    stubbed: list[str] = []
    inserted: list[int] = []
    pending: list[str] = []
    for i, message in enumerate(messages):
        if message["role"] == "user" and (pending or tool_result_ids(message)):
            prev = out[-1] if out else None
            allowed = set(tool_use_ids(prev)) if prev is not None and prev["role"] == "assistant" else set()
            blocks = blocks_of(message)
            orphans = [
                str(b.get("tool_use_id"))
                for b in blocks
                if b.get("type") == "tool_result" and str(b.get("tool_use_id")) not in allowed
            ]
            if orphans or pending:
                orphaned.extend(orphans)
                results = [
                    b
                    for b in blocks
                    if b.get("type") == "tool_result" and str(b.get("tool_use_id")) in allowed
                ]
                others = [
                    _orphan_text(b) if b.get("type") == "tool_result" else b
                    for b in blocks
                    if b.get("type") != "tool_result" or str(b.get("tool_use_id")) not in allowed
                ]
                stubs = [_stub(t, stub_text, stub_is_error) for t in pending]
                stubbed.extend(pending)
                pending = []
                message = {"role": "user", "content": [*results, *stubs, *others]}
        elif pending:
            # the next message is not a user message: the results need a message of their own
            stubbed.extend(pending)
            inserted.append(len(out))
            out.append({"role": "user", "content": [_stub(t, stub_text, stub_is_error) for t in pending]})
            pending = []
        out.append(message)
        if message["role"] == "assistant" and (i + 1 < len(messages) or not pending_last):
            answered = (
                set(tool_result_ids(messages[i + 1]))
                if i + 1 < len(messages) and messages[i + 1]["role"] == "user"
                else set()
            )
            pending = [t for t in tool_use_ids(message) if t not in answered]
    if pending:
        stubbed.extend(pending)
        inserted.append(len(out))
        out.append({"role": "user", "content": [_stub(t, stub_text, stub_is_error) for t in pending]})
    return out, RepairReport(tuple(orphaned), tuple(stubbed), tuple(inserted))


COMPACTION_TEXT_PREFIX = "[Summary of the earlier conversation, written when it was compacted]"
NO_SUMMARY = "[an earlier compaction produced no summary]"


def compaction_on_wire(messages: list[Message], *, server_compaction: bool) -> list[Message]:
    """`messages` with every `compaction` block the request cannot carry as one turned into text.

    With server-side compaction on, the newest compaction block is sent verbatim (the API drops what
    precedes it and continues from its summary); older ones, and all of them in a request without the
    compaction beta (a summary call, a session whose engine changed), become a text block holding the
    summary, so what it summarised is never lost from the model's view. A block whose compaction failed
    (no content) is dropped: the API treats it as a no-op. Inputs are not changed.
    """
    positions = [
        (i, j)
        for i, m in enumerate(messages)
        if not isinstance(m["content"], str)
        for j, b in enumerate(m["content"])
        if b.get("type") == "compaction"
    ]
    if not positions:
        return messages
    keep = positions[-1] if server_compaction else None
    out = list(messages)
    for i in sorted({i for i, _ in positions}):
        blocks: list[Block] = []
        for j, block in enumerate(blocks_of(messages[i])):
            if block.get("type") != "compaction" or (i, j) == keep:
                blocks.append(block)
            elif block.get("content"):
                text: Block = {"type": "text", "text": f"{COMPACTION_TEXT_PREFIX}\n{block['content']}"}
                if "cache_control" in block:
                    text["cache_control"] = block["cache_control"]
                blocks.append(text)
        out[i] = {"role": messages[i]["role"], "content": blocks or [{"type": "text", "text": NO_SUMMARY}]}
    return out


def has_compaction(message: Message) -> bool:
    """True when the message carries a server-side compaction block."""
    return any(b.get("type") == "compaction" for b in blocks_of(message))

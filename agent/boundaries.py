"""Pure helpers over Anthropic message lists: where a history may be cut, and tool-pair repair.

A cut at position `i` splits `messages[:i]` from `messages[i:]`. A cut is safe when no tool_use in the
left part has its tool_result in the right part, so a call and its result always stay together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.types import Block, Message, blocks_of, tool_result_ids, tool_use_ids

PRUNED_MARKER = "[Old tool output cleared to save context space]"
PRUNE_MIN_CHARS = 200
"""Tool results longer than this (in characters of text) are cleared when outside the protected tail."""
STUB_RESULT = "[result removed by context compaction]"
EMPTY_AFTER_REPAIR = "[earlier tool output removed by context compaction]"


def safe_cuts(messages: Sequence[Message]) -> list[bool]:
    """`safe[i]` for every cut position 0..len(messages): True when no tool pair straddles it."""
    n = len(messages)
    used_at: dict[str, int] = {}
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            for tool_id in tool_use_ids(message):
                used_at.setdefault(tool_id, i)
    unsafe_from: list[int] = [0] * (n + 2)
    for r, message in enumerate(messages):
        if message["role"] != "user":
            continue
        for tool_id in tool_result_ids(message):
            u = used_at.get(tool_id)
            if u is not None and u < r:
                # cuts u+1 .. r would separate the call from its result
                unsafe_from[u + 1] += 1
                unsafe_from[r + 1] -= 1
    safe: list[bool] = []
    running = 0
    for i in range(n + 1):
        running += unsafe_from[i]
        safe.append(running == 0)
    return safe


def head_end(messages: Sequence[Message], safe: Sequence[bool]) -> int:
    """End of the first exchange: the first user message and the reply after it, with its whole tool group."""
    first_user = next((i for i, m in enumerate(messages) if m["role"] == "user"), None)
    if first_user is None:
        return min(1, len(messages))
    reply = next(
        (i for i in range(first_user + 1, len(messages)) if messages[i]["role"] == "assistant"), None
    )
    end = first_user + 1 if reply is None else reply + 1
    # a reply that called tools is whole only with its results: move past every unsafe cut
    while end < len(messages) and not safe[end]:
        end += 1
    return end


def is_user_ask(message: Message) -> bool:
    """A user message carrying something besides tool results (what a person typed or sent)."""
    if message["role"] != "user":
        return False
    return any(b.get("type") != "tool_result" for b in blocks_of(message))


def newest_user_ask(messages: Sequence[Message]) -> int | None:
    """Index of the newest user ask, else of the newest user-role message, else None."""
    for i in range(len(messages) - 1, -1, -1):
        if is_user_ask(messages[i]):
            return i
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None)


def tail_start(
    tokens: Sequence[int],
    *,
    head: int,
    budget: int,
    protect_last_n: int,
    newest_user: int | None,
    safe: Sequence[bool],
) -> int:
    """Start of the protected tail: the token budget walked back from the end, never fewer than
    `protect_last_n` messages, always holding the newest user ask (unless the head holds it), moved
    back to a safe cut. A result <= `head` means there is no middle to compact."""
    n = len(tokens)
    start, spent = n, 0
    while start > head and spent + tokens[start - 1] <= budget:
        spent += tokens[start - 1]
        start -= 1
    start = min(start, n - max(1, protect_last_n))
    if newest_user is not None and newest_user >= head:
        start = min(start, newest_user)
    while start > head and not safe[start]:
        start -= 1
    return start


def split_point(lo: int, hi: int, tokens: Sequence[int], safe: Sequence[bool]) -> int | None:
    """A safe cut strictly inside (lo, hi) nearest to the token midpoint, or None when there is none."""
    total = sum(tokens[lo:hi])
    best: int | None = None
    best_gap = 0
    acc = 0
    for i in range(lo + 1, hi):
        acc += tokens[i - 1]
        if not safe[i]:
            continue
        gap = abs(total - 2 * acc)
        if best is None or gap < best_gap:
            best, best_gap = i, gap
    return best


def tool_result_text(block: Block) -> str:
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
    dropped_result_ids: tuple[str, ...]
    stubbed_use_ids: tuple[str, ...]
    inserted_at: tuple[int, ...]
    """Positions (in the returned list) of user messages created to carry stub results."""


def repair_tool_pairs(messages: list[Message]) -> tuple[list[Message], RepairReport]:
    """Make every tool_result follow its tool_use in the immediately preceding assistant message.

    Results whose call is gone are dropped (a user message left empty gets a short text note so roles
    keep alternating); calls whose result is gone get a stub result. A call in the final message is a
    pending call, not a lost one, and is left alone. Messages are copied only when changed.
    """
    out: list[Message] = []
    dropped: list[str] = []
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
                dropped.extend(orphans)
                kept = [
                    b
                    for b in blocks
                    if b.get("type") != "tool_result" or str(b.get("tool_use_id")) in allowed
                ]
                n_results = sum(1 for b in kept if b.get("type") == "tool_result")
                kept = [*kept[:n_results], *(_stub(t) for t in pending), *kept[n_results:]]
                stubbed.extend(pending)
                pending = []
                if not kept:
                    kept = [{"type": "text", "text": EMPTY_AFTER_REPAIR}]
                message = {"role": "user", "content": kept}
        elif pending:
            # the next message is not a user message: the results need a message of their own
            stubbed.extend(pending)
            inserted.append(len(out))
            out.append({"role": "user", "content": [_stub(t) for t in pending]})
            pending = []
        out.append(message)
        if message["role"] == "assistant" and i + 1 < len(messages):
            answered = set(tool_result_ids(messages[i + 1])) if messages[i + 1]["role"] == "user" else set()
            pending = [t for t in tool_use_ids(message) if t not in answered]
    return out, RepairReport(tuple(dropped), tuple(stubbed), tuple(inserted))


def _stub(tool_id: str) -> Block:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": STUB_RESULT}

"""The blocks of the API's own tool calls in a conversation, and their pairing rules (pure).

A server tool call comes back as a `server_tool_use` block followed by its result
(`web_search_tool_result`, `web_fetch_tool_result`) in the same assistant message. The API accepts them
back only as it wrote them (results carry opaque `encrypted_content`, citations an `encrypted_index`), and
only paired: a `server_tool_use` never without its result, a result never without its call. So they are
kept verbatim or dropped whole, never edited. One exception: in a turn that also calls our own tools,
the API may end an assistant message with a `server_tool_use` whose result comes later (it runs the call
when our tool results are sent); such a call is pending while it is the newest assistant message.

Used by `agent.messages` (tool-pair repair) and by compaction's boundaries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from agent.tokens import estimate_block
from agent.types import Block, Message, blocks_of

SERVER_USE: Final = "server_tool_use"
RESULT_TYPES: Final = frozenset({"web_search_tool_result", "web_fetch_tool_result"})
SERVER_TYPES: Final = frozenset({SERVER_USE, *RESULT_TYPES})


def is_server_block(block: Block) -> bool:
    return block.get("type") in SERVER_TYPES


def has_server_blocks(message: Message) -> bool:
    return any(is_server_block(b) for b in blocks_of(message))


def use_ids(blocks: Iterable[Block]) -> list[str]:
    return [str(b.get("id")) for b in blocks if b.get("type") == SERVER_USE]


def result_ids(blocks: Iterable[Block]) -> list[str]:
    return [str(b.get("tool_use_id")) for b in blocks if b.get("type") in RESULT_TYPES]


def repair_server_pairs(messages: list[Message], *, pending_last: bool = True) -> tuple[list[Message], int]:
    """`messages` with every server block that lost its partner dropped whole (a compaction boundary,
    a pruned message), and the number dropped. A call and its result are paired across the window:
    usually in one assistant message, in a mixed turn in the next assistant message. With
    `pending_last`, calls in the newest assistant message (when it is the last message) wait for their
    result and stay. A text block of a message that lost a result loses its citations (they point into
    the dropped result); its text stays. Inputs are never changed; messages are copied only when
    changed."""
    uses: set[str] = set()
    results: set[str] = set()
    for message in messages:
        blocks = blocks_of(message)
        uses.update(use_ids(blocks))
        results.update(result_ids(blocks))
    pending: set[str] = set()
    if pending_last and messages and messages[-1]["role"] == "assistant":
        pending = set(use_ids(blocks_of(messages[-1])))
    lonely_uses = uses - results - pending
    lonely_results = results - uses
    if not lonely_uses and not lonely_results:
        return messages, 0
    out: list[Message] = []
    dropped = 0
    for message in messages:
        if isinstance(message["content"], str) or not has_server_blocks(message):
            out.append(message)
            continue
        kept = [
            b
            for b in message["content"]
            if not (
                (b.get("type") == SERVER_USE and str(b.get("id")) in lonely_uses)
                or (b.get("type") in RESULT_TYPES and str(b.get("tool_use_id")) in lonely_results)
            )
        ]
        lost = len(message["content"]) - len(kept)
        if not lost:
            out.append(message)
            continue
        dropped += lost
        if any(b.get("type") in RESULT_TYPES for b in message["content"] if b not in kept):
            kept = [_uncited(b) for b in kept]
        out.append({"role": message["role"], "content": kept or [{"type": "text", "text": DROPPED_TEXT}]})
    return out, dropped


DROPPED_TEXT: Final = "[web lookup removed by context compaction]"
"""What an assistant message holding nothing but a lone server block becomes (never empty)."""


def _uncited(block: Block) -> Block:
    if block.get("type") == "text" and "citations" in block:
        return {k: v for k, v in block.items() if k != "citations"}
    return block


def lookup_tokens(blocks: Iterable[Block]) -> int:
    """Estimated tokens of the lookups' results among `blocks` (what re-sending them costs each time)."""
    return sum(estimate_block(b) for b in blocks if b.get("type") in RESULT_TYPES)


def aged_note(blocks: Iterable[Block]) -> str:
    """What stands for the lookups of a message once they no longer travel (see `agent.media_aging`):
    the pages and results by address, so the model can fetch one again."""
    urls: list[str] = []
    for block in blocks:
        if block.get("type") == SERVER_USE and isinstance(block.get("input"), dict):
            given = block["input"].get("url") or block["input"].get("query")
            if given and str(given) not in urls:
                urls.append(str(given))
        content = block.get("content")
        if block.get("type") in RESULT_TYPES:
            found = content if isinstance(content, list) else [content]
            for item in found:
                url = item.get("url") if isinstance(item, dict) else None
                if url and str(url) not in urls:
                    urls.append(str(url))
    shown = ", ".join(urls[:8]) + (f" and {len(urls) - 8} more" if len(urls) > 8 else "")
    what = shown or "its results"
    return f"(earlier web lookup no longer attached: {what}; fetch or search again to read it)"


def without_server_blocks(message: Message) -> Message:
    """The message with every server block dropped whole and citations removed from its text (the
    text itself kept): what goes to a request that must not carry them, e.g. a summary call."""
    if isinstance(message["content"], str) or not has_server_blocks(message):
        return message
    kept: list[Block] = []
    for block in message["content"]:
        if is_server_block(block):
            continue
        kept.append(_uncited(block))
    return {"role": message["role"], "content": kept}

"""Wire-shaped message types the agent works on: Anthropic Messages API dicts, nothing richer.

A `Message` is exactly what is sent to the API (`{"role": ..., "content": ...}`). The system prompt is
not a message; it travels separately. Content is either a string or a list of content blocks.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, TypedDict

Role: TypeAlias = Literal["user", "assistant", "system"]
Block: TypeAlias = dict[str, Any]
"""One content block: {"type": "text"|"tool_use"|"tool_result"|"image"|"compaction", ...}."""


class Message(TypedDict):
    role: Role
    content: str | list[Block]


def text_of(message: Message) -> str:
    """All human-readable text of a message (text blocks, tool_result text and the summary of a
    server-side compaction block), joined by newlines."""
    content = message["content"]
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "compaction" and block.get("content"):
            parts.append(str(block["content"]))
        elif kind == "tool_result":
            inner = block.get("content", "")
            if isinstance(inner, str):
                parts.append(inner)
            elif isinstance(inner, list):
                parts.extend(str(b.get("text", "")) for b in inner if b.get("type") == "text")
    return "\n".join(parts)


def blocks_of(message: Message) -> list[Block]:
    """The content as a list of blocks (a string becomes one text block)."""
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return content


def tool_use_ids(message: Message) -> list[str]:
    return [str(b["id"]) for b in blocks_of(message) if b.get("type") == "tool_use"]


def tool_result_ids(message: Message) -> list[str]:
    return [str(b["tool_use_id"]) for b in blocks_of(message) if b.get("type") == "tool_result"]

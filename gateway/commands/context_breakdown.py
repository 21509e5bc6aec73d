"""What fills a chat's context window, for `/stats`: tokens by part and the largest stored messages.

Sizes are the same estimates the gateway decides with (each stored row's estimate, the system prompt
and tool definitions as the next request will carry them), so the parts add up to the window's
estimate rather than to the last API-reported size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.compaction.prompt import is_summary_message
from agent.pins import pins_block
from agent.tokens import estimate_text
from agent.types import Message, blocks_of
from gateway.commands.stats_report import Line
from gateway.store import StoredMessage

LARGEST = 3
EXCERPT_CHARS = 60


@dataclass(frozen=True, slots=True)
class Part:
    label: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Item:
    message_id: int
    kind: str
    author: str | None
    tokens: int
    excerpt: str


@dataclass(frozen=True, slots=True)
class Breakdown:
    parts: list[Part]
    largest: list[Item]

    @property
    def total(self) -> int:
        return sum(p.tokens for p in self.parts)


def kind_of(row: StoredMessage) -> str:
    message: Message = {"role": row.role, "content": row.content}
    if is_summary_message(message):
        return "summary"
    blocks = blocks_of(message)
    if row.role == "user" and blocks and all(b.get("type") == "tool_result" for b in blocks):
        return "tool results"
    return "user messages" if row.role == "user" else "assistant replies"


def breakdown(
    rows: Sequence[StoredMessage], *, system_tokens: int, tool_tokens: int, pins: Sequence[str]
) -> Breakdown:
    """`system_tokens` is the whole system prompt (pins included); the pins are shown on their own."""
    pin_tokens = estimate_text(pins_block(pins)) if pins else 0
    by_kind: dict[str, int] = {}
    for row in rows:
        kind = kind_of(row)
        by_kind[kind] = by_kind.get(kind, 0) + row.token_estimate
    parts = [
        Part("system prompt", max(0, system_tokens - pin_tokens)),
        Part("tool definitions", tool_tokens),
        Part(f"pins ({len(pins)})", pin_tokens),
    ]
    order = ("summary", "user messages", "assistant replies", "tool results")
    parts.extend(Part(kind, by_kind.get(kind, 0)) for kind in order)
    largest = sorted(rows, key=lambda r: r.token_estimate, reverse=True)[:LARGEST]
    return Breakdown(parts, [_item(r) for r in largest])


def _item(row: StoredMessage) -> Item:
    text = " ".join(row.text.split())
    excerpt = text[:EXCERPT_CHARS] + ("…" if len(text) > EXCERPT_CHARS else "")
    return Item(row.id, kind_of(row), row.author_name, row.token_estimate, excerpt)


def format_breakdown(b: Breakdown) -> list[Line]:
    """The `/stats detail` lines: the next request by part (estimates), and its largest stored items."""
    parts = ", ".join(f"{p.label} {p.tokens:,}" for p in b.parts if p.tokens or p.label.startswith("pins"))
    lines = [
        Line(
            "Window by part",
            f"~{b.total:,} tokens estimated for the next request, system prompt and tools included "
            f"(the API's own count differs a little): {parts}",
            detail=True,
        )
    ]
    if b.largest:
        lines.append(Line("", "Largest items:", detail=True))
        for item in b.largest:
            who = f" from {item.author}" if item.author and item.kind == "user messages" else ""
            lines.append(
                Line(
                    "",
                    f"  #{item.message_id} {item.kind}{who}: {item.tokens:,} tokens — “{item.excerpt}”",
                    detail=True,
                )
            )
    return lines

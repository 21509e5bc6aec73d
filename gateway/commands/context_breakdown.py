"""What fills a chat's context window, for `/stats`: tokens by part and the largest stored messages.

The parts are weighed with the same estimates the gateway decides with (each stored row's estimate, the
system prompt and tool definitions as the next request will carry them) and shown as shares of the chat's
context size (`context_size.py`), so they add up to the number `/stats` leads with; the estimates' own
total is named beside it.
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


def split(parts: Sequence[Part], total: int) -> list[Part]:
    """`parts` scaled to add up to `total` exactly (largest remainder), keeping their proportions."""
    weight = sum(p.tokens for p in parts)
    if weight <= 0:
        return [Part(p.label, 0) for p in parts]
    exact = [p.tokens * total / weight for p in parts]
    shares = [int(x) for x in exact]
    by_remainder = sorted(range(len(parts)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in by_remainder[: total - sum(shares)]:
        shares[i] += 1
    return [Part(p.label, share) for p, share in zip(parts, shares, strict=True)]


def format_breakdown(b: Breakdown, context_tokens: int) -> list[Line]:
    """The `/stats detail` lines: the chat's context size split by part (in proportion to the
    estimates), and the largest stored items (their own estimates)."""
    shown = split(b.parts, context_tokens)
    parts = ", ".join(f"{p.label} {p.tokens:,}" for p in shown if p.tokens or p.label.startswith("pins"))
    lines = [
        Line(
            "Window by part",
            f"the {context_tokens:,} tokens of the context size, split in proportion to local estimates "
            f"(which add up to ~{b.total:,}): {parts}",
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

"""When images, PDFs and web lookups stop travelling with every request (pure).

A picture matters most in the turns right after it is sent. Keeping it in every later request costs a
cache read of all its tokens on every turn; dropping it changes the prompt from that point on, so the
cache is written again from there. Peers either keep every image (the prompt only grows) or drop each
one N turns later (a cache rewrite on almost every turn). Here media older than the last `keep_turns`
user turns are demoted together, and only when it pays:

- the prompt cache has expired anyway (the next request writes everything again: demoting is free), or
- the demotable media add up to `budget` tokens (one rewrite then saves their read on every later turn).

A demoted item stays stored and labelled (`[photo m12]`); the model can look at it again with
`view_media`. Demotion marks the stored row `pruned`, so every later request renders it the same way.

A web lookup (a page fetched, a search's results) is carried the same way: its result blocks go back
byte for byte with every request until they are left out, whole, with their calls (a note names the
addresses, so the model can fetch again). They count toward the same budget, and are demoted together
with the media (`bench/bench_fetch_aging.py`: 0.73-0.82x the cost of keeping them, by page size).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from agent.media import is_media_ref, media_ref_tokens
from agent.messages import StoredRow
from agent.server_blocks import lookup_tokens

KEEP_TURNS: Final = 4
"""Media sent within the last this many user turns always travel as images."""
BUDGET: Final = 5_000
"""Demote once the demotable media reach this many tokens (about three 1280x960 photos): in the media
benchmark, budgets from 3,000 to 6,000 tokens cost within 3% of each other and 12,000 costs 15% more."""


def demotable_tokens(content: Any) -> int:
    """Tokens of the media references in stored content (tool results included) and of the web
    lookups' results in it: what re-sending the content costs beyond its words."""
    if not isinstance(content, list):
        return 0
    total = lookup_tokens(b for b in content if isinstance(b, dict))
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if is_media_ref(block):
            total += media_ref_tokens(block)
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            total += sum(
                media_ref_tokens(b) for b in block["content"] if isinstance(b, Mapping) and is_media_ref(b)
            )
    return total


def _opens_turn(row: StoredRow) -> bool:
    content = row.content
    if row.role != "user":
        return False
    if not isinstance(content, list):
        return True
    return not all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)


def rows_to_demote(
    rows: Sequence[StoredRow], *, cache_cold: bool, keep_turns: int = KEEP_TURNS, budget: int = BUDGET
) -> list[int]:
    """Ids of the window rows whose media should stop travelling now (empty: leave everything)."""
    turn_starts = [i for i, row in enumerate(rows) if _opens_turn(row)]
    if len(turn_starts) <= keep_turns:
        return []
    boundary = turn_starts[-keep_turns]
    candidates = [(row.id, demotable_tokens(row.content)) for row in rows[:boundary] if not row.pruned]
    candidates = [(row_id, tokens) for row_id, tokens in candidates if tokens > 0]
    if not candidates:
        return []
    if cache_cold or sum(tokens for _, tokens in candidates) >= budget:
        return [row_id for row_id, _ in candidates]
    return []

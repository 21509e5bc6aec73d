"""Which thinking each reply request to the fake Anthropic API sent back, and what it owed.

On the models with preserved thinking a block may go back only while nothing before it changed. A
request that leaves out a block it could have sent loses the model's reasoning and the cached prefix
from that block on; nothing is refused, so only this accounting shows it. Between two requests with no
edit of the history in between (no compaction, no demotion), the later one owes everything the earlier
one sent, followed by the thinking of the earlier one's answer when that answer was kept (a refusal and
a reply of thinking alone are never stored).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from tests.fakes.anthropic import RecordedRequest

THINKING = ("thinking", "redacted_thinking")


def _signatures(blocks: Iterable[Any]) -> list[str]:
    return [
        str(b.get("signature") or b.get("data"))
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") in THINKING
    ]


def sent(record: RecordedRequest) -> list[str]:
    """The thinking blocks the request sent back, in order (their signatures)."""
    blocks = [
        b
        for m in record.body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
    ]
    return _signatures(blocks)


def produced(record: RecordedRequest) -> list[str]:
    """The thinking of the request's answer when the answer is kept in the history."""
    answer = record.answer or {}
    content = answer.get("content") or []
    kept = answer.get("stop_reason") != "refusal" and any(b.get("type") not in THINKING for b in content)
    return _signatures(content) if kept else []


def owed(record: RecordedRequest) -> list[str]:
    """What the next request sends back when nothing before it was edited."""
    return sent(record) + produced(record)


def losses(records: Sequence[RecordedRequest]) -> list[str]:
    """Each request (of consecutive ones with no edit between them) that did not send back all it owed;
    empty when every block was kept."""
    found = []
    for i, (before, after) in enumerate(pairwise(records), start=1):
        due, back = owed(before), sent(after)
        if back[: len(due)] != due:
            kept = next((n for n, (a, b) in enumerate(zip(due, back, strict=False)) if a != b), len(back))
            found.append(f"reply request {i}: sent back {kept} of the {len(due)} thinking blocks owed")
    return found

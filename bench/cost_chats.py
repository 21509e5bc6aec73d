"""Per-chat costs of a cost-benchmark replay: which chats a policy served worst, and chat-days.

A request belongs to the chat whose first message it carries (each chat's first text is unique in a
trace; a summary call carries the middle it summarizes, which starts with it too). The oracle is a sum
over prompt prefixes, and no prefix is shared by two chats, so a chat's own oracle is the oracle of its
own requests.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.oracle import SentRequest, billed_input_usd, is_refresh, oracle_input_usd
from bench.traces import DAY, Event

_KEY_CHARS = 60


@dataclass(frozen=True, slots=True)
class ChatCost:
    chat_id: str
    messages: int
    calls: int
    refreshes: int
    usd: float
    oracle: float = 0.0
    span_s: float = 0.0
    """From the chat's first message to its last."""


def chat_days(events: Sequence[Event]) -> int:
    """Days on which each chat had a message, summed over the chats."""
    return len({(e.chat_id, int(e.at // DAY)) for e in events})


def _owner(request: SentRequest, firsts: Mapping[str, str]) -> str:
    messages = request.body.get("messages") or []
    head = json.dumps(messages[:1], ensure_ascii=False) if messages else ""
    for chat_id, text in firsts.items():
        if text in head:
            return chat_id
    return "?"


def per_chat(
    requests: Sequence[SentRequest],
    events: Sequence[Event],
    *,
    min_cacheable: Mapping[str, int],
    bounds: bool,
) -> tuple[ChatCost, ...]:
    firsts: dict[str, str] = {}
    messages: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        firsts.setdefault(e.chat_id, e.text[:_KEY_CHARS])
        messages[e.chat_id].append(e)
    owned: dict[str, list[SentRequest]] = defaultdict(list)
    for r in requests:
        owned[_owner(r, firsts)].append(r)
    costs = []
    for chat_id, mine in owned.items():
        seen = messages.get(chat_id, [])
        costs.append(
            ChatCost(
                chat_id,
                messages=len(seen),
                calls=len(mine),
                refreshes=sum(1 for r in mine if is_refresh(r)),
                usd=billed_input_usd(mine),
                oracle=oracle_input_usd(mine, min_cacheable=min_cacheable) if bounds else 0.0,
                span_s=seen[-1].at - seen[0].at if seen else 0.0,
            )
        )
    return tuple(sorted(costs, key=lambda c: c.chat_id))

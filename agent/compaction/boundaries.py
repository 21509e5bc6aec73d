"""Pure helpers over Anthropic message lists: where a history may be cut (head, tail, split points).

A cut at position `i` splits `messages[:i]` from `messages[i:]`. A cut is safe when no tool_use in the
left part has its tool_result in the right part, so a call and its result always stay together; the
same for the API's own tool calls, whose result may come in a later assistant message (`agent.server_blocks`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.compaction.prompt import is_summary_message
from agent.server_blocks import result_ids as server_result_ids
from agent.server_blocks import use_ids as server_use_ids
from agent.types import Message, blocks_of, tool_result_ids, tool_use_ids


def safe_cuts(messages: Sequence[Message]) -> list[bool]:
    """`safe[i]` for every cut position 0..len(messages): True when no tool pair straddles it."""
    n = len(messages)
    used_at: dict[str, int] = {}
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            for tool_id in [*tool_use_ids(message), *server_use_ids(blocks_of(message))]:
                used_at.setdefault(tool_id, i)
    unsafe_from: list[int] = [0] * (n + 2)
    for r, message in enumerate(messages):
        if message["role"] == "assistant":
            results = server_result_ids(blocks_of(message))
        elif message["role"] == "user":
            results = tool_result_ids(message)
        else:
            continue
        for tool_id in results:
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
    """End of the first exchange: the first user message and the reply right after it (with its whole
    tool group). Stored group chatter is one message per row, so a reply that comes only after more
    user messages is not part of the first exchange; a summary is never protected as a reply."""
    first_user = next((i for i, m in enumerate(messages) if m["role"] == "user"), None)
    if first_user is None:
        return min(1, len(messages))
    end = first_user + 1
    if end < len(messages) and messages[end]["role"] == "assistant" and not is_summary_message(messages[end]):
        end += 1
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
    cap: int | None = None,
    user_at: Sequence[bool] | None = None,
    keep_from: int | None = None,
    keep_question: bool = True,
) -> int:
    """Start of the protected tail: the token budget walked back from the end, extended to at least
    `protect_last_n` messages as long as the tail stays within `cap` tokens, always holding the newest
    user ask (unless the head holds it) and every message from `keep_from` on (those awaiting a reply),
    then moved to a safe cut where a user message starts (`user_at`), so the tail never opens with a
    reply whose question was summarized: back (keeping the question) when what that adds fits in `cap`,
    (and `keep_question`), else forward to the next ask (summarizing the exchange whole) as far as the
    newest ask and
    `keep_from` allow, else back whatever it costs. A result <= `head` means there is no middle to
    compact. The cap keeps a few huge messages from protecting themselves: when one turn's messages
    alone exceed it, their oldest part is compacted too (unless they still await a reply)."""
    n = len(tokens)
    start, spent = n, 0
    while start > head and spent + tokens[start - 1] <= budget:
        spent += tokens[start - 1]
        start -= 1
    floor = n - max(1, protect_last_n)
    while start > max(head, floor) and (cap is None or spent + tokens[start - 1] <= cap):
        spent += tokens[start - 1]
        start -= 1
    latest = n - 1 if n else 0
    if newest_user is not None and newest_user >= head:
        latest = min(latest, newest_user)
    if keep_from is not None:
        latest = min(latest, max(keep_from, head))
    start = min(start, latest)

    def opens_tail(i: int) -> bool:
        return safe[i] and (user_at is None or user_at[i])

    back = start
    while back > head and not opens_tail(back):
        back -= 1
    if start <= head or user_at is None or (back > head and start == back):
        return back
    limit = budget if cap is None else max(budget, cap)
    if keep_question and back > head and sum(tokens[back:start]) <= limit:
        return back
    forward = start + 1
    while forward <= latest and not opens_tail(forward):
        forward += 1
    return forward if forward <= latest else back


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

"""What leaving old fetched pages out of later requests saves, as old photos are (`agent.media_aging`).

Run: `python -m bench.bench_fetch_aging` (about a minute). A page the model fetched stays in the chat's
history as the API returned it (`web_fetch_tool_result`, sent back byte for byte), so every later request
reads it again from the prompt cache. Leaving an old lookup out (the pair dropped whole, its answer's text
kept, `agent.server_blocks.without_server_blocks`) saves that read on every later turn but changes the
prompt from that message on, so the cache is written again from there once.

One private chat on Claude Sonnet 5.5 goes through the agent loop and the real SDK against the fake API
(`tests.fakes.anthropic`, whose fetched page is `--page-tokens` long and whose cache is modelled), with a
~2,000-token system prompt, `--turns` turns `--gap` seconds apart, and a `fetch:` of a new page every
`--every` turns. Two policies, side by side on the same chat:

- `keep`: every lookup stays, sent back byte for byte until a compaction;
- `age`: the gateway's policy (`agent.media_aging`, shared with photos): lookups older than the last
  `KEEP_TURNS` user turns are left out together, whole, with a note naming their addresses, once the
  cache has expired (gaps of 5 minutes or more) or they add up to its 5,000-token budget.

Each call is billed at the model table's prices (`agent.models.cost_usd`), as the spending caps bill it.
What it cannot say: how often people ask about a page again after four turns (then `age` pays for a
fetch again), and how large real pages are (`max_content_tokens` caps them, 20,000 by default here).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.llm import AnthropicClient
from agent.media_aging import KEEP_TURNS, rows_to_demote
from agent.models import cost_usd, lookup_model
from agent.server_blocks import aged_note, has_server_blocks, without_server_blocks
from agent.server_tools import ServerTools, WebFetch
from agent.types import Message, blocks_of
from bench.bench_search import BenchHooks, one_turn
from tests.fakes.anthropic import FakeAnthropic

MODEL = lookup_model("claude-sonnet-5-5")
WEB = ServerTools(fetch=WebFetch(max_uses=5, max_content_tokens=20_000))


@dataclass(frozen=True, slots=True)
class Outcome:
    policy: str
    usd: float
    written: int
    read: int
    largest: int


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    role: str
    content: Any
    pruned: bool


def _aged(history: list[Message], pruned: set[int], *, cache_cold: bool) -> list[Message]:
    """`history` as the gateway sends it under the media policy (`agent.media_aging.rows_to_demote`,
    which adds to `pruned`): an aged lookup left out whole, a note in its place, the text kept."""
    rows = [_Row(i, m["role"], m["content"], i in pruned) for i, m in enumerate(history)]
    pruned.update(rows_to_demote(rows, cache_cold=cache_cold))
    out: list[Message] = []
    for i, m in enumerate(history):
        if i in pruned and m["role"] == "assistant" and has_server_blocks(m):
            note = {"type": "text", "text": aged_note(blocks_of(m))}
            m = {"role": "assistant", "content": [*without_server_blocks(m)["content"], note]}
        out.append(m)
    return out


async def run_chat(policy: str, *, turns: int, every: int, gap_s: float, page_tokens: int) -> Outcome:
    usd = 0.0
    written = read = largest = 0
    async with FakeAnthropic(api_key="bench") as fake:
        fake.web.page_tokens = page_tokens
        client = AnthropicClient(api_key="bench", base_url=fake.base_url)
        hooks = BenchHooks()
        history: list[Message] = []
        pruned: set[int] = set()
        try:
            for n in range(turns):
                text = (
                    f"fetch: https://docs.example.com/guide-{n}"
                    if n % every == 1
                    else f"Tell me one thing about the tide on day {n}."
                )
                history.append({"role": "user", "content": text})
                sent = _aged(history, pruned, cache_cold=gap_s >= 300) if policy == "age" else history
                responses, stored = await one_turn(client, hooks, sent, WEB)
                history.extend(stored)
                for response in responses:
                    u = response.usage
                    usd += cost_usd(MODEL, u)
                    written += u.cache_creation_input_tokens
                    read += u.cache_read_input_tokens
                    largest = max(largest, u.prompt_tokens)
                fake.advance(gap_s)
        finally:
            await client.close()
    return Outcome(policy, usd, written, read, largest)


async def run(turns: int, every: int, gap_s: float, pages: Sequence[int]) -> list[tuple[int, Outcome]]:
    print(
        f"Sonnet 5.5, {turns} turns {gap_s:.0f} s apart, a new page fetched every {every} turns; "
        f"`age` drops a lookup older than {KEEP_TURNS} user turns"
    )
    print("| page tokens | policy | USD | cache written | cache read | largest prompt | vs keep |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for page in pages:
        keep = await run_chat("keep", turns=turns, every=every, gap_s=gap_s, page_tokens=page)
        age = await run_chat("age", turns=turns, every=every, gap_s=gap_s, page_tokens=page)
        for outcome in (keep, age):
            o = outcome
            print(
                f"| {page:,} | {o.policy} | ${o.usd:.4f} | {o.written:,} | {o.read:,} | {o.largest:,} | "
                f"{o.usd / keep.usd:.2f}x |"
            )
            rows.append((page, outcome))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--every", type=int, default=8)
    parser.add_argument("--gap", type=float, default=60.0, help="seconds between turns")
    parser.add_argument("--page-tokens", type=int, nargs="+", default=[2_000, 5_000, 20_000])
    args = parser.parse_args(argv)
    asyncio.run(run(args.turns, args.every, args.gap, args.page_tokens))


if __name__ == "__main__":
    main()

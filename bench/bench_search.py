"""What a web search turn costs on the default model, and whether the prompt cache holds after it.

Run: `python -m bench.bench_search` (a few seconds). One private chat on Claude Sonnet 5.5 goes through
the agent loop and the real SDK against the fake API (`tests.fakes.anthropic`, its web tools: a
`search:` message gets a search with two results, each billed as `RESULT_TOKENS` input tokens, and a
cited answer), 30 s of fake time between turns, the built-in compressor and the default rolling cache
markers. The chat has a ~2,000-token system prompt and `WARMUP` plain turns; then turn A is a plain
question, turn B the same question as a search, turn C a plain follow-up. Three runs:

- `off`: web tools off (A, B and C are plain turns, B without the lookup);
- `on`: web search and fetch offered on every request (their definitions are part of the cached prefix);
- `toggled`: tools off for the warm-up, switched on at turn A (the tool list changes, so the cached prefix
  is written again once).

Each call is billed at the model table's prices (`agent.models.cost_usd`: input, cache writes and reads,
output, and $10 per 1,000 searches), as the spending caps bill it. What the fake cannot say: how many
tokens real results add (the fake's `RESULT_TOKENS` per result is an assumption; real pages are often
larger), and how often the model decides to search.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.compaction.compressor import ContextCompactor
from agent.compaction.engine import CompactionConfig, SummaryRequest, SummaryResponse
from agent.llm import AnthropicClient, LLMResponse
from agent.loop import Compacted, Conversation, Entry, LoopConfig, run_turn
from agent.models import CacheTTL, cost_usd, lookup_model
from agent.server_tools import ServerTools, WebFetch, WebSearch
from agent.tokens import Calibration, estimate_message
from agent.tools.registry import ToolRegistry
from agent.types import Message
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.anthropic.web import RESULT_TOKENS

MODEL = lookup_model("claude-sonnet-5-5")
SYSTEM = "You are a helpful assistant in a family chat. " + ("Answer briefly, in plain words. " * 220)
WARMUP = 8
GAP_S = 30.0
WEB = ServerTools(search=WebSearch(max_uses=5), fetch=WebFetch(max_uses=5, max_content_tokens=20_000))


@dataclass(frozen=True, slots=True)
class Call:
    turn: str
    uncached: int
    written: int
    read: int
    output: int
    searches: int
    usd: float

    @property
    def prompt(self) -> int:
        return self.uncached + self.written + self.read


class BenchHooks:
    def __init__(self) -> None:
        self.stored: list[Message] = []
        self.calls: list[LLMResponse] = []

    async def persist(self, messages: list[Message]) -> list[int]:
        self.stored.extend(messages)
        return [len(self.stored)]

    async def compact(
        self, window: Sequence[Entry[int]], *, force: bool, why: str, server: bool = False
    ) -> Compacted[int] | None:
        return None

    async def usage(
        self, response: LLMResponse, *, purpose: str, last_ref: int | None, ttl: CacheTTL | None
    ) -> None:
        self.calls.append(response)


async def _no_summary(request: SummaryRequest) -> SummaryResponse:
    raise RuntimeError("the benchmark never compacts")


async def one_turn(
    client: AnthropicClient, hooks: BenchHooks, window: Sequence[Message], tools: ServerTools
) -> tuple[list[LLMResponse], list[Message]]:
    """One turn of the chat through the loop (the built-in compressor, which never fires here, and the
    default cache markers): the reply calls it made and the messages it stored."""
    engine = ContextCompactor(
        context_length=MODEL.context_window,
        config=CompactionConfig(),
        summarizer=_no_summary,
        count_tokens=estimate_message,
    )
    config = LoopConfig(
        model=MODEL, calibration=Calibration(MODEL.name), max_tokens=4_096, server_tools=tools
    )
    calls, stored = len(hooks.calls), len(hooks.stored)
    await run_turn(
        Conversation(
            llm=client,
            engine=engine,
            window=[Entry(m, i) for i, m in enumerate(window)],
            system=SYSTEM + ("\n\n" + tools.prompt_note() if tools.enabled else ""),
            tools=ToolRegistry(),
            config=config,
        ),
        hooks=hooks,
    )
    return hooks.calls[calls:], hooks.stored[stored:]


async def run_chat(mode: str) -> list[Call]:
    """One chat (see the module docstring); every reply call of turns A, B and C."""
    out: list[Call] = []
    async with FakeAnthropic(api_key="bench") as fake:
        client = AnthropicClient(api_key="bench", base_url=fake.base_url)
        hooks = BenchHooks()
        history: list[Message] = []
        turns = [(f"w{i}", f"Tell me one thing about the tide on day {i}.") for i in range(WARMUP)]
        turns += [("A", "When is high tide in Brest?"), ("B", "search: high tide in Brest"), ("C", "Thanks!")]
        try:
            for label, text in turns:
                if mode == "off" and label == "B":
                    text = "high tide in Brest, please"
                on = mode == "on" or (mode == "toggled" and not label.startswith("w"))
                history.append({"role": "user", "content": text})
                responses, stored = await one_turn(client, hooks, history, WEB if on else ServerTools())
                history.extend(stored)
                for response in responses:
                    u = response.usage
                    out.append(
                        Call(
                            label,
                            u.input_tokens,
                            u.cache_creation_input_tokens,
                            u.cache_read_input_tokens,
                            u.output_tokens,
                            u.web_search_requests,
                            cost_usd(MODEL, u),
                        )
                    )
                fake.advance(GAP_S)
        finally:
            await client.close()
    return [c for c in out if not c.turn.startswith("w")]


def _row(mode: str, c: Call) -> str:
    hit = c.read / c.prompt if c.prompt else 0.0
    return (
        f"| {mode} | {c.turn} | {c.prompt:,} | {c.uncached:,} / {c.written:,} / {c.read:,} | {hit:.0%} | "
        f"{c.output:,} | {c.searches} | ${c.usd:.5f} |"
    )


async def run() -> dict[str, Any]:
    results = {mode: await run_chat(mode) for mode in ("off", "on", "toggled")}
    print(f"Sonnet 5.5, {WARMUP} warm-up turns, {GAP_S:.0f} s apart; {RESULT_TOKENS} input tokens per result")
    print(
        "| tools | turn | prompt tokens | uncached / written / read | read share | output | searches | USD |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for mode, calls in results.items():
        for call in calls:
            print(_row(mode, call))
    return results


def main(argv: Sequence[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    asyncio.run(run())


if __name__ == "__main__":
    main()

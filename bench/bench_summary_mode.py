"""Standalone vs prefix-reusing summary calls, measured against the fake API's prefix-cache model.

For one session window (~60K tokens) the last reply call has cached the whole window. A compaction
then summarizes the middle either standalone (summary model, no markers) or by resending the cached
window with the session's model. Both are run side by side, warm (within the TTL) and cold (after
it), with a cheap summary model and with the main model as summary model; the table shows the
measured cost of each and which mode `agent.compaction.summarizer.estimate_costs` would pick.

Run: `python -m bench.bench_summary_mode`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agent.caching.markers import apply_cache_control
from agent.compaction.engine import SummaryRequest
from agent.compaction.prompt import build_instructions, serialize_conversation
from agent.compaction.summarizer import (
    EXPECTED_OUTPUT_SHARE,
    LLMSummarizer,
    PrefixContext,
    SummaryMode,
    estimate_costs,
)
from agent.llm import AnthropicClient, LLMRequest
from agent.models import cost_usd, lookup_model
from agent.tokens import estimate_message
from agent.types import Message
from tests.fakes.anthropic import FakeAnthropic

MAIN = "claude-sonnet-4-6"
SYSTEM = "You are the house assistant of a busy group chat. " + "Answer briefly and precisely. " * 60
TOOLS: list[dict[str, Any]] = [
    {"name": "current_time", "description": "now", "input_schema": {"type": "object", "properties": {}}}
]


def window(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out.append(
            {"role": "user", "content": f"[Dana] step {i}: deploy service-{i} to eu-west " + "log " * 180}
        )
        out.append(
            {"role": "assistant", "content": f"Done with step {i}; service-{i} healthy. " + "ok " * 120}
        )
    return out


@dataclass(frozen=True, slots=True)
class Measurement:
    aux: str
    warm: bool
    measured: dict[SummaryMode, float]
    estimated: dict[SummaryMode, float]

    @property
    def measured_cheaper(self) -> SummaryMode:
        return min(self.measured, key=lambda m: self.measured[m])

    @property
    def estimated_cheaper(self) -> SummaryMode:
        return min(self.estimated, key=lambda m: self.estimated[m])


def _realistic_summary(max_tokens: int) -> str:
    line = "- service-17 deployed to eu-west after the config fix; health checks green\n"
    body = line * max(1, int(max_tokens * EXPECTED_OUTPUT_SHARE * 3.5) // len(line))
    return "## Goal\nRoll out every service to eu-west.\n## Progress\n### Done\n" + body


def _request(messages: list[Message], start: int, end: int, max_tokens: int) -> SummaryRequest:
    middle = messages[start:end]
    return SummaryRequest(
        middle=middle,
        previous_summary=None,
        focus=None,
        max_tokens=max_tokens,
        instructions=build_instructions(
            conversation=serialize_conversation(middle),
            previous_summary=None,
            focus=None,
            max_tokens=max_tokens,
        ),
        history=messages,
        middle_start=start,
        middle_end=end,
    )


async def measure(*, aux: str, warm: bool, turns: int = 60, max_tokens: int = 6_000) -> Measurement:
    main_info, aux_info = lookup_model(MAIN), lookup_model(aux)
    messages = window(turns)
    start, end = 2, len(messages) - 20
    measured: dict[SummaryMode, float] = {}
    for mode in ("standalone", "prefix"):
        async with FakeAnthropic(api_key="bench") as fake:
            client = AnthropicClient(api_key="bench", base_url=fake.base_url)
            try:
                last_reply = apply_cache_control(SYSTEM, messages, ttl="5m", tools=TOOLS)
                await client.create(
                    LLMRequest(
                        model=MAIN,
                        system=last_reply.system_blocks,
                        messages=last_reply.messages,
                        tools=last_reply.tools or [],
                        max_tokens=256,
                    )
                )
                if not warm:
                    fake.advance(600)  # past the 5-minute TTL
                # A summary of realistic length: the template filled to ~60% of its budget.
                fake.script_reply(_realistic_summary(max_tokens), scope="any")
                summarizer = LLMSummarizer(
                    client,
                    model=aux if mode == "standalone" else MAIN,
                    mode=mode,
                    prefix=PrefixContext(system=SYSTEM, tools=TOOLS, model=MAIN, cache_ttl="5m"),
                )
                result = await summarizer(_request(messages, start, end, max_tokens))
            finally:
                await client.close()
        model = aux_info if mode == "standalone" else main_info
        measured[mode] = cost_usd(model, result.usage, ttl="5m")
    costs = estimate_costs(
        main=main_info,
        aux=aux_info,
        history_tokens=sum(estimate_message(m) for m in messages),
        middle_tokens=sum(estimate_message(m) for m in messages[start:end]),
        output_tokens=int(max_tokens * EXPECTED_OUTPUT_SHARE),
        cache_warm=warm,
        ttl="5m",
    )
    return Measurement(
        aux=aux,
        warm=warm,
        measured=measured,
        estimated={"standalone": costs.standalone_usd, "prefix": costs.prefix_usd},
    )


async def run() -> list[Measurement]:
    return [await measure(aux=aux, warm=warm) for aux in ("claude-haiku-4-5", MAIN) for warm in (True, False)]


def main() -> dict[str, Any]:
    results = asyncio.run(run())
    print("summary mode: measured cost per summary call (fake API cache model, ~60K-token window)")
    header = f"{'summary model':<20} {'cache':<5} {'standalone':>11} {'prefix':>9} {'cheaper':>11}"
    print(f"{header} {'estimate picks':>15}")
    rows = {}
    for m in results:
        print(
            f"{m.aux:<20} {'warm' if m.warm else 'cold':<5} ${m.measured['standalone']:>10.4f} "
            f"${m.measured['prefix']:>8.4f} {m.measured_cheaper:>11} {m.estimated_cheaper:>15}"
        )
        rows[f"{m.aux}/{'warm' if m.warm else 'cold'}"] = {
            "standalone_usd": m.measured["standalone"],
            "prefix_usd": m.measured["prefix"],
            "measured_cheaper": m.measured_cheaper,
            "estimate_picks": m.estimated_cheaper,
        }
    return rows


if __name__ == "__main__":
    main()

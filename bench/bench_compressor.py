"""CPU time of `ContextCompactor.compress` on a synthetic ~200K-token history (target: under 50 ms).

Run: `python -m bench.bench_compressor`. The summarizer answers instantly, so this measures the
compressor alone (prune, boundaries, serialization of the middle, assembly, verification): the
median of N runs of `time.process_time`. Token counts come from the cheap chars/4 estimate, and
again from the tiktoken estimate, once memoized per message (as the store keeps one estimate per
row) and once cold.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from agent.compaction.compressor import ContextCompactor
from agent.compaction.engine import CompactionConfig, SummaryRequest, SummaryResponse
from agent.tokens import estimate_message, rough_estimate_message
from agent.types import Block, Message

CONTEXT_LENGTH = 200_000
TARGET_TOKENS = 200_000
RUNS = 15
TARGET_MS = 50.0
_WORDS = [
    "the",
    "build",
    "failed",
    "because",
    "config",
    "path",
    "src/app/main.py",
    "was",
    "missing",
    "so",
    "we",
    "decided",
    "to",
    "use",
    "uv",
]


def synthetic_history(*, target_tokens: int = TARGET_TOKENS, seed: int = 11) -> list[Message]:
    """A coding-assistant chat: asks, replies, tool rounds with small and very large outputs."""
    rng = random.Random(seed)
    out: list[Message] = []
    tokens = 0
    turn = 0

    def words(n: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(n))

    while tokens < target_tokens:
        out.append({"role": "user", "content": f"ask {turn}: " + words(rng.randint(5, 80))})
        for r in range(rng.randint(0, 3)):
            ids = [f"t{turn}_{r}_{k}" for k in range(rng.randint(1, 2))]
            uses: list[Block] = [
                {
                    "type": "tool_use",
                    "id": i,
                    "name": rng.choice(["read_file", "shell"]),
                    "input": {"q": words(4)},
                }
                for i in ids
            ]
            out.append({"role": "assistant", "content": [{"type": "text", "text": words(10)}, *uses]})
            size = rng.choice([40, 400, 3_000, 20_000])
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": words(size // 6)} for i in ids
                    ],
                }
            )
        out.append({"role": "assistant", "content": [{"type": "text", "text": words(rng.randint(20, 300))}]})
        tokens = sum(rough_estimate_message(m) for m in out)
        turn += 1
    out.append({"role": "user", "content": "what next?"})
    return out


async def _instant_summary(request: SummaryRequest) -> SummaryResponse:
    return SummaryResponse(
        text="## Goal\nKeep the build green.\n## Progress\n### Done\n- fixed config", model="none"
    )


def _memoized(count: Callable[[Message], int]) -> Callable[[Message], int]:
    cache: dict[int, int] = {}

    def counted(message: Message) -> int:
        key = id(message)
        if key not in cache:
            cache[key] = count(message)
        return cache[key]

    return counted


def _time_compress(history: list[Message], count: Callable[[Message], int], runs: int) -> dict[str, Any]:
    samples: list[float] = []
    result = None
    for _ in range(runs):
        engine = ContextCompactor(
            context_length=CONTEXT_LENGTH,
            config=CompactionConfig(),
            summarizer=_instant_summary,
            count_tokens=count,
        )
        started = time.process_time()
        result = asyncio.run(engine.compress(history, force=True))
        samples.append((time.process_time() - started) * 1000)
    assert result is not None
    return {
        "median_ms": round(statistics.median(samples), 2),
        "max_ms": round(max(samples), 2),
        "outcome": result.outcome.value,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "removed": len(result.removed_indices),
    }


def main(runs: int = RUNS) -> dict[str, Any]:
    history = synthetic_history()
    tiktoken_count = _memoized(estimate_message)
    cold_started = time.process_time()
    for message in history:
        tiktoken_count(message)
    cold_ms = (time.process_time() - cold_started) * 1000
    report: dict[str, Any] = {
        "messages": len(history),
        "target_ms": TARGET_MS,
        "chars_div_4": _time_compress(history, rough_estimate_message, runs),
        "tiktoken_memoized": _time_compress(history, tiktoken_count, runs),
        "tiktoken_first_count_ms": round(cold_ms, 2),
    }
    report["within_target"] = report["chars_div_4"]["median_ms"] < TARGET_MS
    for key, value in report.items():
        print(f"{key}: {value}")
    return report


if __name__ == "__main__":
    main()

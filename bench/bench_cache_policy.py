"""CPU time of the cache breakpoint policy on a 2,000-message history (target: under 5 ms).

Run: `python -m bench.bench_cache_policy`. Reports the median of N runs of `apply_cache_control`
(and of the token estimate of the same history), measured with `time.process_time`.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from agent.caching.markers import apply_cache_control
from agent.context_block import context_block
from agent.tokens import estimate_messages
from agent.types import Message

MESSAGES = 2_000
RUNS = 50
TARGET_MS = 5.0
_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "reading",
    "logs",
    "and",
    "fixing",
    "tests",
    "again",
]


def synthetic_history(n: int = MESSAGES, *, seed: int = 7) -> list[Message]:
    """A group-chat history with text turns and tool calls every few messages."""
    rng = random.Random(seed)
    messages: list[Message] = []
    for i in range(n):
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 120)))
        if i % 5 == 3:
            messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "tool_use", "id": f"t{i}", "name": "recall", "input": {"query": text[:40]}},
                    ],
                }
            )
        elif i % 5 == 4:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"t{i - 1}",
                            "content": [{"type": "text", "text": text}],
                        }
                    ],
                }
            )
        else:
            messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return messages


def _median_ms(fn: Any, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        samples.append((time.process_time() - start) * 1000)
    return statistics.median(samples)


def _blocks(message: Message) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def main(runs: int = RUNS) -> dict[str, float | int | bool]:
    history = synthetic_history()
    last = history[-1]
    context = context_block({"date": "2026-11-20 09:15 UTC", "chat": "bench"})
    history[-1] = {"role": last["role"], "content": [context, *_blocks(last)]}
    tools = [{"name": "recall", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]
    system = "You are a helpful assistant in a group chat. " * 40
    policy_ms = _median_ms(lambda: apply_cache_control(system, history, ttl="5m", tools=tools), runs)
    estimate_messages(history)  # warm the per-text cache, as a long-lived session would have
    estimate_ms = _median_ms(lambda: estimate_messages(history), runs)
    results: dict[str, float | int | bool] = {
        "messages": len(history),
        "runs": runs,
        "cache_policy_median_ms": round(policy_ms, 3),
        "cache_policy_target_ms": TARGET_MS,
        "cache_policy_within_target": policy_ms < TARGET_MS,
        "estimate_messages_warm_median_ms": round(estimate_ms, 3),
    }
    for key, value in results.items():
        print(f"{key}: {value}")
    return results


if __name__ == "__main__":
    main()

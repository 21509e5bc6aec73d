"""Builders, a deterministic token counter, a scripted summarizer and a tool-pair check for the
compressor tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.compaction.compressor import ContextCompactor
from agent.compaction.engine import CompactionConfig, EngineState, SummaryRequest, SummaryResponse
from agent.errors import SummarizerError
from agent.types import Block, Message, blocks_of, tool_result_ids
from agent.usage import Usage


def count_tokens(message: Message) -> int:
    """chars / 4 of the serialized content, plus a small per-message overhead."""
    return len(json.dumps(message["content"], ensure_ascii=False)) // 4 + 4


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def call(*calls: tuple[str, str], text: str | None = None) -> Message:
    """An assistant message calling tools: each call is (tool_use id, tool name)."""
    blocks: list[Block] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": i, "name": n, "input": {"arg": i}} for i, n in calls]
    return {"role": "assistant", "content": blocks}


def results(*items: tuple[str, str]) -> Message:
    """A user message holding tool results: each item is (tool_use id, output text)."""
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": i, "content": out} for i, out in items],
    }


def pad(label: str, tokens: int) -> str:
    """A text of roughly `tokens` tokens under `count_tokens`."""
    return (label + " ") + "x" * max(0, tokens * 4 - len(label) - 1)


@dataclass
class ScriptedSummarizer:
    """A second implementation of the Summarizer protocol: answers from a script, records every request.

    Script items are a summary text or an exception to raise; when the script runs out, `default` is used.
    """

    script: list[str | Exception] = field(default_factory=list)
    default: str | Exception = "## Goal\nShip the feature.\n## Progress\n### Done\n- wrote main.py"
    model: str = "scripted-summary-model"
    requests: list[SummaryRequest] = field(default_factory=list)

    async def __call__(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        step = self.script.pop(0) if self.script else self.default
        if isinstance(step, Exception):
            raise step
        return SummaryResponse(text=step, model=self.model, usage=Usage(input_tokens=100, output_tokens=20))


def failing(abort: bool = False, too_small: bool = False) -> SummarizerError:
    return SummarizerError("summary call failed: 500 from upstream", abort=abort, too_small=too_small)


def make(
    summarizer: ScriptedSummarizer | None = None,
    *,
    context_length: int = 200_000,
    protect_last_n: int = 20,
    target_ratio: float = 0.20,
    threshold: float = 0.50,
    enabled: bool = True,
    state: EngineState | None = None,
) -> ContextCompactor:
    return ContextCompactor(
        context_length=context_length,
        config=CompactionConfig(
            enabled=enabled, threshold=threshold, target_ratio=target_ratio, protect_last_n=protect_last_n
        ),
        summarizer=summarizer if summarizer is not None else ScriptedSummarizer(),
        count_tokens=count_tokens,
        state=state,
    )


def conversation(turns: int, *, tokens_per_message: int = 50, tools: bool = True) -> list[Message]:
    """A valid alternating history: each turn is an ask, optionally one tool round, then a reply."""
    out: list[Message] = []
    for t in range(turns):
        out.append(user(pad(f"ask {t}", tokens_per_message)))
        if tools:
            out.append(call((f"t{t}", "read_file"), text=f"reading for {t}"))
            out.append(results((f"t{t}", pad(f"output {t}", tokens_per_message))))
        out.append(assistant(pad(f"reply {t}", tokens_per_message)))
    return out


def plain(n: int) -> list[Message]:
    """`n` plain messages of ~600 tokens each, alternating from a user message."""
    out: list[Message] = []
    for i in range(n):
        out.append(user(pad(f"u{i}", 600)) if i % 2 == 0 else assistant(pad(f"a{i}", 600)))
    return out


def tool_head(n_after: int) -> list[Message]:
    """An ask and one tool round, then `n_after` messages of ~600 tokens alternating from the assistant."""
    out = [user(pad("u0", 600)), call(("t0", "ls")), results(("t0", "README.md main.py"))]
    for i in range(n_after):
        out.append(assistant(pad(f"a{i}", 600)) if i % 2 == 0 else user(pad(f"u{i}", 600)))
    return out


def summary_blocks(messages: Sequence[Message]) -> list[tuple[int, Any]]:
    """(position, text) of every compaction summary block in `messages`."""
    from agent.compaction.prompt import is_summary_block

    return [(i, b["text"]) for i, m in enumerate(messages) for b in blocks_of(m) if is_summary_block(b)]


def assert_valid_pairs(messages: Sequence[Message]) -> None:
    """Every tool result answers a call in the message before it; every call is answered in the next."""
    for i, message in enumerate(messages):
        ids = tool_result_ids(message)
        if ids:
            assert i > 0
            assert messages[i - 1]["role"] == "assistant"
            used = {b["id"] for b in blocks_of(messages[i - 1]) if b.get("type") == "tool_use"}
            assert set(ids) <= used
        if message["role"] == "assistant" and i + 1 < len(messages):
            calls = {b["id"] for b in blocks_of(message) if b.get("type") == "tool_use"}
            assert calls <= set(tool_result_ids(messages[i + 1]))

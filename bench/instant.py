"""An LLM that answers at once, in process, and notes when each request was made: for measuring the
gateway's own work (store, window, hygiene, request shaping) without any model latency."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from agent.llm import LLMRequest, LLMResponse
from agent.tokens import rough_estimate_messages
from agent.usage import Usage


@dataclass
class InstantLLM:
    """Satisfies `agent.llm.LLMClient`; `requested_at` holds the `perf_counter` of every call."""

    requested_at: list[float] = field(default_factory=list)

    async def create(self, request: LLMRequest) -> LLMResponse:
        self.requested_at.append(time.perf_counter())
        prompt = rough_estimate_messages(request.messages)
        return LLMResponse(
            content=[{"type": "text", "text": "ok"}],
            stop_reason="end_turn",
            usage=Usage(input_tokens=prompt, output_tokens=1),
            model=request.model,
        )

    async def close(self) -> None:
        return None

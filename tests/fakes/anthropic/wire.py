"""Wire shapes of the fake Anthropic API: JSON responses, error bodies and the SSE event stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.anthropic.cache import CacheUsage
from tests.fakes.anthropic.replies import new_id
from tests.fakes.anthropic.tokens import BYTES_PER_TOKEN, ModelSpec

SSE_TEXT_CHUNK = 24
"""Characters per text_delta / input_json_delta event, so clients really assemble a stream."""


def json_response(
    payload: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON response with ``content-type: application/json`` exactly and a fresh ``request-id``."""
    all_headers = {"request-id": new_id("req"), **(headers or {})}
    return web.Response(
        body=json.dumps(payload).encode("utf-8"),
        status=status,
        content_type="application/json",
        headers=all_headers,
    )


def error_response(
    status: int, error_type: str, message: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    return json_response(
        {"type": "error", "error": {"type": error_type, "message": message}}, status=status, headers=headers
    )


def usage_payload(cache: CacheUsage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": cache.input_tokens,
        "cache_creation_input_tokens": cache.cache_creation_input_tokens,
        "cache_read_input_tokens": cache.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache.cache_creation_5m,
            "ephemeral_1h_input_tokens": cache.cache_creation_1h,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def iteration_usage(kind: str, cache: CacheUsage, output_tokens: int) -> dict[str, Any]:
    """One entry of ``usage.iterations``: ``"compaction"`` or ``"message"``."""
    return {
        "type": kind,
        "input_tokens": cache.input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache.cache_read_input_tokens,
        "cache_creation_input_tokens": cache.cache_creation_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache.cache_creation_5m,
            "ephemeral_1h_input_tokens": cache.cache_creation_1h,
        },
    }


NOTHING_SAMPLED = CacheUsage(0, 0, 0, 0)


def compacted_usage(
    compaction: CacheUsage, summary_tokens: int, message: CacheUsage | None, output_tokens: int
) -> dict[str, Any]:
    """Usage of a call in which the API compacted the conversation (server-side compaction).

    The top-level fields are the message iteration's alone: the API documents that they leave out
    compaction iterations (they are the sum of the non-compaction ones). A call paused after compaction
    (``message`` None) samples no message, so they are all zero there. ``iterations`` lists the compaction
    iteration, then the message iteration; their sum is what the call bills.
    """
    sampled = message or NOTHING_SAMPLED
    output = output_tokens if message is not None else 0
    iterations = [iteration_usage("compaction", compaction, summary_tokens)]
    if message is not None:
        iterations.append(iteration_usage("message", message, output))
    return {**usage_payload(sampled, output), "iterations": iterations}


def message_payload(
    *,
    model: str,
    content: Sequence[Mapping[str, Any]],
    stop_reason: str,
    usage: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages API response; ``extra`` adds fields some responses carry (``stop_details``,
    ``input_transformations``)."""
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(usage),
        **(extra or {}),
    }


def _supported(flag: bool) -> dict[str, bool]:
    return {"supported": flag}


def model_entry(name: str, spec: ModelSpec) -> dict[str, Any]:
    """A ``/v1/models`` entry: window, output cap and the capabilities the fake models (thinking types,
    effort, context management)."""
    modern = spec.preserved_thinking
    thinking_types = {
        "adaptive": _supported(True),
        "between_tools": _supported(spec.between_tools),
        "disabled": _supported(not modern),
        "enabled": _supported(not modern),
    }
    efforts = {level: _supported(True) for level in ("low", "medium", "high", "max")}
    return {
        "type": "model",
        "id": name,
        "display_name": spec.display_name,
        "created_at": spec.created_at,
        "lifecycle": "active",
        "line": spec.line,
        "max_input_tokens": spec.context_window,
        "max_tokens": spec.max_output,
        "capabilities": {
            "batch": _supported(True),
            "citations": _supported(True),
            "code_execution": _supported(False),
            "context_management": {
                "supported": spec.compaction,
                "compact_20260112": _supported(spec.compaction),
            },
            "effort": {"supported": True, **efforts, "xhigh": _supported(True)},
            "image_input": _supported(True),
            "pdf_input": _supported(True),
            "server_tools": {
                "supported": False,
                "code_execution": _supported(False),
                "web_search": _supported(False),
            },
            "structured_outputs": _supported(True),
            "thinking": {"supported": True, "types": thinking_types},
        },
    }


def _chunks(text: str) -> list[str]:
    return [text[i : i + SSE_TEXT_CHUNK] for i in range(0, len(text), SSE_TEXT_CHUNK)] or [""]


def stream_events(message: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events that deliver ``message``: start, one start/deltas/stop per block, delta, stop."""
    usage = dict(message["usage"])
    start_usage = {k: v for k, v in usage.items() if k != "iterations"} | {"output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    **({"stop_details": None} if "stop_details" in message else {}),
                    "usage": start_usage,
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] in ("tool_use", "server_tool_use"):
            opening = {**block, "input": {}}
            pieces = [
                {"type": "input_json_delta", "partial_json": part}
                for part in _chunks(json.dumps(block["input"]))
            ]
        elif block["type"] == "thinking":
            # Empty thinking (display "omitted") streams no thinking_delta, only its signature.
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            texts = _chunks(block["thinking"]) if block["thinking"] else []
            pieces = [{"type": "thinking_delta", "thinking": part} for part in texts]
            pieces.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "compaction":
            # A compaction block is not streamed piecemeal: one delta carries the whole summary.
            opening = {"type": "compaction", "content": None}
            pieces = [{"type": "compaction_delta", "content": block["content"]}]
        elif block["type"] != "text":
            # a server tool's result arrives whole in its start event
            opening, pieces = dict(block), []
        else:
            opening = {"type": "text", "text": ""}
            pieces = []
            if "citations" in block:  # a cited span: its citations first, as the API streams them
                opening["citations"] = []
                pieces = [{"type": "citations_delta", "citation": c} for c in block["citations"]]
            pieces += [{"type": "text_delta", "text": part} for part in _chunks(block["text"])]
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": piece})
            for piece in pieces
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta_usage = {
        k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    }
    delta_usage["output_tokens"] = usage["output_tokens"]
    if "iterations" in usage:
        delta_usage["iterations"] = usage["iterations"]
    if "server_tool_use" in usage:
        delta_usage["server_tool_use"] = usage["server_tool_use"]
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": message["stop_reason"],
                    "stop_sequence": None,
                    **({"stop_details": message["stop_details"]} if "stop_details" in message else {}),
                },
                "usage": delta_usage,
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


@dataclass(frozen=True, slots=True)
class Pacing:
    """How fast a reply is generated: the wait before its first token and then tokens per second
    (0: no wait). A streamed reply spreads the time between its deltas; a plain one waits it all.
    Up-front thinking (``thinking_tokens``) is generated at the same rate before anything after it,
    whether its text is shown or omitted."""

    first_token_s: float = 0.0
    tokens_per_s: float = 0.0

    def token_seconds(self, text: str) -> float:
        if self.tokens_per_s <= 0:
            return 0.0
        return len(text.encode("utf-8")) / BYTES_PER_TOKEN / self.tokens_per_s

    def tokens_seconds(self, tokens: int) -> float:
        return tokens / self.tokens_per_s if self.tokens_per_s > 0 else 0.0

    def total_seconds(self, message: Mapping[str, Any], *, thinking_tokens: int = 0) -> float:
        texts = [str(b.get("text", "")) for b in message["content"] if b.get("type") == "text"]
        summaries = [str(b["content"] or "") for b in message["content"] if b.get("type") == "compaction"]
        writing = sum(self.token_seconds(t) for t in [*summaries, *texts])
        return self.first_token_s + self.tokens_seconds(thinking_tokens) + writing


@dataclass(frozen=True, slots=True)
class PacedAnswer:
    """When an answer's parts leave the fake, in seconds after its request arrived, as its pacing
    plans them: the whole answer, its first text (None: it has none) and its up-front thinking."""

    total_s: float
    first_text_s: float | None
    thinking_s: float


PacedEvent = tuple[str, dict[str, Any], float]
"""An SSE event's name and data, and the wait before it is written."""


def _has_text(message: Mapping[str, Any]) -> bool:
    return any(b.get("type") == "text" for b in message["content"])


def paced_events(message: Mapping[str, Any], pacing: Pacing, *, thinking_tokens: int = 0) -> list[PacedEvent]:
    """The events that deliver ``message`` with the wait before each: the first token's wait before the
    first delta, each delta's text at the token rate, and the up-front thinking (the first thinking
    block when ``thinking_tokens`` is set) taking ``thinking_tokens`` before its signature, its own
    text adding nothing (a summary of the thinking is not what took the time)."""
    thinking = [i for i, b in enumerate(message["content"]) if b["type"] == "thinking"]
    thought = thinking[0] if thinking and thinking_tokens else None
    events: list[PacedEvent] = []
    first = True
    for name, data in stream_events(message):
        wait = 0.0
        if name == "content_block_delta":
            wait = pacing.first_token_s if first else 0.0
            first = False
            delta = data["delta"]
            if data["index"] == thought:
                if delta["type"] == "signature_delta":
                    wait += pacing.tokens_seconds(thinking_tokens)
            else:
                keys = ("text", "partial_json", "content", "thinking")
                wait += pacing.token_seconds(str(next((delta[k] for k in keys if delta.get(k)), "")))
        events.append((name, data, wait))
    return events


def paced_stream(events: Sequence[PacedEvent], pacing: Pacing, *, thinking_tokens: int = 0) -> PacedAnswer:
    """The timing of a streamed answer's ``paced_events``."""
    elapsed = 0.0
    first_text: float | None = None
    for _name, data, wait in events:
        elapsed += wait
        if first_text is None and data.get("delta", {}).get("type") == "text_delta":
            first_text = elapsed
    return PacedAnswer(elapsed, first_text, pacing.tokens_seconds(thinking_tokens))


def paced_whole(message: Mapping[str, Any], pacing: Pacing, *, thinking_tokens: int = 0) -> PacedAnswer:
    """The timing of an answer sent in one piece: everything, text included, at the end."""
    total = pacing.total_seconds(message, thinking_tokens=thinking_tokens)
    return PacedAnswer(total, total if _has_text(message) else None, pacing.tokens_seconds(thinking_tokens))


Sleep = Callable[[float], Awaitable[None]]


def cut_point(events: Sequence[PacedEvent]) -> int:
    """How many of ``events`` a connection cut halfway through the answer's text lets out: up to and
    including the middle text delta (half the events when there is no text)."""
    texts = [i for i, (_, data, _) in enumerate(events) if data.get("delta", {}).get("type") == "text_delta"]
    if not texts:
        return len(events) // 2
    return texts[(len(texts) - 1) // 2] + 1


async def write_stream(
    request: web.Request, events: Sequence[PacedEvent], *, sleep: Sleep = asyncio.sleep, cut: bool = False
) -> web.StreamResponse:
    """Send ``events`` (``paced_events``) as a ``text/event-stream`` response, one write per event, each
    after its wait. With ``cut`` the connection is closed halfway through the text, without the chunked
    body's last chunk: the client reads what was sent, then "peer closed connection without sending
    complete message body"."""
    response = web.StreamResponse(
        headers={
            "content-type": "text/event-stream",
            "cache-control": "no-cache",
            "request-id": new_id("req"),
        }
    )
    await response.prepare(request)
    for name, data, wait in events[: cut_point(events)] if cut else events:
        if wait > 0:
            await sleep(wait)
        await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    if cut:
        if request.transport is not None:
            request.transport.close()  # a FIN after the data written: nothing sent is lost
        return response
    await response.write_eof()
    return response

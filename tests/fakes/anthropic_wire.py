"""Wire shapes of the fake Anthropic API: JSON responses, error bodies and the SSE event stream."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

from tests.fakes.anthropic_cache import CacheUsage
from tests.fakes.anthropic_replies import new_id

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


def message_payload(
    *, model: str, content: Sequence[Mapping[str, Any]], stop_reason: str, usage: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(usage),
    }


def _chunks(text: str) -> list[str]:
    return [text[i : i + SSE_TEXT_CHUNK] for i in range(0, len(text), SSE_TEXT_CHUNK)] or [""]


def stream_events(message: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events that deliver ``message``: start, one start/deltas/stop per block, delta, stop."""
    usage = dict(message["usage"])
    start_usage = {**usage, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {**message, "content": [], "stop_reason": None, "usage": start_usage},
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            pieces = [
                {"type": "input_json_delta", "partial_json": part}
                for part in _chunks(json.dumps(block["input"]))
            ]
        else:
            opening = {"type": "text", "text": ""}
            pieces = [{"type": "text_delta", "text": part} for part in _chunks(block["text"])]
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
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {**delta_usage, "output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


async def write_stream(request: web.Request, message: Mapping[str, Any]) -> web.StreamResponse:
    """Send ``message`` as a ``text/event-stream`` response, one write per event."""
    response = web.StreamResponse(
        headers={
            "content-type": "text/event-stream",
            "cache-control": "no-cache",
            "request-id": new_id("req"),
        }
    )
    await response.prepare(request)
    for name, data in stream_events(message):
        await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    await response.write_eof()
    return response

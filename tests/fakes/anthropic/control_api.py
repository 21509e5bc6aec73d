"""The fake Anthropic API's control endpoints under ``/_fake/``: the same controls as its methods, as JSON.

- ``POST /_fake/script``: one reply object or a list (``text``, ``tool_uses``, ``stop_reason``, ``delay``,
  ``scope``, ``thinking``, ``thinking_tokens``, ``progress``, ``thinking_only``, ``within``, and ``refusal``:
  a category or ``{"category", "explanation"}``);
- ``POST /_fake/thinking``: ``{"enforce_prefix_check": bool, "default_display": "omitted" | "summarized" |
  "updates", "high_tokens": int}`` (any of the keys; ``high_tokens``: unscripted thinking at high effort),
  answers all three;
- ``POST /_fake/faults``: ``{"kind", "times", "retry_after", "delay", "scope"}``, or ``{"clear": true}``;
- ``POST /_fake/clock``: ``{"advance": seconds}`` or ``{"set": time}``; answers ``{"now": time}``;
- ``GET /_fake/requests``: ``{"requests": [...], "total_usage": {...}}``;
- ``POST /_fake/pacing``: ``{"first_token_s", "tokens_per_s"}`` (how fast replies are generated);
- ``POST /_fake/compaction``: ``{"summary_tokens"}``, the budget of server-side compaction summaries (a
  custom summarizer is a callable, so it exists only in-process);
- ``POST /_fake/reset``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.anthropic.replies import Refusal
from tests.fakes.anthropic.thinking_rules import DISPLAYS
from tests.fakes.anthropic.wire import Pacing

if TYPE_CHECKING:
    from tests.fakes.anthropic.server import FakeAnthropic


def _bad(message: str) -> web.Response:
    return web.json_response({"error": message}, status=400)


def _refusal(value: Any) -> Refusal | str | None:
    if isinstance(value, dict):
        return Refusal(value.get("category"), value.get("explanation"))
    return None if value is None else str(value)


def add_control_routes(app: web.Application, fake: FakeAnthropic) -> None:
    async def body_of(request: web.Request) -> Any:
        return json.loads(await request.read() or b"{}")

    async def script(request: web.Request) -> web.Response:
        payload = await body_of(request)
        replies = payload if isinstance(payload, list) else [payload]
        try:
            for reply in replies:
                fake.script_reply(
                    reply.get("text"),
                    tool_uses=reply.get("tool_uses"),
                    stop_reason=reply.get("stop_reason"),
                    delay=float(reply.get("delay", 0.0)),
                    scope=reply.get("scope", "reply"),
                    thinking=reply.get("thinking"),
                    thinking_tokens=reply.get("thinking_tokens"),
                    progress=reply.get("progress"),
                    refusal=_refusal(reply.get("refusal")),
                    thinking_only=bool(reply.get("thinking_only", False)),
                    within=reply.get("within"),
                )
        except ValueError as exc:
            return _bad(str(exc))
        return web.json_response({"queued": len(replies)})

    async def faults(request: web.Request) -> web.Response:
        payload = await body_of(request)
        if payload.get("clear"):
            fake.clear_faults()
            return web.json_response({"cleared": True})
        retry_after = payload.get("retry_after")
        try:
            fake.script_fault(
                payload.get("kind"),
                times=int(payload.get("times", 1)),
                retry_after=None if retry_after is None else float(retry_after),
                delay=float(payload.get("delay", 10.0)),
                scope=payload.get("scope", "any"),
            )
        except ValueError as exc:
            return _bad(str(exc))
        return web.json_response({"queued": 1})

    async def clock(request: web.Request) -> web.Response:
        payload = await body_of(request)
        if "set" in payload:
            fake.set_time(float(payload["set"]))
        elif "advance" in payload:
            fake.advance(float(payload["advance"]))
        return web.json_response({"now": fake.now()})

    async def requests(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "requests": [record.to_json() for record in fake.requests],
                "total_usage": asdict(fake.total_usage()),
            }
        )

    async def pacing(request: web.Request) -> web.Response:
        payload = await body_of(request)
        fake.pacing = Pacing(
            first_token_s=float(payload.get("first_token_s", 0.0)),
            tokens_per_s=float(payload.get("tokens_per_s", 0.0)),
        )
        return web.json_response(asdict(fake.pacing))

    async def compaction(request: web.Request) -> web.Response:
        payload = await body_of(request)
        tokens = payload.get("summary_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
            return _bad("summary_tokens must be a positive integer")
        fake.compaction_summary_tokens = tokens
        return web.json_response({"summary_tokens": tokens})

    async def thinking(request: web.Request) -> web.Response:
        payload = await body_of(request)
        display = payload.get("default_display", fake.default_display)
        if display not in DISPLAYS:
            return _bad(f"default_display must be one of {list(DISPLAYS)}")
        high = payload.get("high_tokens", fake.thinking_volume.high_tokens)
        if not isinstance(high, int) or isinstance(high, bool) or high < 1:
            return _bad("high_tokens must be a positive integer")
        fake.default_display = display
        fake.enforce_prefix_check = bool(payload.get("enforce_prefix_check", fake.enforce_prefix_check))
        fake.thinking_volume = replace(fake.thinking_volume, high_tokens=high)
        return web.json_response(
            {
                "enforce_prefix_check": fake.enforce_prefix_check,
                "default_display": fake.default_display,
                "high_tokens": fake.thinking_volume.high_tokens,
            }
        )

    async def reset(request: web.Request) -> web.Response:
        fake.reset()
        return web.json_response({"reset": True})

    app.router.add_post("/_fake/script", script)
    app.router.add_post("/_fake/faults", faults)
    app.router.add_post("/_fake/clock", clock)
    app.router.add_get("/_fake/requests", requests)
    app.router.add_post("/_fake/pacing", pacing)
    app.router.add_post("/_fake/compaction", compaction)
    app.router.add_post("/_fake/thinking", thinking)
    app.router.add_post("/_fake/reset", reset)

"""A protocol-level fake of the Anthropic Messages API on 127.0.0.1, for tests and benchmarks.

It validates requests as the real API does, answers scripted replies, tool calls and faults (else a
deterministic echo or structured summary), and reports usage from a prefix-cache model on a controllable
clock; server-side compaction (beta ``compact-2026-01-12``) as ``compaction`` describes; the server's web
search and fetch (a ``search:`` / ``deep search:`` / ``fetch:`` message, when the request offers them) as
``web`` describes. Use it
in-process (``async with FakeAnthropic() as fake``) or as a process (``python -m
tests.fakes.anthropic --port 0`` prints ``LISTENING <url>``; control under ``/_fake/``).

Models with preserved thinking (the 5.5 family, Fable 5.1) behave as the current API: adaptive thinking by
default (every answer starts with a signed ``thinking`` block), the 400s of ``thinking_rules``,
signatures bound to the prefix (``binding``), progress updates, refusals and thinking-only stops
(``thinking_reply``). Scripting, beyond text and tool calls::

    fake.script_reply("answer", thinking="summarized reasoning", thinking_tokens=40)
    fake.script_reply(tool_uses=[...], progress="Let me look that up in our history.")
    fake.script_reply("partial", refusal="cyber")           # or refusal=Refusal(category, explanation)
    fake.script_reply(thinking_only=True)                  # thinking took the whole max_tokens
    fake.script_reply("long", thinking_tokens=900)         # max_tokens <= 900: thinking-only, stays queued
    fake.enforce_prefix_check = False                      # an account created before 2026-08-31
    fake.default_display = "summarized"                    # what an absent ``display`` means
    fake.thinking_volume = ThinkingVolume(high_tokens=300)  # unscripted thinking per effort level
    fake.script_reply(tool_uses=[...], within="chat 7")    # only for the chat whose first message has it

Unscripted thinking follows the request's ``output_config.effort`` (the model's default when unset), as
``effort`` describes with its assumptions; with ``pacing`` it is written at the token rate before
the answer's first text. Each record's ``thinking_checks`` lists the thinking blocks the request sent back
and what became of them; its ``answer`` is the message the call answered; ``paced`` says when its answer's
parts left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import socket
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from aiohttp import web

from agent.usage import Usage
from tests.fakes.anthropic.binding import check_bindings, sign_content
from tests.fakes.anthropic.cache import (
    DEFAULT_LOOKBACK,
    CacheUsage,
    PrefixBlock,
    PrefixCache,
    serialize_prefix,
)
from tests.fakes.anthropic.compaction import (
    MIN_TRIGGER,
    CompactEdit,
    Summarizer,
    beta_flags,
    compaction_edit,
    effective_body,
    run_compaction,
)
from tests.fakes.anthropic.control_api import add_control_routes
from tests.fakes.anthropic.diagnostics import Diagnostics
from tests.fakes.anthropic.effort import ThinkingVolume
from tests.fakes.anthropic.media import MediaError, check_request_size
from tests.fakes.anthropic.replies import (
    FAULT_KINDS,
    Fault,
    FaultKind,
    Refusal,
    Scope,
    ScriptedReply,
    SummaryDetector,
    echo_reply,
    is_summary_request,
    newest_user_text,
    scope_matches,
    summary_reply,
)
from tests.fakes.anthropic.thinking_reply import Reply, thinking_reply
from tests.fakes.anthropic.thinking_rules import Display, ThinkingConfig, thinking_config
from tests.fakes.anthropic.tokens import ModelSpec, build_models, output_tokens, truncate_to_tokens
from tests.fakes.anthropic.validation import (
    InvalidRequest,
    exceeds_context,
    prompt_too_long,
    validate_request,
)
from tests.fakes.anthropic.web import WebLookups
from tests.fakes.anthropic.wire import (
    PacedAnswer,
    Pacing,
    compacted_usage,
    error_response,
    json_response,
    message_payload,
    model_entry,
    paced_events,
    paced_stream,
    paced_whole,
    usage_payload,
    write_stream,
)
from tests.fakes.local_server import LocalServer

logger = logging.getLogger(__name__)
SECRET_HEADERS = frozenset({"x-api-key", "authorization"})


@dataclass(slots=True)
class RecordedRequest:
    """One /v1/messages call; ``status`` is None while in flight or when no answer reached the client."""

    body: Any
    headers: dict[str, str]
    kind: str
    """"reply", "summary", "warm" (`max_tokens: 0`: the prompt is cached, nothing generated), or "invalid"
    for a body that failed validation before it could be classified."""
    at: float
    usage: dict[str, Any] | None = None
    """The response's usage; when the call compacted, its top-level fields are the message iteration's
    and ``usage["iterations"]`` lists both iterations."""
    status: int | None = None
    compacted: bool = False
    """Whether the API compacted the conversation in this call (server-side compaction)."""
    thinking_checks: list[dict[str, str]] = field(default_factory=list)
    """The thinking blocks the request sent back (models with preserved thinking): ``path``, ``outcome``
    ("kept", "dropped", "allowed": failed but shown, "rejected": the request's 400) and ``reason``."""
    answer: Any = None
    """The message answered (its signed content and stop reason), kept with the body: what a later request
    may send back."""
    paced: PacedAnswer | None = None
    """When a reply's parts left, in seconds after ``at`` (its up-front thinking, first text and end),
    as the fake's pacing planned them; None for other calls."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def billed(self) -> Usage:
        """What the call costs: the sum of its iterations when it has them, else its usage (zero when
        it has none)."""
        if self.usage is None:
            return Usage()
        parts = self.usage.get("iterations") or [self.usage]
        server = self.usage.get("server_tool_use") or {}
        lookups = Usage(
            web_search_requests=int(server.get("web_search_requests", 0)),
            web_fetch_requests=int(server.get("web_fetch_requests", 0)),
        )
        return lookups + sum(
            (
                Usage(
                    part["input_tokens"],
                    part["output_tokens"],
                    part["cache_creation_input_tokens"],
                    part["cache_read_input_tokens"],
                    (part.get("cache_creation") or {}).get("ephemeral_1h_input_tokens"),
                )
                for part in parts
            ),
            Usage(),
        )


class FakeAnthropic(LocalServer):
    """The fake server; every control is a method here and an endpoint under ``/_fake/``."""

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        host: str = "127.0.0.1",
        port: int = 0,
        models: Mapping[str, ModelSpec] | None = None,
        context_windows: Mapping[str, int] | None = None,
        min_cacheable: Mapping[str, int] | None = None,
        max_output: Mapping[str, int] | None = None,
        strict: bool = True,
        clock: Callable[[], float] = time.monotonic,
        reply_delay: float = 0.0,
        summary_delay: float = 0.0,
        summary_detector: SummaryDetector = is_summary_request,
        echo_limit: int = 400,
        cache_lookback: int = DEFAULT_LOOKBACK,
        keep_bodies: bool = True,
        pacing: Pacing | None = None,
        thinking_volume: ThinkingVolume | None = None,
    ) -> None:
        """``keep_bodies=False`` records requests without their bodies (long benchmark replays);
        ``pacing`` sets how fast replies are generated (streamed deltas or the wait for a plain answer);
        ``thinking_volume`` how much an unscripted answer thinks at each effort (``effort``)."""
        super().__init__(host=host, port=port)
        self.api_key = api_key
        self.models = build_models(
            models, context_windows=context_windows, min_cacheable=min_cacheable, max_output=max_output
        )
        self.strict = strict
        self.reply_delay = reply_delay
        self.summary_delay = summary_delay
        self.summary_detector = summary_detector
        self.echo_limit = echo_limit
        self.keep_bodies = keep_bodies
        self.pacing = pacing or Pacing()
        self.thinking_volume = thinking_volume or ThinkingVolume()
        """Unscripted up-front thinking per effort level (models with adaptive thinking)."""
        self.compaction_summary_tokens = 2000
        """Budget of the default server-side compaction summary."""
        self.compaction_min_trigger = MIN_TRIGGER
        """The least compaction trigger accepted (the API's 50,000; lowered only by benchmarks that
        compare the engines on small windows)."""
        self.compaction_summarizer: Summarizer | None = None
        """Writes server-side compaction summaries instead of the default (gets the effective request)."""
        self.enforce_prefix_check = True
        """The prefix check on sent-back thinking blocks is enforced (accounts created since 2026-08-31)."""
        self.default_display: Display = "omitted"
        """What an absent ``thinking.display`` means on models with preserved thinking."""
        self.thinking_secret = secrets.token_bytes(32)
        """Signs thinking blocks (one account's key: another fake's blocks fail the prefix check)."""
        self.cache = PrefixCache(lookback=cache_lookback)
        self.diagnostics = Diagnostics()
        self.requests: list[RecordedRequest] = []
        self.count_tokens_calls = 0
        self._clock = clock
        self._offset = 0.0
        self._script: list[ScriptedReply] = []
        self._faults: list[Fault] = []
        self.web = WebLookups()
        """The server's web tools: what they issued, and the next lookup's error (``web``)."""

    # ---- lifecycle -------------------------------------------------------------------------------

    backlog = 4096

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/v1/models", self._list_models)
        app.router.add_get("/v1/models/{model}", self._get_model)
        add_control_routes(app, self)
        return app

    async def start(self) -> str:
        await super().start()
        logger.info("fake Anthropic API listening on %s", self.base_url)
        return self.base_url

    # ---- controls --------------------------------------------------------------------------------

    def now(self) -> float:
        """Simulated time: the injected clock plus everything ``advance``/``set_time`` added."""
        return self._clock() + self._offset

    def advance(self, seconds: float) -> float:
        self._offset += seconds
        return self.now()

    def set_time(self, when: float) -> float:
        self._offset = when - self._clock()
        return self.now()

    def script_reply(
        self,
        text: str | None = None,
        *,
        tool_uses: list[dict[str, Any]] | None = None,
        stop_reason: str | None = None,
        delay: float = 0.0,
        scope: Scope = "reply",
        thinking: str | None = None,
        thinking_tokens: int | None = None,
        progress: str | None = None,
        refusal: Refusal | str | None = None,
        thinking_only: bool = False,
        within: str | None = None,
        hold: asyncio.Event | None = None,
    ) -> None:
        """Queue one answer for the next matching call (``scope``: "reply", "summary" or "any"; with
        ``within``, only a call whose first message contains that text: chats at once get their own).

        ``thinking``/``thinking_tokens``/``progress``/``thinking_only`` shape the thinking of models with
        preserved thinking (``thinking_reply``); ``refusal`` (a category or a ``Refusal``) makes
        the answer a refusal on any model, ``text`` being its partial output; with ``hold`` the answer
        waits until that event is set (rather than a delay that races the work a test waits for)."""
        if isinstance(refusal, str):
            refusal = Refusal(refusal)
        if not text and not tool_uses and refusal is None and not thinking_only:
            raise ValueError("a scripted reply needs text, tool_uses, a refusal or thinking_only")
        if thinking_tokens is not None and thinking_tokens < 1:
            raise ValueError("thinking_tokens must be positive")
        self._script.append(
            ScriptedReply(
                text,
                list(tool_uses or []),
                stop_reason,
                delay,
                scope,
                thinking=thinking,
                thinking_tokens=thinking_tokens,
                progress=progress,
                refusal=refusal,
                thinking_only=thinking_only,
                within=within,
                hold=hold,
            )
        )

    def script_schedule_message(
        self, at: str, text: str, *, repeat: str | None = None, kind: str | None = None, then: str = "Done."
    ) -> None:
        """The model schedules a message (`schedule_message` with these inputs), then answers `then`."""
        tool_input: dict[str, Any] = {"at": at, "text": text}
        if repeat is not None:
            tool_input["repeat"] = repeat
        if kind is not None:
            tool_input["kind"] = kind
        self.script_reply(tool_uses=[{"name": "schedule_message", "input": tool_input}])
        self.script_reply(then)

    def script_fault(
        self,
        kind: FaultKind,
        *,
        times: int = 1,
        retry_after: float | None = None,
        delay: float = 10.0,
        scope: Scope = "any",
    ) -> None:
        """Fail the next ``times`` matching calls (-1: until ``clear_faults``); faults win over replies."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {sorted(FAULT_KINDS)}")
        self._faults.append(Fault(kind, times, retry_after, delay, scope))

    def clear_faults(self) -> None:
        self._faults.clear()

    def reset(self) -> None:
        """Forget scripts, faults, recorded requests, the cache and the clock offset."""
        self._script.clear()
        self._faults.clear()
        self.requests.clear()
        self.cache.clear()
        self.count_tokens_calls = 0
        self._offset = 0.0

    def total_usage(self) -> Usage:
        """Everything billed by delivered calls, compaction iterations included."""
        total = Usage()
        for record in self.requests:
            if record.status == 200:
                total += record.billed()
        return total

    # ---- handlers --------------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        key = request.headers.get("x-api-key")
        bearer = request.headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            key = key or bearer[7:].strip()
        return key == self.api_key

    async def _read_json(self, request: web.Request) -> Any:
        raw = await request.read()
        try:
            check_request_size(len(raw))
        except MediaError as exc:
            raise InvalidRequest(exc.message, status=exc.status, error_type=exc.error_type) from None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise InvalidRequest(f"There was an issue with your request body: {exc}") from exc

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in SECRET_HEADERS}
        record = RecordedRequest(body=None, headers=headers, kind="invalid", at=self.now())
        self.requests.append(record)
        response = await self._answer(request, record)
        if not self.keep_bodies:
            record.body = record.answer = None
        delivered = request.transport is not None and not request.transport.is_closing()
        record.status = response.status if delivered else None
        return response

    async def _answer(self, request: web.Request, record: RecordedRequest) -> web.StreamResponse:
        if not self._authorized(request):
            return error_response(401, "authentication_error", "invalid x-api-key")
        try:
            body = record.body = await self._read_json(request)
            spec = validate_request(body, self.models, strict=self.strict)
            betas = beta_flags(request.headers.getall("anthropic-beta", []))
            edit = compaction_edit(body, betas, spec, min_trigger=self.compaction_min_trigger)
            config = thinking_config(body, betas, spec, default_display=self.default_display)
            self.web.check(body)
        except InvalidRequest as exc:
            return error_response(exc.status, exc.error_type, exc.message)
        extra: dict[str, Any] = {}
        seen: Mapping[str, Any] = body
        if config is not None:
            binding = check_bindings(
                body,
                spec,
                self.models,
                secret=self.thinking_secret,
                enforce=self.enforce_prefix_check,
                drop_block=config.drop_block,
            )
            record.thinking_checks = binding.checks
            if binding.error is not None:
                return error_response(400, binding.error.error_type, binding.error.message)
            seen = binding.without_dropped(body)
            extra["stop_details"] = None
            if config.report:
                extra["input_transformations"] = binding.transformations
        if int(body["max_tokens"]) == 0:
            kind = record.kind = "warm"
        else:
            kind = record.kind = "summary" if self.summary_detector(body) else "reply"
        effective = effective_body(seen)
        blocks = serialize_prefix(effective)
        prompt = sum(block.tokens for block in blocks)
        fault = self._take_fault(kind)
        cut = fault is not None and fault.kind == "cut" and kind == "reply" and bool(body.get("stream"))
        if fault is not None and not cut:
            failed = await self._fault_response(request, fault, prompt, spec)
            if failed is not None:
                return failed
        if prompt > spec.context_window:
            error = prompt_too_long(prompt, spec)
            return error_response(error.status, error.error_type, error.message)
        if edit is not None and prompt > edit.trigger:
            # No prompt + max_tokens check: the reply is sampled from the compacted context, far smaller.
            record.compacted = True
            reply, usage = self._compacted_answer(effective, kind, edit, spec, config)
        else:
            if prompt + int(body["max_tokens"]) > spec.context_window:
                error = exceeds_context(prompt, int(body["max_tokens"]), spec)
                return error_response(error.status, error.error_type, error.message)
            cache = self._charge(blocks, spec)
            lookup = self.web.answer(effective, newest_user_text(effective)) if kind == "reply" else None
            if lookup is not None:
                # the server ran its web tools inside the call: their results are billed as input
                reply = Reply(lookup.content, lookup.stop_reason, lookup.output_tokens)
                usage = usage_payload(cache, reply.output_tokens)
                usage["input_tokens"] += lookup.input_tokens
                usage["server_tool_use"] = {
                    "web_search_requests": lookup.searches,
                    "web_fetch_requests": lookup.fetches,
                }
            else:
                reply = self._reply_for(effective, kind, config)
                # a pre-warm generates nothing and is billed no output
                usage = usage_payload(cache, reply.output_tokens if kind != "warm" else 0)
        if reply.hold is not None:
            await reply.hold.wait()
        await self._pause(reply.delay + (self.summary_delay if kind == "summary" else self.reply_delay))
        record.usage = usage
        content = reply.content
        if config is not None:
            content = sign_content(self.thinking_secret, spec, body, content)
        if reply.stop_details is not None:
            extra["stop_details"] = reply.stop_details
        message = message_payload(
            model=body["model"], content=content, stop_reason=reply.stop_reason, usage=usage, extra=extra
        )
        record.answer = message
        diagnostics = self.diagnostics.answer(effective, message["id"])
        if "diagnostics" in body:
            message["diagnostics"] = diagnostics
        thought = reply.thinking_tokens
        if kind == "reply" and body.get("stream"):
            events = paced_events(message, self.pacing, thinking_tokens=thought)
            record.paced = paced_stream(events, self.pacing, thinking_tokens=thought)
            return await write_stream(request, events, sleep=self._pause, cut=cut)
        if kind == "reply":
            record.paced = paced_whole(message, self.pacing, thinking_tokens=thought)
            await self._pause(record.paced.total_s)
        if body.get("stream"):
            return await write_stream(request, paced_events(message, Pacing()))
        return json_response(message)

    def _charge(self, blocks: list[PrefixBlock], spec: ModelSpec) -> CacheUsage:
        """Account one sampled prompt against the prefix cache."""
        return self.cache.process(
            (self.api_key, spec.id), blocks, min_cacheable=spec.min_cacheable, now=self.now()
        )

    def _compacted_answer(
        self,
        effective: Mapping[str, Any],
        kind: str,
        edit: CompactEdit,
        spec: ModelSpec,
        config: ThinkingConfig | None,
    ) -> tuple[Reply, dict[str, Any]]:
        """Server-side compaction: the compaction iteration, then (unless paused) the message iteration
        from the compacted context. The answer (led by the compaction block) and its usage."""
        run = run_compaction(
            effective,
            edit,
            charge=lambda body: self._charge(serialize_prefix(body), spec),
            summarizer=self.compaction_summarizer,
            summary_tokens=self.compaction_summary_tokens,
        )
        if run.continuation is None:
            paused = Reply([run.block], "compaction", 0)
            return paused, compacted_usage(run.usage, run.output_tokens, None, 0)
        cache = self._charge(serialize_prefix(run.continuation), spec)
        reply = self._reply_for(effective, kind, config)
        usage = compacted_usage(run.usage, run.output_tokens, cache, reply.output_tokens)
        reply.content = [run.block, *reply.content]
        return reply, usage

    def _take_fault(self, kind: str) -> Fault | None:
        for fault in self._faults:
            if fault.applies_to(kind):
                if fault.times > 0:
                    fault.times -= 1
                return fault
        return None

    async def _fault_response(
        self, request: web.Request, fault: Fault, prompt: int, spec: ModelSpec
    ) -> web.StreamResponse | None:
        """The error a fault produces, or None when the call should go on (a timeout after its delay)."""
        retry = {"retry-after": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
        if fault.kind == "rate_limit":
            retry = retry or {"retry-after": "1"}
            message = "Number of request tokens has exceeded your per-minute rate limit"
            return error_response(429, "rate_limit_error", message, headers=retry)
        if fault.kind == "overloaded":
            return error_response(529, "overloaded_error", "Overloaded", headers=retry)
        if fault.kind == "server_error":
            return error_response(500, "api_error", "Internal server error", headers=retry)
        if fault.kind == "overflow":
            error = prompt_too_long(max(prompt, spec.context_window + 1), spec)
            return error_response(error.status, error.error_type, error.message)
        if fault.kind == "auth":
            return error_response(401, "authentication_error", "invalid x-api-key")
        if fault.kind in ("reset", "cut"):  # a plain call cut before its answer: a dropped connection
            _abort_connection(request)
            return web.Response(status=500)  # never delivered: aiohttp drops it on the closed transport
        await self._pause(fault.delay)
        return None

    def _reply_for(self, body: Mapping[str, Any], kind: str, config: ThinkingConfig | None) -> Reply:
        """The answer: the first matching scripted reply, else the default (an echo or a summary)."""
        max_tokens = int(body["max_tokens"])
        if max_tokens == 0:  # a pre-warm: the prompt was charged against the cache, nothing is sampled
            return Reply([], "max_tokens", 0)
        index, scripted = next(
            ((i, s) for i, s in enumerate(self._script) if scope_matches(s.scope, kind) and s.fits(body)),
            (-1, None),
        )
        if scripted is not None and scripted.refusal is not None:
            del self._script[index]
            partial = [{"type": "text", "text": scripted.text}] if scripted.text else []
            details = scripted.refusal.stop_details()
            return Reply(
                partial, "refusal", output_tokens(partial), scripted.delay, details, hold=scripted.hold
            )
        if config is not None:
            default = "" if scripted is not None else self._default_text(body, kind, max_tokens)
            question = newest_user_text(body)
            reply = thinking_reply(
                scripted,
                default_text=default,
                question=question,
                config=config,
                max_tokens=max_tokens,
                volume=self.thinking_volume,
            )
            if scripted is not None and not reply.keep_script:
                del self._script[index]
            return reply
        if scripted is not None:
            del self._script[index]
            content, stop_reason = scripted.content(), scripted.resolved_stop_reason()
            if output_tokens(content) > max_tokens:
                truncated = [{"type": "text", "text": truncate_to_tokens(scripted.text or "", max_tokens)}]
                return Reply(truncated, "max_tokens", output_tokens(truncated))
            return Reply(content, stop_reason, output_tokens(content), scripted.delay, hold=scripted.hold)
        content = [{"type": "text", "text": self._default_text(body, kind, max_tokens)}]
        return Reply(content, "end_turn", output_tokens(content))

    def _default_text(self, body: Mapping[str, Any], kind: str, max_tokens: int) -> str:
        if kind == "summary":
            return summary_reply(body, max_tokens=max_tokens)
        return truncate_to_tokens(echo_reply(body, limit=self.echo_limit), max_tokens)

    async def _pause(self, seconds: float) -> None:
        """Sleep, but wake at once when the server closes so shutdown never waits on a held request."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), seconds)

    async def _count_tokens(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return error_response(401, "authentication_error", "invalid x-api-key")
        try:
            body = await self._read_json(request)
            validate_request(body, self.models, strict=self.strict, count_tokens=True)
        except InvalidRequest as exc:
            return error_response(exc.status, exc.error_type, exc.message)
        self.count_tokens_calls += 1
        return json_response({"input_tokens": sum(block.tokens for block in serialize_prefix(body))})

    def _model_entry(self, name: str) -> dict[str, Any]:
        return model_entry(name, self.models[name])

    async def _list_models(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return error_response(401, "authentication_error", "invalid x-api-key")
        data = [self._model_entry(name) for name in self.models]
        return json_response(
            {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
        )

    async def _get_model(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return error_response(401, "authentication_error", "invalid x-api-key")
        name = request.match_info["model"]
        if name not in self.models:
            return error_response(404, "not_found_error", f"model: {name}")
        return json_response(self._model_entry(name))


def _abort_connection(request: web.Request) -> None:
    """Close the TCP connection with a RST and no HTTP response, as a dropped connection looks to a client."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()

"""The model seam: `LLMClient` (what the loop and summarizer call) and its Anthropic implementation.

`AnthropicClient` lets the SDK retry 408/409/429/5xx and connection failures with its own backoff,
jitter and retry-after handling, and bounds the whole call (every attempt and every wait) by a
total time budget. SDK exceptions are translated into `agent.errors` here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anthropic
import httpx2
from anthropic import APIRequest, AsyncAPIResponse, AsyncCallNext, Middleware

from agent.errors import (
    ContextOverflowError,
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMNotFoundError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMServerError,
    LLMStreamCutError,
    LLMUnavailableError,
    ThinkingBindingError,
)
from agent.messages import compaction_on_wire, is_blank_text
from agent.server_tools import lookup_status
from agent.streaming import TextSink
from agent.thinking import Unbound, stamp, unbind
from agent.types import Block, Message
from agent.usage import Usage

logger = logging.getLogger(__name__)

# The SDK's backoff without retry-after: 0.5 s x 2^n, capped at 8 s, times a jitter in (0.75, 1].
_SDK_INITIAL_DELAY_S = 0.5
_SDK_MAX_DELAY_S = 8.0

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("llm_deadline", default=None)


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One Messages API call, already shaped (cache markers, if any, are inside the blocks)."""

    model: str
    system: Sequence[Block]
    messages: Sequence[Message]
    max_tokens: int
    tools: Sequence[dict[str, Any]] = ()
    automatic_cache: Mapping[str, str] | None = None
    """Sent as the top-level `cache_control`: the API's automatic caching (it marks the last cacheable
    block itself)."""
    diagnose: bool = False
    """Ask for cache diagnostics: the response says why the prefix of `previous_message_id`'s request
    could not be reused."""
    previous_message_id: str | None = None
    context_management: Mapping[str, Any] | None = None
    """The API's context management edits (server-side compaction), sent with `betas`."""
    betas: tuple[str, ...] = ()
    """Beta headers the request needs; a request with any goes through the SDK's beta namespace."""
    thinking: Mapping[str, Any] | None = None
    """The `thinking` parameter (None: the model's default, adaptive thinking on the 5.5 family)."""
    output_config: Mapping[str, Any] | None = None
    """`output_config`, e.g. `{"effort": "medium"}`."""
    prompt_estimate: int | None = None
    """The builder's estimate of the system, tools and messages (`agent.tokens`, uncalibrated), when it
    counted them; not sent. What the spending caps reserve for is computed from it."""
    # No temperature: the pinned SDK (API version 2026-10-21) no longer accepts one on messages.create.


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """The model's answer as plain dicts, plus what the caller needs to account for the call."""

    content: list[Block]
    stop_reason: str | None
    usage: Usage
    model: str
    latency_s: float = 0.0
    request_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    message_id: str | None = None
    cache_miss_reason: str | None = None
    """What the API's cache diagnostics name as the divergence from the previous request, if any."""
    cache_missed_tokens: int = 0
    compaction_usage: Usage | None = None
    """When the API compacted the conversation in this call (server-side compaction): what its
    summarizing iteration used, over the prompt as sent. `usage` is then the reply's own iteration,
    over the compacted context (the API reports the two separately and bills both)."""
    stop_details: Mapping[str, Any] | None = None
    """What the API says about the stop (a refusal's `category` and `explanation`)."""
    thinking_left_out: int = 0
    """Thinking blocks this client left out of the request because their prefix changed (the normal
    path after an edit of the history, `agent.thinking.unbind`)."""
    thinking_dropped_by_api: int = 0
    """Thinking blocks the API dropped (`input_transformations`) when the request was retried with
    `drop_block` after the prefix check refused it: a binding this client got wrong."""

    @property
    def refusal_category(self) -> str | None:
        """The refusal's category (`"unspecified"` when the API names none); None unless refused."""
        if self.stop_reason != "refusal":
            return None
        category = (self.stop_details or {}).get("category")
        return str(category) if category else "unspecified"

    @property
    def text(self) -> str:
        """All text blocks joined (the human-readable reply)."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list[Block]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    def as_message(self) -> Message:
        """The answer as it goes into the history: without blank text blocks, which the API would refuse
        when the history is sent back (and a stored row is read back without them too)."""
        return {"role": "assistant", "content": [b for b in self.content if not is_blank_text(b)]}


class LLMClient(Protocol):
    """Anything that can answer a Messages API request; raises `agent.errors.LLMError` subclasses."""

    async def create(self, request: LLMRequest) -> LLMResponse: ...


async def ask(
    llm: LLMClient,
    request: LLMRequest,
    on_text: TextSink | None = None,
    on_progress: TextSink | None = None,
) -> LLMResponse:
    """One call: streamed to `on_text` (and the progress the model writes between tool calls to
    `on_progress`) when there is a sink and the client streams, else a plain call."""
    stream = getattr(llm, "stream", None)
    if on_text is None or stream is None:
        return await llm.create(request)
    response: LLMResponse = await stream(request, on_text, on_progress)
    return response


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's requested wait (`retry-after-ms`, `retry-after` seconds or HTTP date), if any."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        return max(0.0, float(email.utils.mktime_tz(parsed) - time.time()))


_OVERFLOW_MESSAGES = ("prompt is too long", "exceed context limit")
_BINDING_MESSAGE = "bound to a different conversation"

BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The beta that lets a request ask for `thinking.block_binding` (the safety net below)."""


def _is_prompt_too_long(status: int, error_type: str | None, message: str | None) -> bool:
    # The API reports an over-long prompt as a plain invalid_request_error; no distinct type or
    # error code exists, so the documented messages ("prompt is too long: N tokens > M maximum", and
    # "input length and `max_tokens` exceed context limit: N + M > W" when only the output budget does
    # not fit) are the only signal. This is the single place in the project where error text is read.
    if status == 413 or error_type == "request_too_large":
        return True
    text = message or ""
    return (
        status == 400 and error_type == "invalid_request_error" and any(m in text for m in _OVERFLOW_MESSAGES)
    )


def _is_binding_refusal(status: int, error_type: str | None, message: str | None) -> bool:
    # The prefix check's refusal is a plain invalid_request_error too; its documented text is the only
    # signal (read here, next to the overflow texts).
    return status == 400 and error_type == "invalid_request_error" and _BINDING_MESSAGE in (message or "")


def translate_status(
    status: int, error_type: str | None, message: str | None, headers: Mapping[str, str]
) -> LLMError:
    """Map an API error response (after retries) onto the agent's error tree."""
    text = f"Anthropic API {status} {error_type or ''}: {message or ''}".strip()
    if status in (401, 403) or error_type in ("authentication_error", "permission_error"):
        return LLMAuthError(text, status_code=status)
    if status == 429:
        return LLMRateLimitError(text, status_code=status, retry_after=retry_after_seconds(headers))
    if status == 529 or error_type == "overloaded_error":
        return LLMOverloadedError(text, status_code=status)
    if _is_prompt_too_long(status, error_type, message):
        return ContextOverflowError(text, status_code=status)
    if _is_binding_refusal(status, error_type, message):
        return ThinkingBindingError(text, status_code=status)
    if status >= 500:
        return LLMServerError(text, status_code=status)
    if status == 404 or error_type == "not_found_error":
        return LLMNotFoundError(text, status_code=status)
    return LLMBadRequestError(text, status_code=status)


def translate_exception(exc: anthropic.AnthropicError) -> LLMError:
    """Map an SDK exception onto the agent's error tree."""
    if isinstance(exc, anthropic.APIStatusError):
        return translate_status(exc.status_code, exc.type, exc.api_message, exc.response.headers)
    if isinstance(exc, anthropic.APIConnectionError):  # includes APITimeoutError
        return LLMUnavailableError(f"Anthropic API unreachable: {exc}")
    return LLMError(f"Anthropic SDK error: {type(exc).__name__}: {exc}")


def _sdk_would_retry(response: Any) -> bool:
    hint = response.headers.get("x-should-retry")
    if hint is not None:
        return bool(hint == "true")
    status = int(response.status_code)
    return status in (408, 409, 429) or status >= 500


class _BudgetGuard(Middleware):
    """Runs once per SDK attempt: caps the attempt's timeout to the remaining budget and stops the
    SDK's retries when the wait it is about to make would overrun the budget."""

    def __init__(self, *, max_retries: int, attempt_timeout_s: float) -> None:
        self._max_retries = max_retries
        self._attempt_timeout_s = attempt_timeout_s

    async def handle_async(self, request: APIRequest, call_next: AsyncCallNext) -> AsyncAPIResponse[Any]:
        deadline = _DEADLINE.get()
        if deadline is None:
            return await call_next(request)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LLMUnavailableError("Anthropic API: time budget spent before the next attempt")
        request = request.copy(timeout=min(self._attempt_timeout_s, remaining))
        response = await call_next(request)
        http = response.http_response
        if http.is_success or request.retries_taken >= self._max_retries or not _sdk_would_retry(http):
            return response
        wait = retry_after_seconds(http.headers)
        if wait is None:
            wait = min(_SDK_INITIAL_DELAY_S * 2.0**request.retries_taken, _SDK_MAX_DELAY_S)
        if wait < deadline - time.monotonic():
            return response
        body: Any = None
        try:
            body = json.loads(await http.aread())
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        logger.warning(
            "Anthropic API %s: next retry in %.1fs would exceed the time budget; giving up",
            http.status_code,
            wait,
        )
        raise translate_status(http.status_code, error.get("type"), error.get("message"), http.headers)


def usage_of(raw: Any) -> Usage:
    """The token counts of an SDK usage object (missing or null fields count as 0), with the one-hour
    share of the cache writes and the server's web searches when the API reports them."""
    creation = getattr(raw, "cache_creation", None)
    one_hour = getattr(creation, "ephemeral_1h_input_tokens", None) if creation is not None else None
    server = getattr(raw, "server_tool_use", None)
    return Usage(
        input_tokens=int(getattr(raw, "input_tokens", 0) or 0),
        output_tokens=int(getattr(raw, "output_tokens", 0) or 0),
        cache_creation_input_tokens=int(getattr(raw, "cache_creation_input_tokens", 0) or 0),
        cache_read_input_tokens=int(getattr(raw, "cache_read_input_tokens", 0) or 0),
        cache_creation_1h_input_tokens=int(one_hour) if one_hour is not None else None,
        web_search_requests=int(getattr(server, "web_search_requests", 0) or 0) if server is not None else 0,
        web_fetch_requests=int(getattr(server, "web_fetch_requests", 0) or 0) if server is not None else 0,
    )


def _compaction_usage(raw: Any) -> dict[str, Any]:
    """The summed usage of the compaction iterations the API reports in `usage.iterations`, if any."""
    iterations = getattr(raw, "iterations", None) or []
    spent = [usage_of(i) for i in iterations if getattr(i, "type", None) == "compaction"]
    if not spent:
        return {}
    return {"compaction_usage": sum(spent, Usage())}


def _cache_miss(message: Any) -> dict[str, Any]:
    """`cache_miss_reason` and `cache_missed_tokens` from the response's cache diagnostics, if any."""
    diagnostics = getattr(message, "diagnostics", None)
    reason = getattr(diagnostics, "cache_miss_reason", None)
    if reason is None:
        return {}
    return {
        "cache_miss_reason": str(reason.type),
        "cache_missed_tokens": int(getattr(reason, "cache_missed_input_tokens", 0) or 0),
    }


class _NotAStream(Exception):
    """The endpoint answered a streaming request with something other than an event stream."""


class AnthropicClient:
    """`LLMClient` over `anthropic.AsyncAnthropic`, with a bounded total time per call."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout_s: float = 60.0,
        total_timeout_s: float = 90.0,
    ) -> None:
        if total_timeout_s <= 0 or timeout_s <= 0:
            raise ValueError("timeouts must be positive")
        self._total_timeout_s = total_timeout_s
        self._sdk = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout_s,
            middleware=[_BudgetGuard(max_retries=max_retries, attempt_timeout_s=timeout_s)],
        )
        self._streams = True

    async def create(self, request: LLMRequest) -> LLMResponse:
        return await self._bound_call(request, None, None)

    async def look_up_model(self, model: str, *, timeout_s: float) -> str:
        """The id the API serves `model` under (one GET of its metadata, one attempt, no retries);
        `LLMNotFoundError` when it does not know it, `LLMUnavailableError` when it cannot be asked."""
        try:
            async with asyncio.timeout(timeout_s):
                found = await self._sdk.with_options(max_retries=0, timeout=timeout_s).models.retrieve(model)
        except TimeoutError as exc:
            raise LLMUnavailableError(f"Anthropic API gave no answer within {timeout_s:.0f}s") from exc
        except anthropic.AnthropicError as exc:
            raise translate_exception(exc) from exc
        return str(found.id)

    async def stream(
        self, request: LLMRequest, on_text: TextSink, on_progress: TextSink | None = None
    ) -> LLMResponse:
        """Like `create`, with each text delta handed to `on_text` as it arrives (server-sent events),
        and each delta of the progress the model writes between tool calls to `on_progress`.

        An endpoint that does not stream (its answer is not an event stream) is asked again without
        streaming, once, and this client stops trying to stream.
        """
        if not self._streams:
            return await self._bound_call(request, None, None)
        try:
            return await self._bound_call(request, on_text, on_progress)
        except _NotAStream as exc:
            logger.warning("the model endpoint does not stream (%s); replies are sent when complete", exc)
            self._streams = False
            return await self._bound_call(request, None, None)

    async def _bound_call(
        self, request: LLMRequest, on_text: TextSink | None, on_progress: TextSink | None
    ) -> LLMResponse:
        """The call, with thinking blocks whose prefix changed left out; when the prefix check still
        refuses one (a binding this client got wrong), retried once with the API's `drop_block` safety
        net, and what the API dropped is reported."""
        try:
            return await self._call(request, on_text, on_progress, safety_net=False)
        except ThinkingBindingError as exc:
            logger.warning("the prefix check refused a thinking block (%s); retrying with drop_block", exc)
            return await self._call(request, on_text, on_progress, safety_net=True)

    def _kwargs(self, request: LLMRequest, *, safety_net: bool) -> tuple[dict[str, Any], Unbound]:
        """The SDK's arguments, and what was left out of the messages (with the request's digest)."""
        system = list(request.system)
        tools = list(request.tools)
        wire = compaction_on_wire(
            list(request.messages), server_compaction=request.context_management is not None
        )
        unbound = unbind(wire, model=request.model, system=system, tools=tools)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": unbound.messages,
        }
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = tools
        if request.automatic_cache is not None:
            kwargs["cache_control"] = dict(request.automatic_cache)
        if request.diagnose:
            kwargs["diagnostics"] = {"previous_message_id": request.previous_message_id}
        if request.context_management is not None:
            kwargs["context_management"] = dict(request.context_management)
        betas = list(request.betas)
        thinking = dict(request.thinking) if request.thinking is not None else None
        if safety_net:
            thinking = {
                **(thinking or {"type": "adaptive"}),
                "block_binding": {"prefix_mismatch_behavior": "drop_block"},
            }
            betas.append(BINDING_BETA)
        if thinking is not None:
            kwargs["thinking"] = thinking
        if request.output_config is not None:
            kwargs["output_config"] = dict(request.output_config)
        if betas:
            kwargs["betas"] = list(dict.fromkeys(betas))
        return kwargs, unbound

    async def _call(
        self,
        request: LLMRequest,
        on_text: TextSink | None,
        on_progress: TextSink | None,
        *,
        safety_net: bool,
    ) -> LLMResponse:
        kwargs, unbound = self._kwargs(request, safety_net=safety_net)
        if unbound.dropped:
            logger.info(
                "%d thinking block(s) left out: the conversation before them changed", unbound.dropped
            )
        api = self._sdk.beta.messages if "betas" in kwargs else self._sdk.messages
        started = time.monotonic()
        token = _DEADLINE.set(started + self._total_timeout_s)
        try:
            async with asyncio.timeout(self._total_timeout_s):
                if on_text is None:
                    message = await api.create(**kwargs)
                else:
                    message = await self._streamed(api, kwargs, on_text, on_progress)
        except TimeoutError as exc:
            raise LLMUnavailableError(
                f"Anthropic API gave no answer within {self._total_timeout_s:.0f}s"
            ) from exc
        except anthropic.AnthropicError as exc:
            raise translate_exception(exc) from exc
        finally:
            _DEADLINE.reset(token)
        return self._response(message, time.monotonic() - started, unbound=unbound)

    async def _streamed(
        self, api: Any, kwargs: dict[str, Any], on_text: TextSink, on_progress: TextSink | None
    ) -> Any:
        """The streamed answer. Once the SDK reads the event stream, a dropped connection surfaces as
        the SDK's transport's own error, not an `anthropic` one: it is `LLMStreamCutError` here, as is
        a stream that ends without the answer's stop."""
        async with api.stream(**kwargs) as stream:
            content_type = stream.response.headers.get("content-type", "")
            if not content_type.startswith("text/event-stream"):
                raise _NotAStream(f"content-type {content_type or 'missing'}")
            try:
                async for event in stream:
                    if event.type == "text" and event.text:
                        await on_text(event.text)
                    elif event.type == "thinking" and event.thinking and on_progress is not None:
                        await on_progress(event.thinking)
                    elif event.type == "content_block_stop" and on_progress is not None:
                        said = lookup_status(event.content_block.model_dump(mode="json"))
                        if said:
                            await on_progress(said)
                message = await stream.get_final_message()
            except httpx2.TransportError as exc:
                raise LLMStreamCutError(f"Anthropic API stream cut off: {exc}") from exc
            if message.stop_reason is None:
                raise LLMStreamCutError("Anthropic API stream ended before the answer's stop")
            return message

    def _response(self, message: Any, latency: float, *, unbound: Unbound) -> LLMResponse:
        content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
        details = getattr(message, "stop_details", None)
        dropped = [
            t
            for t in getattr(message, "input_transformations", None) or []
            if getattr(t, "type", None) == "thinking_dropped"
        ]
        if dropped:
            logger.warning(
                "the API dropped %d thinking block(s) whose prefix changed (input_transformations)",
                len(dropped),
            )
        response = LLMResponse(
            content=stamp(content, unbound.bound_for(content)),
            stop_reason=message.stop_reason,
            usage=usage_of(message.usage),
            model=message.model,
            latency_s=latency,
            request_id=getattr(message, "_request_id", None),
            message_id=message.id,
            stop_details=details.model_dump(mode="json") if details is not None else None,
            thinking_left_out=unbound.dropped,
            thinking_dropped_by_api=len(dropped),
            **_cache_miss(message),
            **_compaction_usage(message.usage),
        )
        logger.debug(
            "llm call model=%s stop=%s in=%d out=%d cache_read=%d cache_write=%d latency=%.2fs",
            response.model,
            response.stop_reason,
            response.usage.input_tokens,
            response.usage.output_tokens,
            response.usage.cache_read_input_tokens,
            response.usage.cache_creation_input_tokens,
            latency,
        )
        return response

    async def close(self) -> None:
        await self._sdk.close()

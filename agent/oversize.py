"""What the model is shown of big stored messages: long tool output cut at the source, and any message
far larger than the window allows shown as head + tail, each with a marker naming the stored message
so the model can `recall` the rest. The stored message itself is always whole.

Both cuts are deterministic functions of the stored message, so re-rendering the same history gives
the same bytes and the prompt cache keeps hitting: the size a message is judged by is the plain local
estimate, never the calibrated one (the calibration learns from every call, so a calibrated cut would
move between two calls of one turn, and with it the cached prefix and every thinking block after the
message). `Cuts` is the one owner of what a stored message costs in the prompt: every estimate that
compaction decides on (a row's stored estimate, the session's counters, hygiene, the compressor) counts
what is sent, never the raw size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.tokens import estimate_message
from agent.types import Block, Message

HEAD_SHARE = 0.6
"""Share of the kept characters taken from the start (beginnings usually say what a text is)."""


def _how_to_read(ref: object | None, offset: int) -> str:
    if ref is None:
        return "the full text is stored but cannot be read back from here"
    return f"call recall with message_id={ref} and offset={offset} to read more"


def truncate_output(text: str, max_chars: int, ref: object | None) -> str:
    """Tool output longer than `max_chars` cut to its head with a marker (the model sees this)."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    return f"{head}\n[output truncated: {len(text)} chars total; {_how_to_read(ref, max_chars)}]"


def head_and_tail(text: str, keep_chars: int, ref: object | None) -> str:
    """`text` cut to about `keep_chars`: head, a marker naming what was left out, tail."""
    if len(text) <= keep_chars:
        return text
    head_len = int(keep_chars * HEAD_SHARE)
    tail_len = max(0, keep_chars - head_len)
    omitted = len(text) - head_len - tail_len
    marker = (
        f"\n[... {omitted} of {len(text)} chars omitted here because the message is too large for the "
        f"context window; {_how_to_read(ref, head_len)} ...]\n"
    )
    return text[:head_len] + marker + (text[-tail_len:] if tail_len else "")


def _map_text(message: Message, fn: Callable[[str], str]) -> Message:
    """A copy of `message` with `fn` applied to every text (text blocks and tool_result text)."""
    content = message["content"]
    if isinstance(content, str):
        return {"role": message["role"], "content": fn(content)}
    blocks: list[Block] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            blocks.append({**block, "text": fn(str(block.get("text", "")))})
        elif kind == "tool_result":
            inner: Any = block.get("content", "")
            if isinstance(inner, str):
                blocks.append({**block, "content": fn(inner)})
            elif isinstance(inner, list):
                new_inner = [
                    {**b, "text": fn(str(b.get("text", "")))} if b.get("type") == "text" else b for b in inner
                ]
                blocks.append({**block, "content": new_inner})
            else:
                blocks.append(block)
        else:
            blocks.append(block)
    return {"role": message["role"], "content": blocks}


def _longest_text(message: Message) -> int:
    longest = 0

    def probe(text: str) -> str:
        nonlocal longest
        longest = max(longest, len(text))
        return text

    _map_text(message, probe)
    return longest


def truncate_tool_results(message: Message, *, max_chars: int, ref: object | None) -> Message:
    """The message with every tool_result text over `max_chars` truncated (other content untouched)."""
    content = message["content"]
    if isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content):
        return message
    blocks: list[Block] = []
    for block in content:
        if block.get("type") == "tool_result":
            only = _map_text(
                {"role": "user", "content": [block]}, lambda t: truncate_output(t, max_chars, ref)
            )
            blocks.extend(only["content"])  # type: ignore[arg-type]
        else:
            blocks.append(block)
    return {"role": message["role"], "content": blocks}


def shorten_oversized(message: Message, *, max_tokens: int, ref: object | None) -> Message:
    """If the message is estimated above `max_tokens`, shorten its long texts to head + tail so that it
    fits, scaling each text by the same factor; otherwise return it unchanged."""
    tokens = estimate_message(message)
    if tokens <= max_tokens or _longest_text(message) == 0:
        return message
    # Keep a bit under the proportional share: the markers add text and estimates are approximate.
    ratio = 0.9 * max_tokens / tokens
    threshold = 2_000

    def cut(text: str) -> str:
        if len(text) <= threshold:
            return text
        return head_and_tail(text, max(threshold, int(len(text) * ratio)), ref)

    return _map_text(message, cut)


def render_for_model(
    message: Message,
    *,
    ref: object | None,
    tool_output_max_chars: int,
    oversize_tokens: int,
) -> Message:
    """The stored message as the model sees it (both cuts applied)."""
    shown = truncate_tool_results(message, max_chars=tool_output_max_chars, ref=ref)
    return shorten_oversized(shown, max_tokens=oversize_tokens, ref=ref)


@dataclass(frozen=True, slots=True)
class Cuts:
    """The limits of both cuts (from the agent loop's settings): what the model is shown of a stored
    message, and what that costs."""

    tool_output_max_chars: int
    oversize_tokens: int
    """A message estimated above this (uncalibrated) is shown as head + tail."""

    def shown(self, message: Message, *, ref: object | None) -> Message:
        """The stored message as the model sees it: the same bytes on every call."""
        return render_for_model(
            message,
            ref=ref,
            tool_output_max_chars=self.tool_output_max_chars,
            oversize_tokens=self.oversize_tokens,
        )

    def tokens(self, message: Message) -> int:
        """What the stored message costs in a prompt: the uncalibrated estimate of what is sent (callers
        scale it by the calibration when they read it)."""
        return estimate_message(self.shown(message, ref=None))

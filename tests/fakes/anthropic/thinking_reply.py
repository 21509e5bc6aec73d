"""What a model with preserved thinking answers: its content blocks in order, stop reason and output tokens.

- Adaptive thinking: the answer starts with a ``thinking`` block; its text is empty unless ``display`` is
  ``"summarized"`` (the scripted ``thinking`` text, else a one-line default). ``between_tools`` has none.
- Progress: a scripted ``progress`` comes back as a thinking block before the tool calls, empty under
  ``"omitted"``, its text under ``"summarized"``, ``"updates"`` and ``between_tools``.
- Thinking counts toward ``max_tokens`` and ``output_tokens`` (``thinking_tokens``, else the scripted
  text's size, else what the request's effort thinks: ``effort.ThinkingVolume``). When it takes
  the whole ``max_tokens`` (``thinking_only``, or by itself when ``max_tokens`` is not above the thinking's
  size) the content is the thinking block alone with ``stop_reason: "max_tokens"``; in the second case the
  scripted reply stays queued so a retry with more room gets it.

Signatures are added afterwards (``binding.sign_content``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic.effort import ThinkingVolume
from tests.fakes.anthropic.replies import ScriptedReply
from tests.fakes.anthropic.thinking_rules import ThinkingConfig
from tests.fakes.anthropic.tokens import output_tokens, text_tokens, truncate_to_tokens


@dataclass(slots=True)
class Reply:
    """An answer before signing: content, stop reason and details, what it bills as output, extra delay,
    whether the scripted reply it came from stays queued, and the up-front thinking it billed (written
    before its first block reaches the client: paced like text, shown or not)."""

    content: list[dict[str, Any]]
    stop_reason: str
    output_tokens: int
    delay: float = 0.0
    stop_details: dict[str, Any] | None = None
    keep_script: bool = False
    thinking_tokens: int = 0
    hold: asyncio.Event | None = None
    """Answered only once this is set (a test holds a reply until what must arrive meanwhile has)."""


def _thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": ""}


def thinking_reply(
    scripted: ScriptedReply | None,
    *,
    default_text: str,
    question: str,
    config: ThinkingConfig,
    max_tokens: int,
    volume: ThinkingVolume,
) -> Reply:
    """The answer to one sampled request (``default_text`` when nothing is scripted)."""
    reply = scripted or ScriptedReply(default_text)
    adaptive = config.mode == "adaptive"
    reasoning = reply.thinking or f"The user wrote: {question[:120]}. I will answer them directly."
    spent = 0
    head: list[dict[str, Any]] = []
    if adaptive:
        spent = reply.thinking_tokens or (text_tokens(reply.thinking) if reply.thinking else 0)
        spent = spent or volume.tokens(config.effort)
        head.append(_thinking(reasoning if config.display == "summarized" else ""))
    delay = reply.delay if scripted else 0.0
    hold = reply.hold if scripted else None
    if reply.thinking_only or spent >= max_tokens:
        keep = scripted is not None and not reply.thinking_only
        return Reply(
            head, "max_tokens", max_tokens, delay, keep_script=keep, thinking_tokens=max_tokens, hold=hold
        )
    thought = spent
    if reply.progress:
        shown = config.display in ("summarized", "updates") or not adaptive
        head.append(_thinking(reply.progress if shown else ""))
        spent += text_tokens(reply.progress)
    room = max(max_tokens - spent, 0)
    visible = reply.content()
    if output_tokens(visible) > room:
        text = truncate_to_tokens(reply.text or "", room)
        tail = [{"type": "text", "text": text}] if text else []
        return Reply([*head, *tail], "max_tokens", max_tokens, delay, thinking_tokens=thought, hold=hold)
    total = spent + output_tokens(visible)
    stop = reply.resolved_stop_reason()
    return Reply([*head, *visible], stop, total, delay, thinking_tokens=thought, hold=hold)

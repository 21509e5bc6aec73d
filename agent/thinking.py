"""Thinking blocks and the prefix they are bound to (pure).

On the models with preserved thinking (the 5.5 family, Fable 5.1) every thinking block the API returns
is signed for the model and for everything before it: the system prompt, the tools and every earlier
message (cache markers aside). A request that sends a block back after any of that changed is refused
("The block is bound to a different conversation"), and so is one that leaves out a block between
others. This product edits history on purpose (compaction, `/compact undo`, pins in the system prompt,
image demotion, a model switch), so it keeps each block's binding itself:

- `stamp` marks the thinking blocks of a response with the digest of the request that produced them
  (the model, system, tools and messages exactly as sent);
- `unbind`, right before a request leaves, recomputes the digest message by message over what is being
  sent and keeps a thinking block only where its stamp still matches: every block at or after the first
  changed position goes (a dropped block changes its message, so every later block goes too), exactly
  what the API would refuse. Stamps never reach the wire.

A server-side compaction block (sent verbatim only in a request with the compaction beta) is where the
API's view of the conversation starts: it drops everything before the block. The digest restarts there
too, so the thinking of the reply that compacted (and everything after it) still goes back once the
messages the block replaced have left the window.

The stamp rides in the stored block (`STAMP`), so the binding survives restarts and other workers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent.models import ModelInfo
from agent.types import Block, Message

Effort = Literal["low", "medium", "high", "xhigh", "max"]
EFFORTS: tuple[Effort, ...] = ("low", "medium", "high", "xhigh", "max")

DISPLAY_UPDATES_BETA = "thinking-display-updates-2026-08-18"
"""The beta of `display: "updates"`: the short progress text written between tool calls comes back
readable (the reasoning itself stays hidden), so a chat can show it while a tool runs."""

STAMP = "x_bound_to"
"""The block key holding the digest of the prefix a thinking block was produced after (ours, never
sent)."""

THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def _clean(value: Any) -> Any:
    """`value` without cache markers and stamps: what the prefix check compares."""
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if k not in ("cache_control", STAMP)}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _canonical(value: Any) -> bytes:
    return json.dumps(_clean(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class PrefixDigest:
    """A running digest of a request: the model, system and tools, then one message at a time."""

    __slots__ = ("_hash",)

    def __init__(self, model: str, system: Sequence[Block] | str, tools: Sequence[Mapping[str, Any]]) -> None:
        self._hash = hashlib.sha256()
        self._hash.update(_canonical({"model": model, "system": system, "tools": list(tools)}))

    def add(self, message: Message) -> None:
        self._hash.update(b"\x1e")
        self._hash.update(_canonical(message))

    def value(self) -> str:
        return self._hash.copy().hexdigest()


def is_thinking(block: Block) -> bool:
    return block.get("type") in THINKING_TYPES


def compacts(content: Any) -> bool:
    """Whether message content carries a server-side compaction block the API continues from (one whose
    compaction failed, with no summary, is ignored by the API)."""
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "compaction" and b.get("content") for b in content
    )


def stamp(content: Iterable[Block], digest: str) -> list[Block]:
    """The response's blocks with its thinking blocks bound to `digest` (`Unbound.bound_for`)."""
    return [{**b, STAMP: digest} if is_thinking(b) else b for b in content]


@dataclass(frozen=True, slots=True)
class Unbound:
    """The messages to send, how many thinking blocks had to be left out, and the digests the thinking
    blocks of the response are bound to: the whole request as sent, or, after a compaction block, the
    model, system and tools alone."""

    messages: list[Message]
    dropped: int
    digest: str
    restart: str

    def bound_for(self, content: Sequence[Block]) -> str:
        """The digest the thinking of `content` (this request's response) is bound to."""
        return self.restart if compacts(list(content)) else self.digest


def unbind(
    messages: Sequence[Message],
    *,
    model: str,
    system: Sequence[Block] | str,
    tools: Sequence[Mapping[str, Any]],
) -> Unbound:
    """`messages` as they may be sent: thinking blocks whose prefix changed since they were produced
    (or that carry no stamp) left out, stamps removed."""
    digest = PrefixDigest(model, system, tools)
    restart = digest.value()
    out: list[Message] = []
    dropped = 0
    for message in messages:
        content = message.get("content")
        if compacts(content):  # the API sees nothing before it
            digest = PrefixDigest(model, system, tools)
        if (
            message.get("role") == "assistant"
            and isinstance(content, list)
            and any(isinstance(b, Mapping) and is_thinking(b) for b in content)
        ):
            here = digest.value()
            kept: list[Block] = []
            for block in content:
                if not is_thinking(block):
                    kept.append(block)
                elif block.get(STAMP) == here:
                    kept.append({k: v for k, v in block.items() if k != STAMP})
                else:
                    dropped += 1
            if not kept:  # an assistant turn of thinking only: nothing of it can be sent
                continue
            message = {**message, "content": kept}
        out.append(message)
        digest.add(message)
    return Unbound(out, dropped, digest.value(), restart)


def thinking_only(content: Sequence[Block]) -> bool:
    """A response that thought and wrote nothing else (it ran out of room while thinking)."""
    return bool(content) and all(is_thinking(b) for b in content)


def without_thinking(content: Sequence[Block]) -> list[Block]:
    return [b for b in content if not is_thinking(b)]


@dataclass(frozen=True, slots=True)
class ThinkingOptions:
    """What a reply request says about thinking and effort."""

    thinking: Mapping[str, Any] | None = None
    betas: tuple[str, ...] = ()
    output_config: Mapping[str, Any] | None = None


def thinking_options(model: ModelInfo, effort: Effort | None) -> ThinkingOptions:
    """On a model with preserved thinking: adaptive thinking (its default, never turned off: the 5.5
    models refuse `disabled`) with the progress between tool calls readable; the effort if one is set."""
    if not model.preserved_thinking:
        return ThinkingOptions()
    return ThinkingOptions(
        thinking={"type": "adaptive", "display": "updates"},
        betas=(DISPLAY_UPDATES_BETA,),
        output_config={"effort": effort} if effort is not None else None,
    )

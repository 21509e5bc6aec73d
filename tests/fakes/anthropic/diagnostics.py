"""Cache diagnostics in the fake API: each request that carries a `diagnostics` object leaves a
fingerprint under its response id; a later request naming that id in `diagnostics.previous_message_id`
gets back where the two prompts diverged (`diagnostics.cache_miss_reason`), as the real API reports it:
`model_changed`, `system_changed`, `tools_changed`, `messages_changed` (an earlier message differs
instead of messages only being appended) or `previous_message_not_found`; `null` when the prompt only
grew. `cache_missed_input_tokens` is the part of the previous prompt that could have been read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic.cache import serialize_prefix
from tests.fakes.anthropic.tokens import canonical_json, without_cache_control


@dataclass(frozen=True, slots=True)
class Fingerprint:
    model: str
    system: str
    tools: str
    messages: tuple[str, ...]
    prefix_tokens: tuple[int, ...]
    """Tokens of the prompt up to and including each message (tools and system first)."""


def _strip(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip(v) for k, v in without_cache_control(value).items()}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def fingerprint(body: Mapping[str, Any]) -> Fingerprint:
    messages = body.get("messages") or []
    blocks = serialize_prefix(body)
    head = len(blocks) - sum(len(m["content"]) if isinstance(m.get("content"), list) else 1 for m in messages)
    running = sum(b.tokens for b in blocks[:head])
    prefix: list[int] = []
    position = head
    for message in messages:
        count = len(message["content"]) if isinstance(message.get("content"), list) else 1
        running += sum(b.tokens for b in blocks[position : position + count])
        position += count
        prefix.append(running)
    return Fingerprint(
        model=str(body.get("model")),
        system=canonical_json(_strip(body.get("system"))),
        tools=canonical_json(_strip(body.get("tools") or [])),
        messages=tuple(canonical_json(_strip(m)) for m in messages),
        prefix_tokens=tuple(prefix),
    )


def miss_reason(previous: Fingerprint | None, current: Fingerprint) -> dict[str, Any] | None:
    """The `cache_miss_reason` for `current` against `previous` (None: no divergence)."""
    if previous is None:
        return {"type": "previous_message_not_found"}
    missed = previous.prefix_tokens[-1] if previous.prefix_tokens else 0
    for kind, changed in (
        ("model_changed", previous.model != current.model),
        ("system_changed", previous.system != current.system),
        ("tools_changed", previous.tools != current.tools),
    ):
        if changed:
            return {"type": kind, "cache_missed_input_tokens": missed}
    for i, message in enumerate(previous.messages):
        if i >= len(current.messages) or current.messages[i] != message:
            read = previous.prefix_tokens[i - 1] if i > 0 else 0
            return {"type": "messages_changed", "cache_missed_input_tokens": missed - read}
    return None


class Diagnostics:
    """Fingerprints by response id, and the `diagnostics` object of a response."""

    def __init__(self) -> None:
        self._seen: dict[str, Fingerprint] = {}

    def answer(self, body: Mapping[str, Any], message_id: str) -> dict[str, Any] | None:
        """The response's `diagnostics` (None when the request did not opt in)."""
        requested = body.get("diagnostics")
        if not isinstance(requested, Mapping):
            return None
        current = fingerprint(body)
        self._seen[message_id] = current
        previous_id = requested.get("previous_message_id")
        if previous_id is None:
            return None
        reason = miss_reason(self._seen.get(str(previous_id)), current)
        return None if reason is None else {"cache_miss_reason": reason}

"""Preserved thinking in the fake Anthropic API: signed thinking blocks bound to the model and their prefix.

A block's signature is opaque to clients; here it is base64 of ``{"model", "mac"}``, where ``mac`` is an
HMAC-SHA256, with a secret the fake holds (one per account), over the canonical JSON of the producing model,
the block's prefix and the block's own text. The prefix is what the model saw before the block: ``system``,
``tools``, every earlier message and the earlier blocks of the block's own message, as server-side compaction
leaves them (``effective_body``), with ``cache_control`` markers and null fields left out and string content
read as one text block. A later request that sends the block back is checked block by block, as sent:

- model: a block whose producer the requested model cannot read (``reads_thinking_from``) is dropped
  silently (``model_binding_mismatch``);
- prefix: a block whose prefix changed (an edited earlier message, system or tools; a thinking block before
  it left out or moved) fails. Enforced (the default, ``enforce=True``): 400 naming the first failing block,
  or with ``drop_block`` the failing blocks are removed (``prefix_binding_mismatch``); the rest of the
  message's thinking blocks fail with it, as their prefix holds it. Not enforced (older accounts): kept,
  and reported as ``thinking_mismatch_allowed``.

With the binding beta the response lists every removal (``input_transformations``; ``[]`` when none).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.anthropic.compaction import effective_body
from tests.fakes.anthropic.tokens import ModelSpec, canonical_json
from tests.fakes.anthropic.validation import InvalidRequest

THINKING_TYPES = ("thinking", "redacted_thinking")
PREFIX = "prefix_binding_mismatch"
Path = tuple[int, int]


def prefix_mismatch(path: Path) -> InvalidRequest:
    """The 400 of a block bound to a different conversation (the API's text)."""
    i, j = path
    return InvalidRequest(
        f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block. The block is bound to a "
        "different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` "
        'to "drop_block".'
    )


def _clean(value: Any) -> Any:
    """A value as the model sees it: no cache markers, no null fields."""
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if k != "cache_control" and v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _canonical_message(message: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": message.get("role"), "content": _clean(_blocks(message.get("content")))}


class _Canon:
    """The canonical JSON of a request's parts, each made once: a request checks every thinking block
    it sends back against its own prefix, and those prefixes share their messages, system and tools.
    An entry holds its object, so no other object can take its id while it is remembered."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Any, str]] = {}

    def json(self, part: Any, make: Callable[[], Any]) -> str:
        entry = self._seen.get(id(part))
        if entry is not None and entry[0] is part:
            return entry[1]
        text = canonical_json(make())
        self._seen[id(part)] = (part, text)
        return text


def prefix_digest(
    body: Mapping[str, Any],
    before: Sequence[Mapping[str, Any]],
    role: str,
    canon: _Canon | None = None,
) -> str:
    """The canonical prefix of a block: ``body``'s system, tools and messages, then a message of ``role``
    holding ``before`` (the block's earlier siblings), as compaction leaves them. The JSON of
    ``{"system", "tools", "messages"}`` with sorted keys, put together from its parts (``canon``: parts
    already made for the same request)."""
    canon = canon or _Canon()
    messages = [*(body.get("messages") or []), {"role": role, "content": list(before)}]
    seen = effective_body({**body, "messages": messages})
    system, tools = seen.get("system"), seen.get("tools")
    parts = ",".join(canon.json(m, functools.partial(_canonical_message, m)) for m in seen["messages"])
    text = (
        f'{{"messages":[{parts}],"system":{canon.json(system, lambda: _clean(_blocks(system)))},'
        f'"tools":{canon.json(tools, lambda: _clean(list(tools or [])))}}}'
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _mac(secret: bytes, model: str, digest: str, text: str) -> str:
    payload = canonical_json([model, digest, text]).encode("utf-8")
    return hmac.new(secret, payload, hashlib.sha256).hexdigest()


def _block_text(block: Mapping[str, Any]) -> str:
    return str(block.get("thinking") or "") if block.get("type") == "thinking" else ""


def sign(secret: bytes, model: str, digest: str, block: Mapping[str, Any]) -> str:
    token = {"model": model, "mac": _mac(secret, model, digest, _block_text(block))}
    return base64.b64encode(canonical_json(token).encode("utf-8")).decode("ascii")


def _decode(block: Mapping[str, Any]) -> dict[str, str] | None:
    raw = block.get("signature") if block.get("type") == "thinking" else block.get("data")
    try:
        token = json.loads(base64.b64decode(str(raw), validate=True))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(token, dict) or not all(isinstance(token.get(k), str) for k in ("model", "mac")):
        return None
    return {"model": token["model"], "mac": token["mac"]}


def sign_content(
    secret: bytes, spec: ModelSpec, body: Mapping[str, Any], content: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``content`` (a reply to ``body``) with each thinking block signed for ``spec`` and its prefix."""
    signed: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") == "thinking":
            digest = prefix_digest(body, signed, "assistant")
            block = {**block, "signature": sign(secret, spec.id, digest, block)}
        signed.append(block)
    return signed


@dataclass(slots=True)
class BindingCheck:
    """The outcome of checking one request's thinking blocks."""

    checks: list[dict[str, str]] = field(default_factory=list)
    """One entry per block: ``path``, ``outcome`` ("kept", "dropped", "allowed", "rejected"), ``reason``."""
    dropped: set[Path] = field(default_factory=set)
    transformations: list[dict[str, str]] = field(default_factory=list)
    error: InvalidRequest | None = None
    """The 400 of the first failing block when the prefix check rejects the request."""

    def note(self, path: str, outcome: str, reason: str) -> None:
        self.checks.append({"path": path, "outcome": outcome, "reason": reason})

    def drop(self, i: int, j: int, reason: str) -> None:
        path = f"messages.{i}.content.{j}"
        self.dropped.add((i, j))
        self.note(path, "dropped", reason)
        self.transformations.append(_entry("thinking_dropped", path, reason))

    def without_dropped(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """The request as the model sees it: the dropped blocks removed."""
        if not self.dropped:
            return body
        messages = []
        for i, message in enumerate(body.get("messages") or []):
            content = message.get("content")
            if isinstance(content, list) and any((i, j) in self.dropped for j in range(len(content))):
                kept = [b for j, b in enumerate(content) if (i, j) not in self.dropped]
                message = {**message, "content": kept}
            messages.append(message)
        return {**body, "messages": messages}


def _readable(spec: ModelSpec, producer: str, models: Mapping[str, ModelSpec]) -> bool:
    if producer == spec.id or producer in spec.reads_thinking_from:
        return True
    source = models.get(producer)
    return source is not None and source.portable_thinking


def _surviving(messages: Sequence[Any]) -> set[Path]:
    """Positions the model sees after server-side compaction (the last compaction block and after)."""
    last: Path = (0, 0)
    for i, message in enumerate(messages):
        for j, block in enumerate(_blocks(message.get("content"))):
            if isinstance(block, Mapping) and block.get("type") == "compaction" and block.get("content"):
                last = (i, j)
    return {
        (i, j)
        for i, message in enumerate(messages)
        for j in range(len(_blocks(message.get("content"))))
        if (i, j) >= last
    }


def check_bindings(
    body: Mapping[str, Any],
    spec: ModelSpec,
    models: Mapping[str, ModelSpec],
    *,
    secret: bytes,
    enforce: bool,
    drop_block: bool,
) -> BindingCheck:
    """Check every thinking block ``body`` sends back; ``error`` is the 400 of the first failing block when
    the prefix check is enforced and the request did not ask to drop failing blocks."""
    result = BindingCheck()
    messages = body.get("messages") or []
    visible = _surviving(messages)
    canon = _Canon()
    for i, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        for j, block in enumerate(blocks):
            thinking = isinstance(block, Mapping) and block.get("type") in THINKING_TYPES
            if not thinking or (i, j) not in visible:
                continue
            path = f"messages.{i}.content.{j}"
            token = _decode(block)
            if token is not None and not _readable(spec, token["model"], models):
                result.drop(i, j, "model_binding_mismatch")
                continue
            failed = token is None or not _prefix_holds(secret, body, i, blocks[:j], block, token, canon)
            if not failed:
                result.note(path, "kept", "")
            elif not enforce:
                result.note(path, "allowed", PREFIX)
                result.transformations.append(_entry("thinking_mismatch_allowed", path, PREFIX))
            elif drop_block:
                result.drop(i, j, PREFIX)
            else:
                result.note(path, "rejected", PREFIX)
                result.error = prefix_mismatch((i, j))
                return result
    return result


def _prefix_holds(
    secret: bytes,
    body: Mapping[str, Any],
    i: int,
    before: Sequence[Mapping[str, Any]],
    block: Mapping[str, Any],
    token: Mapping[str, str],
    canon: _Canon,
) -> bool:
    earlier = {**body, "messages": list((body.get("messages") or [])[:i])}
    role = str((body.get("messages") or [])[i].get("role"))
    digest = prefix_digest(earlier, before, role, canon)
    return hmac.compare_digest(token["mac"], _mac(secret, token["model"], digest, _block_text(block)))


def _entry(kind: str, path: str, reason: str) -> dict[str, str]:
    return {"type": kind, "path": path, "reason": reason}

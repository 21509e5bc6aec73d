"""The fake Anthropic API's model table and its deterministic token model.

The tokenizer is deliberately *not* tiktoken: ``ceil(utf8_bytes / 3.5)`` per piece of text plus fixed
overheads, so the gateway's estimator has a real, learnable bias to calibrate against.

Costs (all documented, all deterministic):
- text: ``ceil(utf8_bytes / 3.5)`` + ``BLOCK_OVERHEAD``; the first block of each message also carries
  ``MESSAGE_OVERHEAD``;
- tool definition: ``ceil(bytes of its canonical JSON without cache_control / 3.5)`` + ``TOOL_OVERHEAD``;
  a request with tools also pays ``TOOL_USE_SYSTEM_PROMPT`` once (the API's tool-use system prompt);
- tool_use: name and canonical JSON input as text; tool_result: its content's text and images;
- compaction (server-side compaction's summary block): its summary as text;
- image: ceil(w x h / 750) after fitting to 1568 px (``IMAGE_TOKENS`` when it cannot be decoded); PDF
  document: each page's text plus its page image (``media``); other blocks: their JSON as text.
The prompt is the sum of its blocks, so the cache model can split it exactly at block boundaries.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from tests.fakes.anthropic.media import MediaError, document_tokens, image_tokens

BYTES_PER_TOKEN = 3.5
BLOCK_OVERHEAD = 3
MESSAGE_OVERHEAD = 4
TOOL_OVERHEAD = 12
TOOL_USE_SYSTEM_PROMPT = 346
"""The system prompt the API adds to a request that carries tools (tool_choice auto), in tokens."""
IMAGE_TOKENS = 1600


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What the fake knows of a model: its canonical id, window, output cap, minimum cacheable prefix,
    whether it supports server-side compaction (the ``compact_20260112`` edit), and the request rules of
    the models with preserved thinking (``thinking_rules``, ``binding``)."""

    id: str
    display_name: str
    context_window: int = 200_000
    max_output: int = 64_000
    min_cacheable: int = 1024
    compaction: bool = False
    preserved_thinking: bool = False
    """Adaptive thinking by default, signed blocks bound to their prefix, the 5.5-era 400s."""
    forced_tool_choice: bool = True
    """Whether ``tool_choice`` ``any``/``tool`` is accepted."""
    between_tools: bool = False
    """Whether ``thinking: {"type": "between_tools"}`` is accepted (Sonnet 5.5's lowest setting)."""
    system_messages: bool = False
    """Whether ``role: "system"`` messages are accepted in ``messages`` (right after a user turn)."""
    reads_thinking_from: frozenset[str] = frozenset()
    """Other models whose thinking blocks this one reads (its own always)."""
    portable_thinking: bool = False
    """Its thinking blocks replay on any model with preserved thinking (Haiku 5.5)."""
    default_effort: str = "high"
    """What an unset ``output_config.effort`` means (medium on Opus 5.5 and Haiku 5.5, high elsewhere)."""
    created_at: str = "2025-10-01T00:00:00Z"
    line: str | None = None


class _Family(TypedDict):
    preserved_thinking: bool
    compaction: bool
    system_messages: bool


def preserved_thinking_models() -> list[ModelSpec]:
    """The current family (docs, Nov 2026): 1M context, 128K output, 512-token minimum cacheable prefix,
    server-side compaction; forced tool choice is refused except on Haiku 5.5; Fable 5.1 reads Opus 5 and
    Opus 5.5 thinking (not the reverse); Haiku 5.5 thinking replays on the others; Opus 5.5 and Haiku 5.5
    default to medium effort, the others to high."""
    family = _Family(preserved_thinking=True, compaction=True, system_messages=True)
    return [
        ModelSpec(
            "claude-fable-5-1", "Claude Fable 5.1", 1_000_000, 128_000, 512, forced_tool_choice=False,
            reads_thinking_from=frozenset({"claude-opus-5", "claude-opus-5-5"}),
            line="fable", **family,
        ),
        ModelSpec(
            "claude-opus-5-5", "Claude Opus 5.5", 1_000_000, 128_000, 512, forced_tool_choice=False,
            default_effort="medium", line="opus", **family,
        ),
        ModelSpec(
            "claude-sonnet-5-5", "Claude Sonnet 5.5", 1_000_000, 128_000, 512, forced_tool_choice=False,
            between_tools=True, created_at="2026-09-28T00:00:00Z", line="sonnet", **family,
        ),
        ModelSpec(
            "claude-haiku-5-5", "Claude Haiku 5.5", 1_000_000, 128_000, 512, portable_thinking=True,
            default_effort="medium", created_at="2026-10-07T00:00:00Z", line="haiku", **family,
        ),
    ]  # fmt: skip


def default_models() -> dict[str, ModelSpec]:
    """The current models, keyed by every name the API accepts for them (dated ids are aliases)."""
    sonnet = ModelSpec("claude-sonnet-4-6", "Claude Sonnet 4.6", min_cacheable=1024, compaction=True)
    sonnet_45 = ModelSpec("claude-sonnet-4-5", "Claude Sonnet 4.5", min_cacheable=1024)
    opus = ModelSpec("claude-opus-4-5", "Claude Opus 4.5", min_cacheable=4096)
    opus_46 = ModelSpec(
        "claude-opus-4-6", "Claude Opus 4.6", max_output=128_000, min_cacheable=4096, compaction=True
    )
    opus_41 = ModelSpec("claude-opus-4-1", "Claude Opus 4.1", max_output=32_000, min_cacheable=1024)
    haiku = ModelSpec("claude-haiku-4-5", "Claude Haiku 4.5", min_cacheable=4096)
    current = [
        *preserved_thinking_models(),
        ModelSpec("claude-fable-5-2", "Claude Fable 5.2", 1_000_000, 128_000, 512),
        ModelSpec("claude-fable-5", "Claude Fable 5", 1_000_000, 128_000, 512, compaction=True),
        ModelSpec("claude-opus-5", "Claude Opus 5", 1_000_000, 128_000, 512, compaction=True),
        ModelSpec("claude-sonnet-5", "Claude Sonnet 5", 1_000_000, 128_000, 1024, compaction=True),
        ModelSpec(
            "claude-opus-4-8",
            "Claude Opus 4.8",
            max_output=128_000,
            min_cacheable=1024,
            compaction=True,
            system_messages=True,
        ),
        ModelSpec(
            "claude-opus-4-7", "Claude Opus 4.7", max_output=128_000, min_cacheable=2048, compaction=True
        ),
    ]
    return {
        **{spec.id: spec for spec in current},
        sonnet.id: sonnet,
        sonnet_45.id: sonnet_45,
        "claude-sonnet-4-5-20250929": sonnet_45,
        opus_46.id: opus_46,
        opus.id: opus,
        "claude-opus-4-5-20251101": opus,
        opus_41.id: opus_41,
        "claude-opus-4-1-20250805": opus_41,
        haiku.id: haiku,
        "claude-haiku-4-5-20251001": haiku,
    }


def build_models(
    base: Mapping[str, ModelSpec] | None = None,
    *,
    context_windows: Mapping[str, int] | None = None,
    min_cacheable: Mapping[str, int] | None = None,
    max_output: Mapping[str, int] | None = None,
) -> dict[str, ModelSpec]:
    """The model table with per-model overrides; an override given for any alias applies to the model."""
    table = dict(base) if base is not None else default_models()
    for field, overrides in (
        ("context_window", context_windows),
        ("min_cacheable", min_cacheable),
        ("max_output", max_output),
    ):
        for name, value in (overrides or {}).items():
            if name not in table:
                raise KeyError(f"unknown model in overrides: {name}")
            canonical = table[name].id
            for alias, spec in list(table.items()):
                if spec.id == canonical:
                    changes: dict[str, Any] = {field: value}
                    table[alias] = replace(spec, **changes)
    return table


def text_tokens(text: str) -> int:
    """Tokens of a piece of text: ceil(utf8 bytes / 3.5)."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def canonical_json(value: Any) -> str:
    """Stable JSON (sorted keys, no spaces) used for both token counting and prefix hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def without_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _tool_result_tokens(content: Any) -> int:
    if isinstance(content, str):
        return text_tokens(content)
    total = 0
    if isinstance(content, list):
        for inner in content:
            if isinstance(inner, Mapping) and inner.get("type") == "image":
                total += _image_block_tokens(inner)
            elif isinstance(inner, Mapping) and inner.get("type") == "text":
                total += text_tokens(str(inner.get("text", "")))
            else:
                total += text_tokens(canonical_json(inner))
    return total


def _image_block_tokens(block: Mapping[str, Any]) -> int:
    """Real images cost their pixels (see `media`); an undecodable one the flat estimate."""
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        try:
            return image_tokens(block)
        except MediaError:
            return IMAGE_TOKENS
    return IMAGE_TOKENS


def content_block_tokens(block: Mapping[str, Any]) -> int:
    """Tokens of one content block, including the per-block overhead."""
    kind = block.get("type")
    if kind == "text":
        body = text_tokens(str(block.get("text", "")))
    elif kind == "image":
        body = _image_block_tokens(block)
    elif kind == "document" and (pdf := document_tokens(block)) is not None:
        body = pdf
    elif kind == "tool_use":
        body = text_tokens(str(block.get("name", ""))) + text_tokens(canonical_json(block.get("input", {})))
    elif kind == "tool_result":
        body = _tool_result_tokens(block.get("content", ""))
    elif kind == "compaction":
        body = text_tokens(str(block.get("content") or ""))
    elif kind in ("thinking", "redacted_thinking"):
        body = text_tokens(str(block.get("thinking", block.get("data", ""))))
    else:
        body = text_tokens(canonical_json(without_cache_control(block)))
    return body + BLOCK_OVERHEAD


def tool_definition_tokens(tool: Mapping[str, Any]) -> int:
    return text_tokens(canonical_json(without_cache_control(tool))) + TOOL_OVERHEAD


def output_tokens(content: Iterable[Mapping[str, Any]]) -> int:
    """Output tokens of a reply's content blocks (at least 1, as the API never reports 0 for a reply)."""
    total = 0
    for block in content:
        if block.get("type") == "text":
            total += text_tokens(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            total += text_tokens(str(block.get("name", ""))) + text_tokens(canonical_json(block.get("input")))
    return max(total, 1)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose token count is at most ``limit``."""
    if text_tokens(text) <= limit:
        return text
    max_bytes = int(limit * BYTES_PER_TOKEN)
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")

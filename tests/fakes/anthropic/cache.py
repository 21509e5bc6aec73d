"""A pure model of Anthropic's prompt prefix cache, used by the fake API to report cache usage.

The request prefix is an ordered sequence of blocks: tool definitions, system blocks, then every message's
content blocks as the model sees them (server-side compaction drops what precedes the last compaction block,
see ``compaction.effective_body``). A breakpoint is a block carrying ``cache_control`` (a
message-level marker means the message's last block). The cache, per namespace (api key, model), maps the
hash of the prefix up to and including a block to an expiry time and TTL.

- Read: the longest prefix, among each breakpoint and the ``lookback`` block positions before it, whose hash
  is cached and unexpired; a hit refreshes that entry (now + its TTL).
- Write: every breakpoint after the read point whose prefix has at least the model's minimum cacheable
  tokens is stored with expiry now + its TTL; the tokens from the read point to the last stored breakpoint
  are cache writes, split by the TTL of the breakpoint closing each segment.
- Uncached input: the rest, so ``input + cache_read + cache_creation`` is always the whole prompt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic.compaction import effective_body
from tests.fakes.anthropic.tokens import (
    MESSAGE_OVERHEAD,
    TOOL_USE_SYSTEM_PROMPT,
    canonical_json,
    content_block_tokens,
    tool_definition_tokens,
    without_cache_control,
)

TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
DEFAULT_LOOKBACK = 20


@dataclass(frozen=True, slots=True)
class PrefixBlock:
    """One block of the serialized prompt: what it hashes as, what it costs, and its breakpoint TTL if any."""

    fingerprint: str
    tokens: int
    ttl: str | None = None


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """How one request's prompt splits into uncached input, cache reads and cache writes (by TTL)."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_5m: int
    cache_creation_1h: int

    @property
    def cache_creation_input_tokens(self) -> int:
        return self.cache_creation_5m + self.cache_creation_1h

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def _ttl_of(cache_control: Any) -> str | None:
    if not isinstance(cache_control, Mapping):
        return None
    return str(cache_control.get("ttl", "5m"))


def _block_view(block: Mapping[str, Any]) -> dict[str, Any]:
    """What a content block hashes as: without its cache marker; a compaction block also without the null
    fields a client may add when it sends the block back."""
    view = without_cache_control(block)
    if view.get("type") == "compaction":
        return {k: v for k, v in view.items() if v is not None}
    return view


def serialize_prefix(body: Mapping[str, Any]) -> list[PrefixBlock]:
    """The effective request's prompt as prefix blocks, in the order the cache sees them: tools, system,
    messages from the last compaction block on."""
    body = effective_body(body)
    blocks: list[PrefixBlock] = []
    for position, tool in enumerate(body.get("tools") or []):
        blocks.append(
            PrefixBlock(
                canonical_json(["tool", without_cache_control(tool)]),
                # A request with tools also carries the API's tool-use system prompt (counted once).
                tool_definition_tokens(tool) + (TOOL_USE_SYSTEM_PROMPT if position == 0 else 0),
                _ttl_of(tool.get("cache_control")),
            )
        )
    system = body.get("system")
    if isinstance(system, str) and system:
        system = [{"type": "text", "text": system}]
    for block in system or []:
        blocks.append(
            PrefixBlock(
                canonical_json(["system", without_cache_control(block)]),
                content_block_tokens(block),
                _ttl_of(block.get("cache_control")),
            )
        )
    for message in body.get("messages") or []:
        content = message.get("content")
        items: list[Mapping[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        )
        role = message.get("role")
        for position, block in enumerate(items):
            first = position == 0
            blocks.append(
                PrefixBlock(
                    canonical_json([role, first, _block_view(block)]),
                    content_block_tokens(block) + (MESSAGE_OVERHEAD if first else 0),
                    _ttl_of(block.get("cache_control")),
                )
            )
        message_ttl = _ttl_of(message.get("cache_control"))
        if message_ttl is not None and blocks:
            last = blocks[-1]
            blocks[-1] = PrefixBlock(last.fingerprint, last.tokens, last.ttl or message_ttl)
    automatic = _ttl_of(body.get("cache_control"))
    if automatic is not None and blocks and blocks[-1].ttl is None:
        # Automatic caching: the API puts the breakpoint on the last block and moves it forward itself.
        last = blocks[-1]
        blocks[-1] = PrefixBlock(last.fingerprint, last.tokens, automatic)
    return blocks


@dataclass(slots=True)
class _Entry:
    expires_at: float
    ttl: str


class PrefixCache:
    """Cached prefixes per namespace; every method takes ``now`` so callers own the clock."""

    def __init__(self, *, lookback: int = DEFAULT_LOOKBACK) -> None:
        self.lookback = lookback
        self._entries: dict[tuple[Hashable, bytes], _Entry] = {}
        self._calls = 0

    def clear(self) -> None:
        self._entries.clear()

    def live_entries(self, now: float) -> int:
        return sum(1 for entry in self._entries.values() if entry.expires_at > now)

    def process(
        self,
        namespace: Hashable,
        blocks: Sequence[PrefixBlock],
        *,
        min_cacheable: int,
        now: float,
    ) -> CacheUsage:
        """Account one request: read the longest cached prefix, write new breakpoints, split the prompt."""
        self._calls += 1
        if self._calls % 1000 == 0:
            self._purge(now)
        hashes: list[bytes] = []
        cumulative: list[int] = []
        running = hashlib.sha256()
        total = 0
        for block in blocks:
            running.update(block.fingerprint.encode("utf-8"))
            running.update(b"\x00")
            hashes.append(running.copy().digest())
            total += block.tokens
            cumulative.append(total)
        breakpoints = [i for i, block in enumerate(blocks) if block.ttl is not None]

        read_at = self._find_read_point(namespace, hashes, breakpoints, now)
        read_tokens = cumulative[read_at] if read_at >= 0 else 0

        written = {"5m": 0, "1h": 0}
        covered = read_tokens
        for index in breakpoints:
            if index <= read_at or cumulative[index] < min_cacheable:
                continue
            ttl = blocks[index].ttl or "5m"
            self._entries[(namespace, hashes[index])] = _Entry(now + TTL_SECONDS[ttl], ttl)
            written[ttl] += cumulative[index] - covered
            covered = cumulative[index]
        return CacheUsage(
            input_tokens=total - covered,
            cache_read_input_tokens=read_tokens,
            cache_creation_5m=written["5m"],
            cache_creation_1h=written["1h"],
        )

    def _find_read_point(
        self, namespace: Hashable, hashes: Sequence[bytes], breakpoints: Sequence[int], now: float
    ) -> int:
        """Index of the last block of the longest live cached prefix within the lookback windows, else -1."""
        candidates: set[int] = set()
        for index in breakpoints:
            candidates.update(range(max(index - self.lookback, 0), index + 1))
        for position in sorted(candidates, reverse=True):
            entry = self._entries.get((namespace, hashes[position]))
            if entry is not None and entry.expires_at > now:
                entry.expires_at = now + TTL_SECONDS[entry.ttl]
                return position
        return -1

    def _purge(self, now: float) -> None:
        expired = [key for key, entry in self._entries.items() if entry.expires_at <= now]
        for key in expired:
            del self._entries[key]

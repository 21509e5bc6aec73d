"""The Claude model table: context window, output limit, minimum cacheable prefix and prices; call cost.

Figures as published by Anthropic (models overview, each model's overview and what's-new page, the
pricing page, the compaction and prefix-check pages; table date 2026-11). `context_window` is the window
the model takes at its standard price: 1M tokens at one rate on the 5.x generation, 200K on the 4.x
models (their 1M beta is billed higher above 200K and is not used here). What compaction plans for is the
planned window (`context.planned_window`, passed in as `context_override`), at most this. Unknown models
get conservative defaults: the smallest window and output limit, the highest minimum cacheable length
and the most expensive prices in the table, so neither the context nor the cost is ever under-estimated.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from agent.usage import Usage

logger = logging.getLogger(__name__)

CacheTTL = Literal["5m", "1h"]
TTL_SECONDS: Final[Mapping[CacheTTL, float]] = {"5m": 300.0, "1h": 3600.0}
"""How long a cache entry lives after the request that wrote or last read it."""

CACHE_WRITE_5M_MULTIPLIER: Final = 1.25
CACHE_WRITE_1H_MULTIPLIER: Final = 2.0
CACHE_READ_MULTIPLIER: Final = 0.1
_PER_MTOK: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class CachePrices:
    """A model's prompt-cache prices as multiples of its base input price. Writes cost 1.25x (five
    minutes) and 2x (an hour) on every model; a read costs 0.1x on most, less on some of the newest."""

    read: float = CACHE_READ_MULTIPLIER
    write_5m: float = CACHE_WRITE_5M_MULTIPLIER
    write_1h: float = CACHE_WRITE_1H_MULTIPLIER

    def write(self, ttl: CacheTTL) -> float:
        return self.write_1h if ttl == "1h" else self.write_5m


STANDARD_CACHE_PRICES: Final = CachePrices()


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """Limits and prices (USD per million tokens) of one model."""

    name: str
    context_window: int
    max_output: int
    min_cacheable_tokens: int
    input_per_mtok: float
    output_per_mtok: float
    deprecated: bool = False
    known: bool = True
    """False for the conservative stand-in returned for a model missing from the table."""
    server_compaction: bool = False
    """The Messages API's server-side compaction (`compact_20260112`) is available for this model."""
    cache: CachePrices = STANDARD_CACHE_PRICES
    """Prompt-cache prices relative to `input_per_mtok`: what the cache policy weighs its choices with."""
    long_prompt_above: int | None = None
    """Prompts longer than this (input, cache writes and reads together) are billed at
    `long_prompt_factor` times every price of the call; None: one price at any length."""
    long_prompt_factor: float = 1.0
    preserved_thinking: bool = False
    """Thinking blocks are bound to the model and to everything before them (the prefix check): an
    edit of the system prompt, the tools or an earlier message invalidates the blocks after it, so a
    request sends a block back only while nothing before it changed (`agent.thinking`)."""
    mid_conversation_system: bool = False
    """Accepts `role: "system"` messages right after a user turn: a note to the model (a pin change)
    appended instead of rewriting the system prompt."""
    adaptive_thinking_default: bool = False
    """Thinks adaptively when no `thinking` is sent (and counts it toward `max_tokens`)."""

    @property
    def cache_write_5m_per_mtok(self) -> float:
        return self.input_per_mtok * self.cache.write_5m

    @property
    def cache_write_1h_per_mtok(self) -> float:
        return self.input_per_mtok * self.cache.write_1h

    @property
    def cache_read_per_mtok(self) -> float:
        return self.input_per_mtok * self.cache.read

    def cache_write_per_mtok(self, ttl: CacheTTL) -> float:
        return self.input_per_mtok * self.cache.write(ttl)

    def price_factor(self, prompt_tokens: int) -> float:
        """The factor on every price of a call whose prompt has `prompt_tokens` (1.0 but for long
        prompts on a model that bills them higher)."""
        long = self.long_prompt_above is not None and prompt_tokens > self.long_prompt_above
        return self.long_prompt_factor if long else 1.0


_K: Final = 1_000

MODELS: Final[Mapping[str, ModelInfo]] = {
    m.name: m
    for m in (
        # Minimum cacheable prefix per model, as documented (2026-11): below it the API caches nothing,
        # so the cache plan never marks a shorter prompt and the cost model never counts a write.
        # The current generation, 1M tokens at one price: cache reads at 0.05x (Opus 5.5, Sonnet 5.5,
        # cut from 0.1x on 2026-10-07), 0.025x (Fable 5.1 and 5.2), 0.1x (Haiku 5.5).
        ModelInfo(
            "claude-opus-5-5",
            1_000 * _K,
            128 * _K,
            512,
            4.0,
            20.0,
            cache=CachePrices(read=0.05),
            server_compaction=True,
            mid_conversation_system=True,
            preserved_thinking=True,
            adaptive_thinking_default=True,
        ),
        ModelInfo(
            "claude-sonnet-5-5",
            1_000 * _K,
            128 * _K,
            512,
            2.0,
            10.0,
            cache=CachePrices(read=0.05),
            server_compaction=True,
            mid_conversation_system=True,
            preserved_thinking=True,
            adaptive_thinking_default=True,
        ),
        # Released 2026-11-09; not (yet) among the compaction page's supported models.
        ModelInfo(
            "claude-fable-5-2",
            1_000 * _K,
            128 * _K,
            512,
            8.0,
            40.0,
            cache=CachePrices(read=0.025),
            preserved_thinking=True,
            adaptive_thinking_default=True,
        ),
        ModelInfo(
            "claude-fable-5-1",
            1_000 * _K,
            128 * _K,
            512,
            10.0,
            50.0,
            cache=CachePrices(read=0.025),
            server_compaction=True,
            preserved_thinking=True,
            adaptive_thinking_default=True,
        ),
        # $0.10 / $0.50 for prompts up to 100K tokens; a longer prompt (input, cache writes and reads
        # together) pays five times every price of the call, output included. Its minimum cacheable
        # prefix is not stated in the docs: taken as its generation's 512.
        ModelInfo(
            "claude-haiku-5-5",
            1_000 * _K,
            128 * _K,
            512,
            0.1,
            0.5,
            long_prompt_above=100 * _K,
            long_prompt_factor=5.0,
            server_compaction=True,
            mid_conversation_system=True,
            preserved_thinking=True,
            adaptive_thinking_default=True,
        ),
        # Legacy since the 5.5 models, still served.
        ModelInfo(
            "claude-fable-5",
            1_000 * _K,
            128 * _K,
            512,
            10.0,
            50.0,
            server_compaction=True,
            adaptive_thinking_default=True,
        ),
        ModelInfo(
            "claude-opus-5",
            1_000 * _K,
            128 * _K,
            512,
            5.0,
            25.0,
            server_compaction=True,
            adaptive_thinking_default=True,
        ),
        ModelInfo(
            "claude-sonnet-5",
            1_000 * _K,
            128 * _K,
            1024,
            2.0,
            10.0,
            server_compaction=True,
            adaptive_thinking_default=True,
        ),
        ModelInfo(
            "claude-opus-4-8",
            200 * _K,
            128 * _K,
            1024,
            5.0,
            25.0,
            server_compaction=True,
            mid_conversation_system=True,
        ),
        ModelInfo("claude-opus-4-7", 200 * _K, 128 * _K, 2048, 5.0, 25.0, server_compaction=True),
        ModelInfo("claude-opus-4-6", 200 * _K, 128 * _K, 4096, 5.0, 25.0, server_compaction=True),
        ModelInfo("claude-opus-4-5", 200 * _K, 64 * _K, 4096, 5.0, 25.0),
        ModelInfo("claude-opus-4-1", 200 * _K, 32 * _K, 1024, 15.0, 75.0),
        ModelInfo("claude-sonnet-4-6", 200 * _K, 64 * _K, 1024, 3.0, 15.0, server_compaction=True),
        # End of life 2026-11-30; the SDK warns when it is used.
        ModelInfo("claude-sonnet-4-5", 200 * _K, 64 * _K, 1024, 3.0, 15.0, deprecated=True),
        ModelInfo("claude-haiku-4-5", 200 * _K, 64 * _K, 4096, 1.0, 5.0),
    )
}

_UNKNOWN_CONTEXT: Final = min(m.context_window for m in MODELS.values())
_UNKNOWN_MAX_OUTPUT: Final = min(m.max_output for m in MODELS.values())
_UNKNOWN_MIN_CACHEABLE: Final = max(m.min_cacheable_tokens for m in MODELS.values())
_UNKNOWN_INPUT: Final = max(m.input_per_mtok for m in MODELS.values())
_UNKNOWN_OUTPUT: Final = max(m.output_per_mtok for m in MODELS.values())

_PROVIDER_PREFIX = re.compile(r"^(?:.*/)?(?:[a-z]+\.)?(?:anthropic\.)?(?=claude)")
"""`anthropic/claude-...` (OpenRouter), `us.anthropic.claude-...` / `anthropic.claude-...` (Bedrock)."""
_VERSION_SUFFIX = re.compile(r"(?:[-@]\d{8})?(?:-v\d+(?::\d+)?)?(?:-latest)?$")
"""A release date (`-20251001`, Vertex `@20251001`), a Bedrock revision (`-v1:0`) or `-latest`."""

_warned: set[str] = set()
_warned_lock = threading.Lock()


def canonical_model_name(name: str) -> str:
    """Table key for a model id: provider prefixes, release dates and revisions removed, dots as dashes."""
    base = _PROVIDER_PREFIX.sub("", name.strip().lower())
    base = _VERSION_SUFFIX.sub("", base)
    return base.replace(".", "-")


def _unknown(name: str) -> ModelInfo:
    with _warned_lock:
        first = name not in _warned
        _warned.add(name)
    if first:
        logger.warning(
            "model %r is not in the model table; assuming a %d-token window and the highest known prices",
            name,
            _UNKNOWN_CONTEXT,
        )
    return ModelInfo(
        name=name,
        context_window=_UNKNOWN_CONTEXT,
        max_output=_UNKNOWN_MAX_OUTPUT,
        min_cacheable_tokens=_UNKNOWN_MIN_CACHEABLE,
        input_per_mtok=_UNKNOWN_INPUT,
        output_per_mtok=_UNKNOWN_OUTPUT,
        known=False,
    )


def lookup_model(name: str, *, context_override: int | None = None) -> ModelInfo:
    """The table entry for `name` (dated and provider-prefixed ids resolve), or conservative defaults."""
    info = MODELS.get(canonical_model_name(name)) or _unknown(name)
    if context_override is not None:
        if context_override <= 0:
            raise ValueError(f"context_override must be positive, got {context_override}")
        info = dataclasses.replace(info, context_window=context_override)
    return info


WEB_SEARCH_USD: Final = 0.01
"""The server's web search tool: $10 per 1,000 searches (its results are billed as input tokens)."""


def cost_usd(model: ModelInfo | str, usage: Usage, *, ttl: CacheTTL = "5m") -> float:
    """USD for one call: uncached input, cache writes (one-hour ones at their price where the API says
    which they were, else all at `ttl`'s), cache reads, output, and the web searches it ran."""
    info = lookup_model(model) if isinstance(model, str) else model
    one_hour = usage.one_hour_writes
    if one_hour is None:
        writes = usage.cache_creation_input_tokens * info.cache_write_per_mtok(ttl)
    else:
        five_minute = max(0, usage.cache_creation_input_tokens - one_hour)
        writes = one_hour * info.cache_write_per_mtok("1h") + five_minute * info.cache_write_per_mtok("5m")
    total = (
        usage.input_tokens * info.input_per_mtok
        + writes
        + usage.cache_read_input_tokens * info.cache_read_per_mtok
        + usage.output_tokens * info.output_per_mtok
    )
    searches = usage.web_search_requests * WEB_SEARCH_USD
    return total * info.price_factor(usage.prompt_tokens) / _PER_MTOK + searches


WEB_TOOLS_DATE: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        (
            "claude-opus-5-5",
            "claude-sonnet-5-5",
            "claude-haiku-5-5",
            "claude-fable-5-2",
            "claude-fable-5-1",
            "claude-fable-5",
            "claude-opus-5",
            "claude-sonnet-5",
        ),
        "20260318",
    ),
    **dict.fromkeys(
        ("claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6"), "20260209"
    ),
}
"""The newest dated version of the server's web tools each model takes (`web_search_20260209` and later:
dynamic filtering, 4.6 models and newer); a model not listed takes the first ones (`web_search_20250305`,
`web_fetch_20250910`)."""


def web_tools_date(model: ModelInfo) -> str:
    """The newest web tool version date the model takes (see `WEB_TOOLS_DATE`)."""
    return WEB_TOOLS_DATE.get(canonical_model_name(model.name), "20250910")

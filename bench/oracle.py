"""Input cost of a recorded request sequence: as billed, and the hindsight lower bound (the oracle).

The oracle sees every request of a run at once. Each prompt is split into the prefix blocks the cache
keys on (block k of a request stands for the whole prefix up to k), and for every distinct prefix the
times it was sent. A dynamic program then picks, per use, the cheapest of: pay it uncached (1x), write
it with a 5-minute marker (1.25x) or a one-hour marker (2x), or read it (0.1x) when the previous use
kept it alive (gap within the TTL of the marker it was written with; a read refreshes it). Prefixes
shorter than the model's minimum cacheable length can only be paid uncached. A block whose prefix is
shorter than that minimum cannot end a cache entry, so it is only ever read or written with the first
block after it that reaches the minimum: the oracle prices them as one block. (Priced on its own, the
short opening every chat shares, the system prompt and tools, could be read by one chat from another's
entry, which no request can.) It ignores the API's limits of four breakpoints and a 20-block lookback,
so no real policy that only chooses markers can beat it.

With `keep_alive`, it may also keep an entry alive across a longer gap by refreshing it (a read, 0.1x,
once per TTL of silence), as the cache keep-alive job does; that bound holds for policies that refresh
too. Keep-alive refreshes themselves (`max_tokens: 0` requests) are never uses: the oracle decides its
own.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.models import CachePrices, lookup_model
from tests.fakes.anthropic.cache import serialize_prefix

FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0
_PER_MTOK = 1_000_000


@dataclass(frozen=True, slots=True)
class SentRequest:
    """What the oracle and the bill need from one answered API call."""

    at: float
    body: Mapping[str, Any]
    usage: Mapping[str, Any]


def billed_input_usd(requests: Iterable[SentRequest], *, with_output: bool = False) -> float:
    """Input cost as the API bills it: uncached input, writes at their TTL's price, reads (every
    iteration of a call that compacted server-side: its summarizing one and its reply), each call at the
    price tier of its whole prompt (`ModelInfo.price_factor`); `with_output` adds the output tokens."""
    total = 0.0
    for r in requests:
        model = lookup_model(str(r.body["model"]))
        for u in r.usage.get("iterations") or [r.usage]:
            split = u.get("cache_creation") or {}
            five = int(split.get("ephemeral_5m_input_tokens", u["cache_creation_input_tokens"]))
            hour = int(split.get("ephemeral_1h_input_tokens", 0))
            uncached, read = int(u["input_tokens"]), int(u["cache_read_input_tokens"])
            output = int(u.get("output_tokens", 0)) if with_output else 0
            usd = (
                uncached * model.input_per_mtok
                + five * model.cache_write_per_mtok("5m")
                + hour * model.cache_write_per_mtok("1h")
                + read * model.cache_read_per_mtok
                + output * model.output_per_mtok
            )
            total += usd * model.price_factor(uncached + five + hour + read) / 1_000_000
    return total


def _hold(gap: float, ttl: float, keep_alive: bool, read: float) -> float:
    """The reads that carry an entry of `ttl` across `gap` to the next use (inf: it expires)."""
    if gap <= ttl:
        return read
    return read * math.ceil(gap / ttl) if keep_alive else math.inf


def _best_multiplier(
    uses: list[tuple[float, bool]], *, prices: CachePrices, keep_alive: bool = False
) -> float:
    """Cheapest total multiplier (x base price) for one prefix block over its uses (time, cacheable),
    where a use may write the cache only if its request reaches the model's minimum cacheable length."""
    inf = math.inf
    none, five, hour = inf, inf, inf
    previous: float | None = None
    for now, cacheable in uses:
        best = min(none, five, hour) if previous is not None else 0.0
        gap = now - previous if previous is not None else inf
        read_five = five + _hold(gap, FIVE_MINUTES, keep_alive, prices.read) if previous is not None else inf
        read_hour = hour + _hold(gap, ONE_HOUR, keep_alive, prices.read) if previous is not None else inf
        # A block read now may ride along in a longer prefix this request writes with either TTL,
        # so after a read it can hold either lifetime (the API's advancing one-hour entry).
        read = min(read_five, read_hour)
        none = best + 1.0
        five = min(best + prices.write_5m if cacheable else inf, read)
        hour = min(best + prices.write_1h if cacheable else inf, read)
        previous = now
    return min(none, five, hour)


def is_refresh(request: SentRequest) -> bool:
    """A keep-alive refresh: the prompt resent with `max_tokens: 0`, nothing generated."""
    return int(request.body.get("max_tokens", 1)) == 0


def oracle_input_usd(
    requests: Iterable[SentRequest], *, min_cacheable: Mapping[str, int], keep_alive: bool = False
) -> float:
    """The hindsight lower bound of the module docstring, in USD."""
    uses: dict[tuple[str, int], list[tuple[float, bool]]] = defaultdict(list)
    tokens_of: dict[tuple[str, int], int] = {}
    for r in requests:
        if is_refresh(r):
            continue
        model = str(r.body["model"])
        floor = min_cacheable.get(model, lookup_model(model).min_cacheable_tokens)
        blocks = serialize_prefix(r.body)
        cacheable = sum(b.tokens for b in blocks) >= floor
        prefix_hash = prefix_tokens = pending = 0
        for n, block in enumerate(blocks, start=1):
            prefix_hash = hash((prefix_hash, block.fingerprint))
            prefix_tokens += block.tokens
            pending += block.tokens
            if prefix_tokens < floor and n < len(blocks):
                continue  # too short to end an entry: priced with the block that reaches the minimum
            key = (model, prefix_hash)
            uses[key].append((r.at, cacheable))
            tokens_of.setdefault(key, pending)
            pending = 0
    total = 0.0
    for key, times in uses.items():
        info = lookup_model(key[0])
        multiplier = _best_multiplier(times, prices=info.cache, keep_alive=keep_alive)
        total += tokens_of[key] * multiplier * info.input_per_mtok / _PER_MTOK
    return total

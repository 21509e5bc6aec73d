"""Money the prompt cache wasted, from the usage of consecutive calls of one session (pure).

Two kinds, both read from what the API reported:

- **writes never read**: tokens a call wrote to the cache that the session's next call did not read,
  because it came after the entry's TTL or resent a different prefix; the last call's writes count
  once their TTL has passed with no call. Priced at what the write cost.
- **expired re-sends**: tokens the cache held after a call that the next call, sent after the TTL but
  within twice the TTL ("had just expired"), had to buy again. Priced at what they cost on top of the
  read they would have been.

A call's TTL is the longest marker it carried (`llm_calls.cache_ttl`), so a short tail written beside
a one-hour entry counts as unread when the next call reads only the hour entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agent.models import TTL_SECONDS, CacheTTL, lookup_model

_PER_MTOK = 1_000_000


@dataclass(frozen=True, slots=True)
class CacheCall:
    """One call's cache usage: when (seconds), which model, and its token counts."""

    at: float
    model: str
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    ttl: CacheTTL | None
    refresh: bool = False
    """A keep-alive refresh (`agent.caching.keepalive`): it keeps what it reads alive and is not a prompt
    of the conversation (left out of the hit ratio)."""

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True, slots=True)
class CacheWaste:
    """Wasted tokens and USD by kind, plus the reads and prompts for the hit ratio."""

    unread_write_tokens: int = 0
    unread_write_usd: float = 0.0
    expired_resend_tokens: int = 0
    expired_resend_usd: float = 0.0
    read_tokens: int = 0
    prompt_tokens: int = 0
    refreshes: int = 0
    refreshes_unused: int = 0
    """Keep-alive refreshes, and those the chat's next call did not come in time to use."""
    unused_refresh_usd: float = 0.0

    def __add__(self, other: CacheWaste) -> CacheWaste:
        return CacheWaste(
            self.unread_write_tokens + other.unread_write_tokens,
            self.unread_write_usd + other.unread_write_usd,
            self.expired_resend_tokens + other.expired_resend_tokens,
            self.expired_resend_usd + other.expired_resend_usd,
            self.read_tokens + other.read_tokens,
            self.prompt_tokens + other.prompt_tokens,
            self.refreshes + other.refreshes,
            self.refreshes_unused + other.refreshes_unused,
            self.unused_refresh_usd + other.unused_refresh_usd,
        )

    @property
    def usd(self) -> float:
        return self.unread_write_usd + self.expired_resend_usd + self.unused_refresh_usd

    @property
    def hit_ratio(self) -> float | None:
        return self.read_tokens / self.prompt_tokens if self.prompt_tokens else None


def _usd(call: CacheCall, tokens: int, multiplier: float) -> float:
    """`tokens` at `multiplier` x the input price of `call`'s model, at the price of its prompt's size."""
    info = lookup_model(call.model)
    return tokens * info.input_per_mtok * multiplier * info.price_factor(call.prompt_tokens) / _PER_MTOK


def between(previous: CacheCall, current: CacheCall | None, *, now: float) -> CacheWaste:
    """What `previous`'s writes and `current`'s re-sends wasted (`current` None: no call since, as of
    `now`; an entry still inside its TTL is not judged yet)."""
    ttl = TTL_SECONDS[previous.ttl or "5m"]
    held = previous.cache_read_tokens + previous.cache_write_tokens
    gap = (current.at if current is not None else now) - previous.at
    if current is None or gap > ttl:
        if gap <= ttl:
            return CacheWaste()
        unread = previous.cache_write_tokens
        resent = 0
        if current is not None and gap <= 2 * ttl:
            resent = max(min(held, current.prompt_tokens) - current.cache_read_tokens, 0)
    else:
        unread = max(min(previous.cache_write_tokens, held - current.cache_read_tokens), 0)
        resent = 0
    prices = lookup_model(previous.model).cache
    paid = 1.0 if current is None or current.cache_write_tokens == 0 else prices.write(current.ttl or "5m")
    if previous.refresh and (current is None or gap > ttl):  # kept alive for nothing
        wasted = CacheWaste(
            refreshes_unused=1,
            unused_refresh_usd=_usd(previous, previous.cache_read_tokens, prices.read),
        )
    else:
        wasted = CacheWaste()
    return wasted + CacheWaste(
        unread_write_tokens=unread,
        unread_write_usd=_usd(previous, unread, prices.write(previous.ttl or "5m")),
        expired_resend_tokens=resent,
        expired_resend_usd=_usd(previous, resent, paid - prices.read),
    )


def session_waste(calls: Iterable[CacheCall], *, now: float) -> CacheWaste:
    """The waste over one session's calls (in time order), the last one judged as of `now`."""
    total = CacheWaste()
    previous: CacheCall | None = None
    for call in calls:
        if call.refresh:
            total += CacheWaste(refreshes=1)
        else:
            total += CacheWaste(read_tokens=call.cache_read_tokens, prompt_tokens=call.prompt_tokens)
        if previous is not None:
            total += between(previous, call, now=now)
        previous = call
    if previous is not None:
        total += between(previous, None, now=now)
    return total

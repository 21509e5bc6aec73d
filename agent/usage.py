"""Token usage as the Anthropic API reports it, for one call."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    """Uncached input tokens (after the last cache breakpoint)."""
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_1h_input_tokens: int | None = None
    """Of the cache writes, those of one-hour entries, when the API says (None: it did not)."""
    web_search_requests: int = 0
    """Searches the server's web search tool ran (billed per search)."""
    web_fetch_requests: int = 0
    """Pages the server's web fetch tool fetched (tokens only, no fee)."""

    @property
    def one_hour_writes(self) -> int | None:
        """The one-hour cache writes: as reported, 0 when there were no writes, else None (not said)."""
        if self.cache_creation_1h_input_tokens is not None:
            return self.cache_creation_1h_input_tokens
        return 0 if self.cache_creation_input_tokens == 0 else None

    @property
    def prompt_tokens(self) -> int:
        """The full prompt size the model saw: uncached + cache write + cache read."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            _sum_known(self.one_hour_writes, other.one_hour_writes),
            self.web_search_requests + other.web_search_requests,
            self.web_fetch_requests + other.web_fetch_requests,
        )


def _sum_known(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b

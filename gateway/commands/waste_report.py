"""The `/stats` line about the prompt cache's waste (`agent.caching.waste`)."""

from __future__ import annotations

from agent.caching.waste import CacheWaste


def waste_line(waste: CacheWaste) -> str:
    """One line: money on cache writes never read and on re-sending prefixes that had just expired."""
    hit = f"{waste.hit_ratio:.0%}" if waste.hit_ratio is not None else "n/a"
    line = (
        f"Cache waste: ${waste.unread_write_usd:.4f} on writes never read "
        f"({waste.unread_write_tokens:,} tokens), ${waste.expired_resend_usd:.4f} re-sending prefixes "
        f"that had just expired ({waste.expired_resend_tokens:,} tokens); reply hit ratio {hit}"
    )
    if waste.refreshes:
        line += (
            f"; keep-alive: {waste.refreshes} refresh(es), {waste.refreshes_unused} not followed by a "
            f"message in time (${waste.unused_refresh_usd:.4f})"
        )
    return line

"""The `/stats` line about the prompt cache's waste (`agent.caching.waste`)."""

from __future__ import annotations

from agent.caching.waste import CacheWaste
from gateway.commands.stats_report import Line, plural


def waste_line(waste: CacheWaste, *, detail: bool = True) -> Line:
    """Money on cache writes never read and on re-sending prefixes that had just expired."""
    hit = f"{waste.hit_ratio:.0%}" if waste.hit_ratio is not None else "n/a"
    text = (
        f"${waste.unread_write_usd:.4f} on writes never read "
        f"({waste.unread_write_tokens:,} tokens), ${waste.expired_resend_usd:.4f} re-sending prefixes "
        f"that had just expired ({waste.expired_resend_tokens:,} tokens); reply hit ratio {hit}"
    )
    if waste.refreshes:
        text += (
            f"; keep-alive: {plural(waste.refreshes, 'refresh', 'refreshes')}, "
            f"{waste.refreshes_unused:,} not followed by a message in time (${waste.unused_refresh_usd:.4f})"
        )
    return Line("Cache waste", text, detail=detail)

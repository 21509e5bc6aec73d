"""The budget lines of `/stats` (pure): each cap that applies to the chat, with what is spent and held
against it and when it resets."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gateway.commands.stats_report import Line
from gateway.reply.wording import resets_in
from gateway.spending.budget import Standing


def budget_lines(standings: Sequence[Standing], now: datetime) -> list[Line]:
    lines = []
    for standing in standings:
        limit = standing.limit
        share = (standing.spent_usd + standing.held_usd) / limit.cap_usd
        held = f" (+${standing.held_usd:.4f} in flight)" if standing.held_usd >= 0.00005 else ""
        spent = f"${standing.spent_usd:.4f}{held} of ${limit.cap_usd:.2f} ({share:.0%})"
        resets = resets_in(limit.resets_at, now)
        lines.append(Line("Budget", f"{_owner(limit.name)} {spent}, resets {resets}"))
    return lines


def _owner(name: str) -> str:
    """`this chat's daily budget` -> `this chat's daily`; `your` becomes `the sender's`."""
    return name.removesuffix(" budget").replace("your ", "the sender's ")

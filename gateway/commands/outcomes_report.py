"""The `/stats` lines about what the model declined and what the API dropped (present only when either
happened)."""

from __future__ import annotations

from gateway.commands.stats_report import Line
from gateway.store.reports.call_outcomes import CallOutcomes


def outcomes_lines(outcomes: CallOutcomes) -> list[Line]:
    lines: list[Line] = []
    if outcomes.refusals:
        total = sum(outcomes.refusals.values())
        by = ", ".join(f"{c} {n}" for c, n in sorted(outcomes.refusals.items()))
        lines.append(Line("Declined by the model", f"{total} ({by})"))
    if outcomes.thinking_dropped:
        n = outcomes.thinking_dropped
        lines.append(
            Line("Thinking dropped by the API", f"{n} block{'s' if n != 1 else ''} (its prefix had changed)")
        )
    return lines

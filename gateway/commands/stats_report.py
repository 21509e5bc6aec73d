"""What `/stats` says (pure): a list of labelled lines, some only for `/stats detail`.

The headline is one number, how full this chat's context is, counted as the compaction thresholds count
it; every other size is labelled by what it is for and shown in the detail view. A part that wants a line
of its own in `/stats` appends a `Line` to the report (`Line(label, text, detail=True)` for the detail
view) instead of editing a formatted string.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent.models import WEB_SEARCH_USD
from gateway.commands.context_size import ContextSize
from gateway.store import ChatStats, CompactionRecord, GlobalStats, UsageTotals

BAR_WIDTH = 20
DETAIL_HINT = "/stats detail shows how the context size is counted, what fills it, and the cache's numbers"


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    text: str
    detail: bool = False
    """Shown only by `/stats detail`."""

    def render(self) -> str:
        return f"{self.label}: {self.text}" if self.label else self.text


@dataclass
class Report:
    title: str
    lines: list[Line] = field(default_factory=list)

    def add(self, label: str, text: str, *, detail: bool = False) -> None:
        self.lines.append(Line(label, text, detail))

    def extend(self, lines: Iterable[Line]) -> None:
        self.lines.extend(lines)

    def render(self, *, detail: bool = False) -> str:
        shown = [line.render() for line in self.lines if detail or not line.detail]
        hidden = any(line.detail for line in self.lines)
        title = f"{self.title} (detail)" if detail else self.title
        return "\n".join([title, *shown, *([] if detail or not hidden else [DETAIL_HINT])])


def plural(count: int, one: str, many: str | None = None) -> str:
    """`1 call`, `2 calls`, `1,204 replies` (thousands separated)."""
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def usage_bar(fraction: float, width: int = BAR_WIDTH) -> str:
    fraction = max(0.0, min(1.0, fraction))
    filled = round(fraction * width)
    return "[" + "█" * filled + "░" * (width - filled) + "]"


def usage_text(u: UsageTotals) -> str:
    return (
        f"read {u.cache_read_tokens:,} / write {u.cache_creation_tokens:,} / uncached "
        f"{u.input_tokens:,} tokens — hit {u.cache_hit_rate:.0%} over {plural(u.calls, 'call')}"
    )


def context_lines(
    size: ContextSize, *, model: str, compressor_threshold: float, hygiene_threshold: float
) -> list[Line]:
    frac = size.tokens / size.window if size.window else 0.0
    headline = (
        f"{usage_bar(frac)} {frac:.0%} full ({size.tokens:,} of {size.window:,} tokens); compacted "
        f"after a reply past {compressor_threshold:.0%}, before a turn past {hygiene_threshold:.0%}"
    )
    if size.reported is None:
        how = f"{size.tokens:,} tokens, estimated from the stored messages (no request sent yet)"
    else:
        how = (
            f"{size.tokens:,} tokens = {size.reported:,} counted by the API for the last request "
            f"+ ~{size.since:,} estimated for what was added since"
        )
    return [
        Line("Model", f"{model} (window {size.window:,} tokens)"),
        Line("Context", headline),
        Line("Context size", how + "; the thresholds use this number", detail=True),
    ]


def chat_report(
    stats: ChatStats,
    *,
    context: Sequence[Line],
    today_cost: float,
    window_lines: Sequence[Line] = (),
    deliveries: dict[str, int] | None = None,
) -> Report:
    report = Report("Stats for this chat")
    report.extend(context)
    report.add("Messages", f"{stats.active_messages:,} active, {stats.archived_messages:,} archived")
    report.extend(window_lines)
    recent, total = stats.usage_recent, stats.usage_total
    report.add("Prompt cache", cache_hit_text(recent, total))
    report.add("Cache (recent)", usage_text(recent), detail=True)
    report.add("Cache (lifetime)", usage_text(total), detail=True)
    report.add("Cost", f"${total.cost_usd:.4f} in all, ${today_cost:.4f} in the last 24 h")
    if deliveries:
        report.extend([delivery_line(deliveries)])
    report.extend(compaction_lines(stats))
    return report


def cache_hit_text(recent: UsageTotals, total: UsageTotals) -> str:
    """The share of prompt tokens read from cache, said once when the recent calls are all the calls."""
    if recent.calls >= total.calls:
        return (
            f"{total.cache_hit_rate:.0%} of prompt tokens read from cache over {plural(total.calls, 'call')}"
        )
    return (
        f"{recent.cache_hit_rate:.0%} of prompt tokens read from cache over the last "
        f"{plural(recent.calls, 'call')}, {total.cache_hit_rate:.0%} over all {total.calls:,}"
    )


def compaction_lines(stats: ChatStats) -> list[Line]:
    lines: list[Line] = []
    if stats.compactions:
        parts = [f"{t} {o} {n}" for (t, o), n in sorted(stats.compactions.items())]
        lines.append(Line("Compactions", ", ".join(parts)))
    else:
        lines.append(Line("Compactions", "none yet"))
    if stats.last_compaction is not None:
        lines.append(Line("Last compaction", last_compaction_text(stats.last_compaction)))
    paused_at = stats.engine_state.get("paused_at_tokens")
    if paused_at is not None:
        reason = stats.engine_state.get("pause_reason") or "no reason recorded"
        lines.append(
            Line(
                "Automatic compaction",
                f"paused at {int(paused_at):,} tokens after runs that did not help ({reason}); it resumes "
                "by itself once the conversation has grown, or now with /compact",
            )
        )
    return lines


def last_compaction_text(c: CompactionRecord) -> str:
    when = c.created_at.strftime("%Y-%m-%d %H:%M")
    undone = " (undone)" if c.undone else ""
    return (
        f"{c.trigger} {c.outcome}{undone} at {when} UTC — {c.messages_before}→{c.messages_after} messages "
        f"(~{c.tokens_before:,}→~{c.tokens_after:,} tokens of messages, without the system prompt and "
        f"tools) in {c.duration_ms / 1000:.1f} s"
        + (f"; {c.reason}" if c.outcome != "ok" and c.reason else "")
    )


def delivery_line(counts: dict[str, int]) -> Line:
    """Reply messages by delivery state ("failed" are lasting failures: blocked, chat gone, refused)."""
    sent, failed = counts.get("sent", 0), counts.get("failed", 0)
    text = f"{plural(sent, 'message')} delivered, {failed:,} failed"
    waiting = counts.get("pending", 0) + counts.get("sending", 0)
    return Line("Replies", text + (f", {waiting:,} waiting" if waiting else ""))


def global_report(g: GlobalStats) -> Report:
    report = Report("Stats across all chats")
    report.add(
        "Chats",
        f"{g.chats:,}; sessions: {g.sessions:,}; messages: {g.messages:,} ({g.archived_messages:,} archived)",
    )
    report.add("Compactions", f"{g.compactions:,}")
    report.add("Cache", usage_text(g.usage))
    report.add("Cost", f"${g.usage.cost_usd:.4f}")
    if g.busiest:
        report.add("", "Busiest chats:")
        for b in g.busiest:
            title = f" ({b.title})" if b.title else ""
            report.add(
                "", f"  {b.platform}:{b.chat_id}{title} — {plural(b.messages, 'message')}, ${b.cost_usd:.4f}"
            )
    return report


def web_lines(searches: int, fetches: int) -> list[Line]:
    """`/stats`: the lookups the API's web tools ran and the search fee (in the cost above too); none
    when there were none."""
    if not searches and not fetches:
        return []
    fee = searches * WEB_SEARCH_USD
    text = (
        f"{plural(searches, 'search', 'searches')}, {plural(fetches, 'page')} fetched; search fee ${fee:.2f}"
    )
    return [Line("Web lookups", text)]

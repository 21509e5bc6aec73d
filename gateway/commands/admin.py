"""Command handlers: /help, /new, /stats, /compact (plain async functions over explicit dependencies)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.models import ModelInfo
from agent.tokens import estimate_system
from gateway.commands import menu as commands
from gateway.commands.context_breakdown import breakdown, format_breakdown
from gateway.commands.menu import CommandContext, Handler
from gateway.commands.voice_report import voice_line
from gateway.commands.waste_report import waste_line
from gateway.compaction.compactor import Compactor
from gateway.errors import NothingToUndoError
from gateway.platforms.base import ChatKind
from gateway.reply.wording import compaction_result, too_short_to_compact
from gateway.store import (
    ChatLocks,
    ChatStats,
    CompactionRecord,
    GlobalStats,
    SessionRecord,
    Store,
    UsageTotals,
)
from gateway.turn.kit import SessionKit

BAR_WIDTH = 20


def usage_bar(fraction: float, width: int = BAR_WIDTH) -> str:
    fraction = max(0.0, min(1.0, fraction))
    filled = round(fraction * width)
    return "[" + "█" * filled + "░" * (width - filled) + "]"


def _usage_line(label: str, u: UsageTotals) -> str:
    return (
        f"{label}: read {u.cache_read_tokens:,} / write {u.cache_creation_tokens:,} / uncached "
        f"{u.input_tokens:,} tokens — hit {u.cache_hit_rate:.0%} over {u.calls} calls"
    )


def _compaction_line(c: CompactionRecord) -> str:
    when = c.created_at.strftime("%Y-%m-%d %H:%M")
    undone = " (undone)" if c.undone else ""
    return (
        f"Last compaction: {c.trigger} {c.outcome}{undone} at {when} UTC — "
        f"{c.messages_before}→{c.messages_after} "
        f"messages, {c.tokens_before:,}→{c.tokens_after:,} tokens ({c.duration_ms / 1000:.1f} s)"
        + (f"; {c.reason}" if c.outcome != "ok" and c.reason else "")
    )


def format_chat_stats(
    stats: ChatStats,
    *,
    model: ModelInfo,
    compressor_threshold: float,
    hygiene_threshold: float,
    today_cost: float,
    window_lines: Sequence[str] = (),
    deliveries: dict[str, int] | None = None,
) -> str:
    window = model.context_window
    current = stats.context_tokens
    frac = current / window if window else 0.0
    lines = [
        "Stats for this chat",
        f"Model: {model.name} (window {window:,} tokens)",
        f"Context: {usage_bar(frac)} {frac:.0%} ({current:,} / {window:,} tokens; compressor at "
        f"{compressor_threshold:.0%}, hygiene at {hygiene_threshold:.0%})",
        f"Messages: {stats.active_messages:,} active, {stats.archived_messages:,} archived",
        "Prompt: last reported "
        + (f"{stats.last_prompt_tokens:,}" if stats.last_prompt_tokens is not None else "n/a (no call yet)")
        + f" tokens; estimate of the active window {stats.active_tokens:,}",
        *window_lines,
        _usage_line("Cache (recent)", stats.usage_recent),
        _usage_line("Cache (lifetime)", stats.usage_total),
        f"Cost: ${stats.usage_total.cost_usd:.4f} lifetime, ${today_cost:.4f} in the last 24 h",
    ]
    if deliveries:
        lines.append(delivery_line(deliveries))
    if stats.compactions:
        parts = [f"{t} {o} {n}" for (t, o), n in sorted(stats.compactions.items())]
        lines.append("Compactions: " + ", ".join(parts))
    else:
        lines.append("Compactions: none yet")
    if stats.last_compaction is not None:
        lines.append(_compaction_line(stats.last_compaction))
    paused_at = stats.engine_state.get("paused_at_tokens")
    if paused_at is not None:
        reason = stats.engine_state.get("pause_reason") or "no reason recorded"
        lines.append(
            f"Automatic compaction: paused at {int(paused_at):,} tokens after runs that did not help "
            f"({reason}); it resumes by itself once the conversation has grown, or now with /compact"
        )
    return "\n".join(lines)


def delivery_line(counts: dict[str, int]) -> str:
    """Reply parts by delivery state ("failed" are lasting failures: blocked, chat gone, refused)."""
    line = f"Replies: {counts.get('sent', 0):,} parts delivered, {counts.get('failed', 0):,} failed"
    waiting = counts.get("pending", 0) + counts.get("sending", 0)
    return line + (f", {waiting:,} waiting" if waiting else "")


def format_global_stats(g: GlobalStats) -> str:
    lines = [
        "Stats across all chats",
        f"Chats: {g.chats:,}; sessions: {g.sessions:,}; "
        f"messages: {g.messages:,} ({g.archived_messages:,} archived)",
        f"Compactions: {g.compactions:,}",
        _usage_line("Cache", g.usage),
        f"Cost: ${g.usage.cost_usd:.4f}",
    ]
    if g.busiest:
        lines.append("Busiest chats:")
        lines.extend(
            f"  {b.platform}:{b.chat_id}{' (' + b.title + ')' if b.title else ''} — {b.messages:,} messages, "
            f"${b.cost_usd:.4f}"
            for b in g.busiest
        )
    return "\n".join(lines)


@dataclass
class AdminHandlers:
    store: Store
    locks: ChatLocks
    model: ModelInfo
    compressor_threshold: float
    hygiene_threshold: float
    kit: SessionKit
    compactor: Compactor
    protect_last_n: int
    clock: Callable[[], datetime]

    def handlers(self) -> dict[str, Handler]:
        return {"help": self.help, "new": self.new, "stats": self.stats, "compact": self.compact}

    async def help(self, ctx: CommandContext) -> str:
        return commands.help_text(is_admin=ctx.is_admin)

    async def new(self, ctx: CommandContext) -> str:
        async with self.locks.hold(ctx.chat_pk):
            old = await self.store.active_session(ctx.chat_pk)
            await self.store.new_session(ctx.chat_pk)
        return (
            "Started a fresh conversation. The previous one "
            f"({old.active_message_count:,} messages) is kept in the archive."
        )

    async def stats(self, ctx: CommandContext) -> str:
        if ctx.args.strip().lower() == "all":
            if ctx.message.chat.kind is not ChatKind.PRIVATE:
                return "/stats all shows every chat's numbers, so it only works in a private chat with me."
            counts = await self.store.delivery_counts()
            text = format_global_stats(await self.store.global_stats(top=5))
            text = f"{text}\n{delivery_line(counts)}" if counts else text
            voice = voice_line(await self.store.transcription_counts())
            text = f"{text}\n{voice}" if voice else text
            return f"{text}\n{waste_line(await self.store.cache_waste())}"
        if ctx.args.strip():
            return "Usage: /stats or /stats all"
        session = await self.store.active_session(ctx.chat_pk)  # a chat seen only via commands had none
        stats = await self.store.chat_stats(ctx.chat_pk)
        today = await self.store.cost_since(ctx.chat_pk, self.clock() - timedelta(days=1))
        text = format_chat_stats(
            stats,
            model=self.model,
            compressor_threshold=self.compressor_threshold,
            hygiene_threshold=self.hygiene_threshold,
            today_cost=today,
            window_lines=await self._window_lines(session, ctx.chat_pk),
            deliveries=await self.store.delivery_counts(ctx.chat_pk),
        )
        voice = voice_line(await self.store.transcription_counts(ctx.chat_pk))
        text = f"{text}\n{voice}" if voice else text
        return f"{text}\n{waste_line(await self.store.cache_waste(ctx.chat_pk))}"

    async def _window_lines(self, session: SessionRecord, chat_pk: int) -> list[str]:
        rows = await self.store.load_window(session.id)
        pins = [p.text for p in await self.store.pins(chat_pk)]
        system = self.kit.system_for(session, pins)
        parts = breakdown(
            rows, system_tokens=estimate_system(system), tool_tokens=self.kit.tool_tokens(chat_pk), pins=pins
        )
        return format_breakdown(parts)

    async def compact(self, ctx: CommandContext) -> str:
        args = ctx.args.strip()
        async with self.locks.hold(ctx.chat_pk):
            session = await self.store.active_session(ctx.chat_pk)
            if args.lower() == "undo":
                started = time.perf_counter()
                try:
                    record = await self.store.undo_last_compaction(session.id)
                except NothingToUndoError:
                    return "Nothing to undo: this conversation has no compaction that can be restored."
                return (
                    f"Undid the {record.trigger} compaction from {record.created_at:%Y-%m-%d %H:%M} UTC: "
                    f"{record.archived_count:,} messages restored from the archive "
                    f"({time.perf_counter() - started:.1f} s)."
                )
            pins = [p.text for p in await self.store.pins(ctx.chat_pk)]
            report = await self.compactor.compact(
                session, self.kit.engine(session, pins), trigger="manual", focus=args or None
            )
        if not report.changed and report.messages_before <= self.protect_last_n + 2:
            return too_short_to_compact(report, self.protect_last_n)
        return compaction_result(report)

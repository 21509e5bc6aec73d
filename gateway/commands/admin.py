"""Command handlers: /help, /new, /stats, /compact (plain async functions over explicit dependencies)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.models import ModelInfo
from agent.spending.periods import SpendFor
from agent.tokens import Calibration, estimate_system
from gateway.commands import menu as commands
from gateway.commands.budget_report import budget_lines
from gateway.commands.context_breakdown import Breakdown, breakdown, format_breakdown
from gateway.commands.context_size import ContextSize, context_size
from gateway.commands.menu import CommandContext, Handler
from gateway.commands.outcomes_report import outcomes_lines
from gateway.commands.reminders import reminder_stats
from gateway.commands.stats_report import (
    Line,
    Report,
    chat_report,
    context_lines,
    delivery_line,
    global_report,
    web_lines,
)
from gateway.commands.voice_report import voice_lines
from gateway.commands.waste_report import waste_line
from gateway.compaction.compactor import MANUAL, Compactor
from gateway.errors import NothingToUndoError
from gateway.platforms.base import ChatKind, CommandSpec
from gateway.reply.wording import compaction_result
from gateway.spending.budget import Budget, spender, spending_for
from gateway.store import ChatLocks, ReportStore, SessionRecord, Store
from gateway.turn.kit import SessionKit


async def all_chats_report(reports: ReportStore, semantic_recall: Callable[[], str] | None = None) -> Report:
    """`/stats all`: every chat at a glance, with the reply parts, the cache's waste, the model's
    refusals, the voice notes of all chats and the state of semantic recall."""
    counts = await reports.delivery_counts()
    report = global_report(await reports.global_stats(top=5))
    if counts:
        report.extend([delivery_line(counts)])
    report.extend([waste_line(await reports.cache_waste(), detail=False)])
    outcomes = await reports.call_outcomes()
    report.extend(outcomes_lines(outcomes))
    report.extend(web_lines(outcomes.web_searches, outcomes.web_fetches))
    report.extend(voice_lines(await reports.transcription_counts()))
    if semantic_recall is not None:
        report.add("Semantic recall", semantic_recall())
    return report


@dataclass
class AdminHandlers:
    store: Store
    locks: ChatLocks
    model: ModelInfo
    compressor_threshold: float
    hygiene_threshold: float
    calibration: Calibration
    """What `/stats` counts the context with, as the thresholds do."""
    kit: SessionKit
    """What a chat's engine, system prompt and tools are (`/compact`, what fills the window)."""
    compactor: Compactor
    protect_last_n: int
    clock: Callable[[], datetime]
    budget: Budget | None = None
    """The spending caps `/stats` shows against, and `/compact`'s summary is paid from."""
    semantic_recall: Callable[[], str] | None = None
    """The state of semantic recall for `/stats` (None: it is off)."""
    menu: tuple[CommandSpec, ...] = commands.COMMANDS
    """The commands this deployment offers, as `/help` lists them."""

    @property
    def reports(self) -> ReportStore:
        """What `/stats` reads for its report lines: the store's reports, nothing else."""
        return self.store

    def handlers(self) -> dict[str, Handler]:
        return {"help": self.help, "new": self.new, "stats": self.stats, "compact": self.compact}

    async def help(self, ctx: CommandContext) -> str:
        return commands.help_text(is_admin=ctx.is_admin, platform=ctx.message.chat.platform, menu=self.menu)

    async def new(self, ctx: CommandContext) -> str:
        async with self.locks.hold(ctx.chat_pk):
            old = await self.store.active_session(ctx.chat_pk)
            await self.store.new_session(ctx.chat_pk)
        return (
            "Started a fresh conversation. The previous one "
            f"({old.active_message_count:,} messages) is kept in the archive."
        )

    async def stats(self, ctx: CommandContext) -> str:
        args = ctx.args.strip().lower()
        if args == "all":
            if ctx.message.chat.kind is not ChatKind.PRIVATE:
                return "/stats all shows every chat's numbers, so it only works in a private chat with me."
            return (await all_chats_report(self.reports, self.semantic_recall)).render()
        if args not in ("", "detail"):
            return "Usage: /stats, /stats detail or /stats all"
        session = await self.store.active_session(ctx.chat_pk)  # a chat seen only via commands had none
        size = self.context_size(session)
        reports = self.reports
        stats = await reports.chat_stats(ctx.chat_pk)
        today = await reports.cost_since(ctx.chat_pk, self.clock() - timedelta(days=1))
        report = chat_report(
            stats,
            context=context_lines(
                size,
                model=self.model.name,
                compressor_threshold=self.compressor_threshold,
                hygiene_threshold=self.hygiene_threshold,
            ),
            today_cost=today,
            window_lines=await self._window_lines(session, ctx.chat_pk, size.tokens),
            deliveries=await reports.delivery_counts(ctx.chat_pk),
        )
        report.extend([waste_line(await reports.cache_waste(ctx.chat_pk))])
        report.extend(voice_lines(await reports.transcription_counts(ctx.chat_pk)))
        outcomes = await reports.call_outcomes(ctx.chat_pk)
        report.extend(outcomes_lines(outcomes))
        report.extend(web_lines(outcomes.web_searches, outcomes.web_fetches))
        report.extend(reminder_stats(await self.store.reminder_counts(ctx.chat_pk)))
        if self.semantic_recall is not None:
            report.add("Semantic recall", self.semantic_recall())
        if self.budget is not None:
            standings = await self.budget.standing(spender(ctx.message, ctx.chat_pk))
            report.extend(budget_lines(standings, self.clock()))
        return report.render(detail=args == "detail")

    def context_size(self, session: SessionRecord) -> ContextSize:
        """The chat's context as the thresholds count it (calibrated as they calibrate it)."""
        return context_size(session, calibrate=self.calibration.apply, window=self.model.context_window)

    async def window_breakdown(self, session: SessionRecord, chat_pk: int) -> Breakdown:
        """What fills the chat's window by part (`/stats detail`, the dashboard's chat page)."""
        rows = await self.store.load_window(session.id)
        pins = [p.text for p in await self.store.pins(chat_pk)]
        system = self.kit.system_for(session, pins)
        return breakdown(
            rows, system_tokens=estimate_system(system), tool_tokens=self.kit.tool_tokens(chat_pk), pins=pins
        )

    async def _window_lines(self, session: SessionRecord, chat_pk: int, context_tokens: int) -> list[Line]:
        return format_breakdown(await self.window_breakdown(session, chat_pk), context_tokens)

    async def compact(self, ctx: CommandContext) -> str:
        args = ctx.args.strip()
        if args.lower() == "undo":
            return (await self.undo_compaction(ctx.chat_pk)).text
        return (await self.compact_chat(ctx.chat_pk, spender(ctx.message, ctx.chat_pk), focus=args)).text

    async def undo_compaction(self, chat_pk: int) -> CompactAnswer:
        """`/compact undo` (and the dashboard's Undo): restore the window before the last compaction."""
        async with self.locks.hold(chat_pk):
            session = await self.store.active_session(chat_pk)
            started = time.perf_counter()
            try:
                record = await self.store.undo_last_compaction(session.id)
            except NothingToUndoError:
                return CompactAnswer(
                    False, "Nothing to undo: this conversation has no compaction that can be restored."
                )
        return CompactAnswer(
            True,
            f"Undid the {record.trigger} compaction from {record.created_at:%Y-%m-%d %H:%M} UTC: "
            f"{record.archived_count:,} messages restored from the archive "
            f"({time.perf_counter() - started:.1f} s).",
        )

    async def compact_chat(self, chat_pk: int, who: SpendFor, *, focus: str = "") -> CompactAnswer:
        """`/compact [focus]` (and the dashboard's Compact): one manual compaction, paid for by `who`."""
        async with self.locks.hold(chat_pk):
            session = await self.store.active_session(chat_pk)
            pins = [p.text for p in await self.store.pins(chat_pk)]
            with spending_for(who):
                report = await self.compactor.compact(
                    session, self.kit.engine(session, pins), trigger=MANUAL, focus=focus or None
                )
            after = await self.store.active_session(chat_pk)
        text = compaction_result(
            report,
            self.protect_last_n,
            context_before=self.context_size(session).tokens,
            context_after=self.context_size(after).tokens,
        )
        return CompactAnswer(report.changed and not report.idle, text)


@dataclass(frozen=True, slots=True)
class CompactAnswer:
    """What a manual compaction or undo did: whether it changed the window, and the answer in words."""

    changed: bool
    text: str

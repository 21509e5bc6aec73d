"""Wires the gateway: settings -> store, LLM client, context engine, tools, pipeline, adapters.

`Gateway` builds the parts, hands them the one way out to the platforms (`Platforms`), starts them in
order (after a restart: the spool, open reply parts, unanswered messages) and stops them within the
shutdown budget. The process around it (signals, opening the store and the clients) is `serve`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from agent.llm import LLMClient
from agent.tokens import Calibration, estimate_text
from gateway.app.budget_notices import BudgetNotices
from gateway.app.wiring import (
    authorization_policy,
    compaction_policy,
    context_engine,
    kit_settings,
    loop_config,
    main_model,
    model_status_line,
    spending_caps,
)
from gateway.commands import menu as commands
from gateway.commands.admin import AdminHandlers
from gateway.commands.pinning import PinHandlers
from gateway.commands.reminders import ReminderHandlers
from gateway.compaction.compactor import Compactor
from gateway.config import Settings
from gateway.dashboard.server import DashboardServer, build_dashboard
from gateway.embeddings.setup import Embeddings, embeddings_from
from gateway.intake import recovery
from gateway.intake.admission import Admission, RateLimiter
from gateway.intake.auth import Authorizer
from gateway.intake.pipeline import Pipeline
from gateway.intake.spool import Spool
from gateway.intake.voice import VoiceNotes
from gateway.jobs.cache_keeper import CacheKeeper
from gateway.jobs.maintenance import standard_jobs
from gateway.jobs.reminders import ReminderTicker, reminders_every
from gateway.jobs.scheduler import JobScheduler
from gateway.media.aging import MediaAging
from gateway.media.intake import MediaIntake
from gateway.media.prepare import MB, MediaLimits
from gateway.media.presence import MediaPresence
from gateway.media.wire import MediaCache, MediaRenderingClient
from gateway.metrics import Metrics, MetricsServer
from gateway.platforms.base import IncomingMessage, PlatformAdapter
from gateway.platforms.catalog import status_lines
from gateway.platforms.router import Platforms
from gateway.reply.outbox import Outbox
from gateway.reply.posting import ChatPoster
from gateway.spending.budget import Budget, SpendingClient
from gateway.store import ChatLocks, PinLimits, Store
from gateway.store.jobs.runs import JobRunLog
from gateway.store.locks.job_lock import JobLocks
from gateway.store.locks.leases import default_worker_name
from gateway.store.messages.media import MediaStore
from gateway.store.spend.ledger import SpendLedger
from gateway.transcription.transcriber import Transcriber, transcriber_from
from gateway.turn.kit import SessionKit
from gateway.turn.reminder_tool import ReminderDesk
from gateway.turn.runner import TurnRunner, TurnSettings
from gateway.turn.tasks import ChatTasks
from gateway.turn.tools import ChatTools

logger = logging.getLogger(__name__)

ADAPTER_STOP_RESERVE_S = 4.0
"""Of `shutdown_timeout_s`, what the adapters keep for stopping after the turns (see Gateway.stop)."""


class Gateway:
    """The running product: adapters in, pipeline, replies out."""

    def __init__(
        self,
        settings: Settings,
        adapters: Sequence[PlatformAdapter],
        *,
        store: Store,
        llm: LLMClient,
        summary_llm: LLMClient | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.settings = settings
        self.clock = clock
        """The one wall clock of the gateway's parts; each is given `now`, which reads it, so a test or a
        replay that sets it moves every part's time."""
        self.platforms = Platforms(adapters)
        self.store = store
        self.media_store = MediaStore(store.engine, clock=self.now)
        self.media_presence = MediaPresence()
        # Requests leave with stored media rendered; everything before works on the references.
        media_cache = MediaCache(self.media_store)
        self.model = main_model(settings)
        self.metrics = Metrics()
        # Claude's tokenizer is not tiktoken's: one calibration per process, learned from every reply call.
        self.calibration = Calibration(self.model.name)
        self.budget = self._budget()
        # Every call is held against the spending caps first, its media references still unrendered
        # (they carry their token cost); then its media are rendered for the wire.
        self.llm = SpendingClient(MediaRenderingClient(llm, media_cache), self.budget)
        self.summary_llm = (
            SpendingClient(MediaRenderingClient(summary_llm, media_cache), self.budget)
            if summary_llm
            else self.llm
        )
        self.locks = ChatLocks(store)
        self.spool = Spool(settings.spool_dir)
        self.embeddings: Embeddings | None = embeddings_from(settings.embeddings, store)
        self.transcriber: Transcriber | None = transcriber_from(settings.transcription)
        store.on_stored = self._on_stored
        self.metrics.track_spool(lambda: self.spool.depth)
        self.metrics.track_webhooks(adapters)
        if self.embeddings is not None:
            self.metrics.track_semantic_recall(self.embeddings.gauges)
        self.scheduler: JobScheduler | None = None
        self.metrics_server: MetricsServer | None = None
        self.dashboard: DashboardServer | None = None
        self.loop_config = loop_config(settings, self.model, self.calibration)
        self.policy = compaction_policy(settings, self.model)
        self.poster = ChatPoster(store=store, platforms=self.platforms)
        self.reminder_desk = (
            ReminderDesk(store=store, poster=self.poster, settings=settings.reminders, clock=self.now)
            if settings.reminders.enabled
            else None
        )
        self.kit = self._session_kit()
        self.compactor = Compactor(store=store, loop=self.loop_config, metrics=self.metrics)
        self.outbox = Outbox(
            store=store,
            platforms=self.platforms,
            metrics=self.metrics,
            streaming=settings.streaming.enabled,
            interval_s=settings.streaming.interval_s,
            group_interval_s=settings.streaming.group_interval_s,
        )
        self.turns = self._turn_runner()
        self.keeper = CacheKeeper(
            store=store,
            locks=self.locks,
            llm=self.llm,
            kit=self.kit,
            model=self.model,
            calibration=self.calibration,
            compacts_first=self.turns.compacts_first,
            presence=self.media_presence,
            metrics=self.metrics,
            budget=self.budget,
        )
        self.tasks = ChatTasks(turns=self.turns, platforms=self.platforms)
        self.reminders = ReminderTicker(
            store=store,
            poster=self.poster,
            tasks=self.tasks,
            settings=settings.reminders,
            clock=self.now,
            metrics=self.metrics,
        )
        self.pipeline = self._pipeline()
        self._spool_task: asyncio.Task[None] | None = None

    def now(self) -> datetime:
        return self.clock()

    def _budget(self) -> Budget:
        settings = self.settings
        worker = settings.fleet.worker_name or default_worker_name()
        return Budget(
            SpendLedger(self.store.engine, worker=worker, clock=self.now),
            spending_caps(settings),
            clock=self.now,
            calibration=self.calibration,
            crowded_wait_s=settings.limits.budget_crowded_wait_s,
            warn=BudgetNotices(
                self.store,
                self.platforms,
                telegram_admins=[str(admin) for admin in settings.telegram_admin_ids],
                share=settings.limits.budget_warn_share,
            ),
            observe=self.metrics.observe_spend,
        )

    def _session_kit(self) -> SessionKit:
        return SessionKit(
            kit_settings(self.settings, self.model, self.loop_config),
            engines=context_engine(self.settings),
            llm=self.llm,
            summary_llm=self.summary_llm,
            tools=ChatTools(
                store=self.store,
                media_store=self.media_store,
                presence=self.media_presence,
                semantic=self.embeddings.ranker.rank if self.embeddings is not None else None,
                shown_whole_below=int(self.model.context_window * self.loop_config.oversize_fraction),
                clock=self.now,
                reminders=self.reminder_desk,
            ),
            clock=self.now,
        )

    def _turn_runner(self) -> TurnRunner:
        settings = self.settings
        return TurnRunner(
            store=self.store,
            locks=self.locks,
            llm=self.llm,
            settings=TurnSettings(
                model=self.model,
                policy=self.policy,
                notify_compaction=settings.compression.notify,
                cache_mode=settings.prompt_caching.cache_ttl if settings.prompt_caching.enabled else None,
                answer_after_reset=settings.limits.answer_after_reset,
            ),
            kit=self.kit,
            calibration=self.calibration,
            compactor=self.compactor,
            outbox=self.outbox,
            platforms=self.platforms,
            clock=self.now,
            metrics=self.metrics,
            media_aging=MediaAging(self.media_store, self.media_presence),
            budget=self.budget,
        )

    def _pipeline(self) -> Pipeline:
        settings = self.settings
        self.admin = admin = AdminHandlers(
            store=self.store,
            locks=self.locks,
            model=self.model,
            compressor_threshold=settings.compression.threshold,
            hygiene_threshold=settings.compression.hygiene_threshold,
            calibration=self.calibration,
            kit=self.kit,
            compactor=self.compactor,
            protect_last_n=settings.compression.protect_last_n,
            clock=self.now,
            budget=self.budget,
            semantic_recall=self.embeddings.report if self.embeddings is not None else None,
        )
        pins = PinHandlers(
            store=self.store,
            limits=PinLimits(settings.pins.max_count, settings.pins.max_tokens),
            count_tokens=lambda text: self.calibration.apply(estimate_text(text)),
        )
        handlers = admin.handlers() | pins.handlers() | self._reminder_handlers()
        admin.menu = commands.offered(handlers)
        self.media = MediaIntake(
            self.media_store,
            limits=MediaLimits.for_window(
                self.model.context_window, image_long_edge=settings.media.image_long_edge
            ),
            max_bytes=settings.media.max_file_mb * MB,
            presence=self.media_presence,
            audio_max_bytes=settings.transcription.max_file_mb * MB if self.transcriber else None,
        )
        voice = (
            VoiceNotes(self.transcriber, log=self.store, observe=self.metrics.observe_transcription)
            if self.transcriber is not None
            else None
        )
        return Pipeline(
            store=self.store,
            auth=Authorizer(authorization_policy(settings)),
            tasks=self.tasks,
            platforms=self.platforms,
            command_handlers=handlers,
            admission=Admission(
                rate_limiter=RateLimiter(per_minute=settings.limits.user_messages_per_minute),
                budget=self.budget,
                answer_after_reset=settings.limits.answer_after_reset,
                clock=self.now,
            ),
            spool=self.spool,
            media=self.media,
            voice=voice,
            ack_reaction=settings.reply.ack_reaction,
            reply_quote_chars=settings.reply.quote_max_chars,
            count_tokens=self.kit.stored_tokens,
        )

    def _on_stored(self, role: str, count: int) -> None:
        self.metrics.message_stored(role, count)
        if self.embeddings is not None:
            self.embeddings.worker.notify()

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        for line in status_lines(self.settings):
            logger.info("%s", line)
        logger.info("%s", model_status_line(self.settings, self.model))
        await self._start_metrics_server()
        await self._start_dashboard()
        specs = list(self.admin.menu)
        for adapter in self.platforms:
            await adapter.start(self._on_update, specs)
            logger.info("%s: connected", adapter.name)
        if self.spool.depth:
            logger.info("spool: %d message(s) from before the restart to write through", self.spool.depth)
            await self.spool.drain(self.pipeline.replay)
        self._spool_task = asyncio.create_task(self.spool.run(self.pipeline.replay), name="spool-drain")
        open_parts = await self.outbox.resume()
        if open_parts:
            logger.info("%d reply part(s) recorded before the restart were sent", open_parts)
        await self.recover_unanswered()
        self._start_scheduler()
        if self.embeddings is not None:
            self.embeddings.worker.start()
            logger.info("%s", self.embeddings.status)
        if self.transcriber is not None:
            logger.info("%s", self.transcriber.status)
        # Everything imported and built so far lives as long as the process: keep it out of the garbage
        # collector's full passes, which otherwise show up as the slowest per-message latencies.
        gc.collect()
        gc.freeze()

    async def _on_update(self, msg: IncomingMessage) -> None:
        self.metrics.arrivals.mark((msg.chat.platform, msg.chat.chat_id, msg.chat.thread_id))
        await self.pipeline.handle(msg)

    async def _start_metrics_server(self) -> None:
        obs = self.settings.observability
        if obs.metrics_port is None:
            return
        self.metrics_server = MetricsServer(
            self.metrics, self.store.ping, host=obs.metrics_host, port=obs.metrics_port
        )
        await self.metrics_server.start()

    async def _start_dashboard(self) -> None:
        board = self.settings.dashboard
        if board.port is None:
            return
        built = build_dashboard(
            board,
            store=self.store,
            admin=self.admin,
            budget=self.budget,
            timezone=self.budget.caps.timezone,
            clock=self.now,
            reminder_timezone=self.settings.reminders.default_timezone,
            worker=self.settings.fleet.worker_name or default_worker_name(),
        )
        self.dashboard = DashboardServer(built, host=board.host, port=board.port)
        await self.dashboard.start()

    def _reminder_handlers(self) -> dict[str, commands.Handler]:
        settings = self.settings.reminders
        if not settings.enabled:
            return {}
        return ReminderHandlers(self.store, settings.default_timezone, self.now).handlers()

    def _start_scheduler(self) -> None:
        sched = self.settings.scheduler
        if not sched.enabled:
            return
        worker = self.settings.fleet.worker_name or default_worker_name()
        self.scheduler = JobScheduler(
            JobLocks(self.store), observe=self.metrics.observe_job, runs=JobRunLog(self.store, worker=worker)
        )
        jobs = standard_jobs(
            store=self.store,
            locks=self.locks,
            compactor=self.compactor,
            make_engine=self.kit.engine,
            policy=self.policy,
            retention_days=sched.archive_retention_days,
            keep_alive=self._keep_caches_warm if self.settings.prompt_caching.keeps_alive else None,
            budget=self.budget,
            answer_after_reset=self._answer_held if self.settings.limits.answer_after_reset else None,
            clock=self.now,
            calibration=self.calibration,
            reminders=(self.reminders.tick, every) if (every := reminders_every(self.settings)) else None,
        )
        for job in jobs:
            self.scheduler.add(job)
        self.scheduler.start()
        self.metrics.track_jobs(self.scheduler.job_names, self.scheduler.overdue)

    async def _answer_held(self) -> None:
        started = await recovery.answer_held(
            store=self.store, platforms=self.platforms, schedule=self.tasks.schedule
        )
        logger.debug("budget reset: %d chat(s) with unanswered messages looked at", started)

    async def _keep_caches_warm(self) -> None:
        await self.keeper.run(self.now())

    async def recover_unanswered(self) -> None:
        """Answer turns a crash left unanswered; tell users when they are too old to answer now."""
        await recovery.recover_unanswered(
            store=self.store,
            platforms=self.platforms,
            schedule=self.tasks.schedule,
            max_age=timedelta(seconds=self.settings.limits.unanswered_max_age_s),
            clock=self.now,
        )

    async def stop(self) -> None:
        """Stop within `shutdown_timeout_s`, handing back what cannot finish in time.

        Running turns get most of the time to finish while the adapters can still deliver their
        replies (a reply sent after its adapter stopped is lost, and its message is already marked
        answered); no new turn starts. Turns still running then are cancelled: their messages stay
        unanswered and are answered after the restart. Then the adapters stop receiving, give
        messages being stored a moment, and confirm what was stored.
        """
        gc.unfreeze()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.shutdown_timeout_s - ADAPTER_STOP_RESERVE_S
        self.tasks.stop_new_turns()
        if self.scheduler is not None:
            await self.scheduler.stop(wait_s=max(0.0, deadline - loop.time()))
        await self.tasks.drain(wait_s=max(0.0, deadline - loop.time()))
        self.pipeline.cancel_reactions()
        unfinished = await self.tasks.cancel_turns()
        if unfinished:
            logger.warning(
                "%d turn(s) did not finish before shutdown; their messages are answered after the restart",
                unfinished,
            )
        adapters = list(self.platforms)
        results = await asyncio.gather(*(adapter.stop() for adapter in adapters), return_exceptions=True)
        for adapter, result in zip(adapters, results, strict=True):
            if isinstance(result, BaseException):
                logger.error("error while stopping %s: %r", adapter.name, result)
        await self.outbox.stop()
        if self._spool_task is not None:
            self._spool_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._spool_task
        if self.embeddings is not None:
            await self.embeddings.close()
        if self.transcriber is not None:
            await self.transcriber.close()
        if self.metrics_server is not None:
            await self.metrics_server.stop()
        if self.dashboard is not None:
            await self.dashboard.stop()

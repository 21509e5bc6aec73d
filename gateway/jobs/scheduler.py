"""Runs the background jobs on APScheduler 3 (the only module importing it), one run at a time.

Jobs live in an in-memory job store on every worker; each run first takes the job's lock
(`JobLocks`: a Postgres advisory lock, or a process-local one on SQLite) and skips if another worker
holds it. A failing run is logged by the single EVENT_JOB_ERROR listener and the next run happens on
schedule: no job failure stops the gateway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from gateway.store.job_lock import JobLocks

logger = logging.getLogger(__name__)
# APScheduler's executor logs each failure itself; `_on_event` is the one place that reports them.
logging.getLogger("apscheduler.executors.default").setLevel(logging.CRITICAL)

JobBody = Callable[[], Awaitable[object]]
RunObserver = Callable[[str, str], None]
"""(job name, result) with result one of "ok", "skipped", "error"."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    name: str
    body: JobBody
    every: timedelta
    first_run: datetime | None = None
    """When the first run happens (default: one interval after start)."""


class JobScheduler:
    """Interval jobs with one-at-a-time runs across workers and one error handler."""

    def __init__(
        self,
        locks: JobLocks,
        *,
        misfire_grace: timedelta = timedelta(minutes=5),
        observe: RunObserver | None = None,
    ) -> None:
        self._locks = locks
        self._observe = observe or (lambda _name, _result: None)
        self._running: set[asyncio.Task[object]] = set()
        self._scheduler = AsyncIOScheduler(
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": int(misfire_grace.total_seconds()),
            }
        )
        self._scheduler.add_listener(self._on_event, EVENT_JOB_ERROR | EVENT_JOB_MISSED)
        self._specs: dict[str, JobSpec] = {}

    def add(self, spec: JobSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"job {spec.name!r} is already scheduled")
        self._specs[spec.name] = spec
        self._scheduler.add_job(
            self.run,
            IntervalTrigger(seconds=spec.every.total_seconds()),
            args=[spec.name],
            id=spec.name,
            name=spec.name,
            next_run_time=spec.first_run,
            replace_existing=True,
        )

    @property
    def job_names(self) -> list[str]:
        return sorted(self._specs)

    def start(self) -> None:
        """Start on the running event loop."""
        self._scheduler.start()
        logger.info("scheduler started: %s", ", ".join(self.job_names) or "no jobs")

    async def stop(self, *, wait_s: float = 10.0) -> None:
        """Stop scheduling; let running jobs finish for up to `wait_s`, then cancel them."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        if self._running:
            _, pending = await asyncio.wait(set(self._running), timeout=wait_s)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
                logger.warning("cancelled %d job run(s) still going at shutdown", len(pending))
        # Let the scheduler's shutdown callback run on the loop before the caller closes it.
        await asyncio.sleep(0)

    async def run(self, name: str) -> bool:
        """Run job `name` now if no other run holds its lock; True when it ran. Errors propagate."""
        spec = self._specs[name]
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            async with self._locks.try_hold(name) as held:
                if not held:
                    logger.debug("job %s skipped: another run holds its lock", name)
                    self._observe(name, "skipped")
                    return False
                try:
                    await spec.body()
                except Exception:
                    self._observe(name, "error")
                    raise
                self._observe(name, "ok")
                return True
        finally:
            if task is not None:
                self._running.discard(task)

    def _on_event(self, event: JobExecutionEvent) -> None:
        if event.code == EVENT_JOB_MISSED:
            logger.warning("job %s missed its run at %s", event.job_id, event.scheduled_run_time)
            return
        exc = event.exception
        logger.error(
            "job %s failed: %s: %s",
            event.job_id,
            type(exc).__name__,
            exc,
            exc_info=(type(exc), exc, exc.__traceback__) if exc is not None else None,
        )

"""Runs the background jobs on APScheduler 3 (the only module importing it), one run at a time.

Jobs live in an in-memory job store on every worker; each run first takes the job's lock
(`JobLocks`: a Postgres advisory lock, or a process-local one on SQLite) and skips if another worker
holds it. A failing run is logged by the single EVENT_JOB_ERROR listener and the next run happens on
schedule: no job failure stops the gateway.

The first run comes one interval after start unless the spec names a time (APScheduler 3 adds a job
given `next_run_time=None` as paused, so that argument is only passed when set). `start` logs each job
with its next run; every run that was not skipped is recorded in the fleet's `JobRunLog`, and a
watchdog warns once when a job has not run successfully for `OVERDUE_INTERVALS` of its intervals on
this worker (a run another worker made counts: its lock was held, the job ran).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from gateway.errors import StoreError
from gateway.store.jobs.runs import OVERDUE_INTERVALS, JobRunLog
from gateway.store.locks.job_lock import JobLocks

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


@dataclass(frozen=True, slots=True)
class ScheduledJob:
    """A job as the scheduler holds it: its interval and next run (None: paused)."""

    name: str
    every: timedelta
    next_run: datetime | None

    def line(self) -> str:
        when = self.next_run.isoformat(timespec="seconds") if self.next_run else "PAUSED, will not run"
        return f"job {self.name}: every {interval_text(self.every)}, next run {when}"


def interval_text(every: timedelta) -> str:
    """`5 min`, `1 h`, `0.5 s`: the largest whole unit, seconds when nothing else fits."""
    seconds = every.total_seconds()
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


class JobScheduler:
    """Interval jobs with one-at-a-time runs across workers and one error handler."""

    def __init__(
        self,
        locks: JobLocks,
        *,
        misfire_grace: timedelta = timedelta(minutes=5),
        observe: RunObserver | None = None,
        runs: JobRunLog | None = None,
        watch_every: timedelta | None = None,
    ) -> None:
        """`runs`: where each run is recorded for the fleet; `watch_every`: how often the watchdog looks
        (default: a third of the shortest interval, at most a minute)."""
        self._locks = locks
        self._observe = observe or (lambda _name, _result: None)
        self._runs = runs
        self._watch_every = watch_every
        self._watchdog: asyncio.Task[None] | None = None
        self._started_at = 0.0
        self._last_ran: dict[str, float] = {}
        """Monotonic time of the last run that succeeded here or was held by another worker."""
        self._reported: set[str] = set()
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
        # Passing next_run_time=None would add the job paused; leaving it out means one interval from now.
        first = {} if spec.first_run is None else {"next_run_time": spec.first_run}
        self._scheduler.add_job(
            self.run,
            IntervalTrigger(seconds=spec.every.total_seconds()),
            args=[spec.name],
            id=spec.name,
            name=spec.name,
            replace_existing=True,
            **first,
        )

    @property
    def job_names(self) -> list[str]:
        return sorted(self._specs)

    def jobs(self) -> list[ScheduledJob]:
        """Each job with its interval and next run, by name."""
        out = []
        for name in self.job_names:
            job = self._scheduler.get_job(name)
            next_run = job.next_run_time if job is not None else None
            out.append(ScheduledJob(name, self._specs[name].every, next_run))
        return out

    def start(self) -> None:
        """Start on the running event loop; log each job with its next run and start the watchdog."""
        self._scheduler.start()
        self._started_at = time.monotonic()
        jobs = self.jobs()
        logger.info("scheduler started: %d job(s)", len(jobs))
        for job in jobs:
            (logger.info if job.next_run is not None else logger.error)("%s", job.line())
        if jobs:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch(), name="job-watchdog")

    def overdue(self) -> list[str]:
        """Jobs that have not run for `OVERDUE_INTERVALS` of their intervals (since start if never)."""
        now = time.monotonic()
        late = []
        for name, spec in self._specs.items():
            since = self._last_ran.get(name, self._started_at)
            if self._started_at and now - since > spec.every.total_seconds() * OVERDUE_INTERVALS:
                late.append(name)
        return sorted(late)

    async def _watch(self) -> None:
        shortest = min(spec.every for spec in self._specs.values())
        every = self._watch_every or min(shortest / 3, timedelta(minutes=1))
        while True:
            await asyncio.sleep(every.total_seconds())
            late = set(self.overdue())
            for name in sorted(late - self._reported):
                logger.warning(
                    "job %s has not run for %d of its intervals (every %s): see `doctor` and the log above",
                    name,
                    OVERDUE_INTERVALS,
                    interval_text(self._specs[name].every),
                )
            for name in sorted(self._reported - late):
                logger.info("job %s runs again", name)
            self._reported = late

    async def stop(self, *, wait_s: float = 10.0) -> None:
        """Stop scheduling; let running jobs finish for up to `wait_s`, then cancel them."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            await asyncio.gather(self._watchdog, return_exceptions=True)
            self._watchdog = None
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
                    self._last_ran[name] = time.monotonic()
                    return False
                try:
                    await spec.body()
                except Exception as exc:
                    self._observe(name, "error")
                    await self._record(spec, "error", f"{type(exc).__name__}: {exc}")
                    raise
                self._observe(name, "ok")
                self._last_ran[name] = time.monotonic()
                await self._record(spec, "ok", None)
                return True
        finally:
            if task is not None:
                self._running.discard(task)

    async def _record(self, spec: JobSpec, result: str, error: str | None) -> None:
        if self._runs is None:
            return
        try:
            await self._runs.record(spec.name, every=spec.every, result=result, error=error)
        except StoreError as exc:
            logger.error("job %s: could not record its %s run: %s", spec.name, result, exc)

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

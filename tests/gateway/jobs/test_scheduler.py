"""The scheduler: one run of a job at a time across workers, and failures logged without stopping it."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest

from gateway.jobs.scheduler import JobScheduler, JobSpec
from gateway.store import Store
from gateway.store.jobs.runs import JobRunLog
from gateway.store.locks.job_lock import JobLocks


async def test_two_workers_racing_for_one_job_run_it_once(pg_url: str) -> None:
    worker_a, worker_b = await Store.open(pg_url), await Store.open(pg_url)
    runs: list[str] = []
    release = asyncio.Event()
    inside = asyncio.Event()

    def body(worker: str):
        async def run() -> None:
            runs.append(worker)
            inside.set()
            await release.wait()

        return run

    sched_a = JobScheduler(JobLocks(worker_a))
    sched_b = JobScheduler(JobLocks(worker_b))
    sched_a.add(JobSpec("rollup", body("a"), timedelta(hours=1)))
    sched_b.add(JobSpec("rollup", body("b"), timedelta(hours=1)))
    try:
        first = asyncio.create_task(sched_a.run("rollup"))
        await asyncio.wait_for(inside.wait(), 5)
        assert await sched_b.run("rollup") is False  # worker b finds the job taken and skips
        release.set()
        assert await first is True
        assert runs == ["a"]
        # Once the run ended, the lock is free again for any worker.
        assert await sched_b.run("rollup") is True
        assert runs == ["a", "b"]
    finally:
        await worker_a.close()
        await worker_b.close()


async def test_concurrent_runs_in_one_process_are_serialised(sqlite_url: str) -> None:
    store = await Store.open(sqlite_url)
    results: list[str] = []
    sched = JobScheduler(JobLocks(store), observe=lambda name, result: results.append(result))
    gate = asyncio.Event()

    async def slow() -> None:
        await gate.wait()

    sched.add(JobSpec("slow", slow, timedelta(hours=1)))
    try:
        running = asyncio.create_task(sched.run("slow"))
        await asyncio.sleep(0.05)
        assert await sched.run("slow") is False
        gate.set()
        assert await running is True
        assert results == ["skipped", "ok"]
    finally:
        await store.close()


async def test_a_failing_job_is_logged_and_the_scheduler_keeps_going(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = await Store.open(sqlite_url)
    results: list[tuple[str, str]] = []
    sched = JobScheduler(JobLocks(store), observe=lambda name, result: results.append((name, result)))
    healthy_runs = 0
    two_runs = asyncio.Event()

    async def broken() -> None:
        raise RuntimeError("summary backend exploded")

    async def healthy() -> None:
        nonlocal healthy_runs
        healthy_runs += 1
        if healthy_runs >= 2:
            two_runs.set()

    start = datetime.now(UTC)
    sched.add(JobSpec("broken", broken, timedelta(seconds=0.2), first_run=start))
    sched.add(JobSpec("healthy", healthy, timedelta(seconds=0.2), first_run=start))
    caplog.set_level(logging.ERROR, logger="gateway.jobs.scheduler")
    sched.start()
    try:
        await asyncio.wait_for(two_runs.wait(), 5)
        await asyncio.sleep(0.3)
    finally:
        await sched.stop()
        await store.close()
    failures = [
        r for r in caplog.records if r.name == "gateway.jobs.scheduler" and "job broken failed" in r.message
    ]
    assert failures, caplog.text
    assert "summary backend exploded" in failures[0].getMessage()
    assert failures[0].exc_info is not None
    assert results.count(("broken", "error")) >= 2  # it failed, and ran again on schedule
    assert ("healthy", "ok") in results


async def test_a_job_without_a_first_run_time_runs_one_interval_after_start(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = await Store.open(sqlite_url)
    ran = asyncio.Event()
    started = 0.0

    async def body() -> None:
        ran.set()

    sched = JobScheduler(JobLocks(store), runs=JobRunLog(store, worker="w1"))
    sched.add(JobSpec("rollup", body, timedelta(seconds=0.3)))
    caplog.set_level(logging.INFO, logger="gateway.jobs.scheduler")
    loop = asyncio.get_running_loop()
    sched.start()
    started = loop.time()
    try:
        (job,) = sched.jobs()
        assert job.next_run is not None  # scheduled, not paused
        await asyncio.wait_for(ran.wait(), 5)
        assert loop.time() - started >= 0.25  # not at once: one interval after start
        for _ in range(50):
            runs = await JobRunLog(store, worker="doctor").all()
            if "rollup" in runs:
                break
            await asyncio.sleep(0.05)
    finally:
        await sched.stop()
        await store.close()
    assert runs["rollup"].last_result == "ok"
    assert runs["rollup"].worker == "w1"
    assert "job rollup: every 0.3 s, next run 20" in caplog.text


async def test_a_job_that_keeps_failing_is_reported_overdue(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = await Store.open(sqlite_url)
    healthy_ran = asyncio.Event()

    async def broken() -> None:
        raise RuntimeError("database on fire")

    async def healthy() -> None:
        healthy_ran.set()

    sched = JobScheduler(
        JobLocks(store), runs=JobRunLog(store, worker="w1"), watch_every=timedelta(seconds=0.05)
    )
    sched.add(JobSpec("broken", broken, timedelta(seconds=0.1)))
    sched.add(JobSpec("healthy", healthy, timedelta(seconds=0.1)))
    caplog.set_level(logging.INFO, logger="gateway.jobs.scheduler")
    sched.start()
    try:
        for _ in range(100):
            if "job broken has not run for 3 of its intervals" in caplog.text:
                break
            await asyncio.sleep(0.05)
        assert sched.overdue() == ["broken"]
        runs = await JobRunLog(store, worker="doctor").all()
    finally:
        await sched.stop()
        await store.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("job broken has not run" in w for w in warnings) == 1  # once, not at every look
    assert not any("job healthy" in w for w in warnings)
    broken_run = runs["broken"]
    assert broken_run.last_result == "error"
    assert broken_run.last_ok_at is None
    assert "database on fire" in (broken_run.last_error or "")
    assert broken_run.runs >= 2
    # Stored intervals are whole seconds: never succeeded, so overdue three intervals after its first run.
    assert broken_run.overdue(broken_run.first_run_at + timedelta(seconds=3.5))
    assert not runs["healthy"].overdue(runs["healthy"].last_run_at + timedelta(seconds=2))
